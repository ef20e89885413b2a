#include "tuner/export/export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <utility>

#include "probes/predict.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/export/kernel_export.h"
#include "tuner/launch/program_identity.h"
#include "tuner/storage/storage_url.h"
#include "tuner/study/templates.h"

namespace tune::tuner {
namespace {

// Stand-ins put into the template values, then turned into shell expansions by shell_word().
// The unit separator cannot appear in a study file's YAML strings by accident.
constexpr std::string_view k_out_mark = "\x1ftune-out\x1f";
constexpr std::string_view k_nproc_mark = "\x1ftune-nproc\x1f";

// The one list of export formats, in the order --help and the error name them.
constexpr std::array<std::pair<std::string_view, ExportFormat>, 6> k_export_formats = {{
    {"bash", ExportFormat::bash},
    {"slurm", ExportFormat::slurm},
    {"pbs", ExportFormat::pbs},
    {"env", ExportFormat::env},
    {"mpirun", ExportFormat::mpirun},
    {"slurm-array", ExportFormat::slurm_array},
}};

// One shell word for an expanded template: literal pieces quoted, the marks replaced by
// `out_expr` (the output folder) and "$(nproc)".
std::string shell_word(const std::string& text, const std::string& out_expr,
                       bool first_word = false) {
  std::string out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto a = text.find(k_out_mark, pos);
    const auto b = text.find(k_nproc_mark, pos);
    const auto next = std::min(a, b);
    const std::string literal =
        text.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!literal.empty()) {
      // A first word holding '=' would be read as an assignment: quote it regardless.
      const bool force = first_word && out.empty() && literal.find('=') != std::string::npos;
      out += bash_quote(literal, force);
    }
    if (next == std::string::npos) break;
    if (next == a) {
      out += out_expr;
      pos = a + k_out_mark.size();
    } else {
      out += "\"$(nproc)\"";
      pos = b + k_nproc_mark.size();
    }
  }
  return out.empty() ? "''" : out;
}

// What stands for a secret variable of the study's env (PGPASSWORD): its value never goes into
// an export; the script's user gives it, as libpq would take it anyway.
std::string secret_env_note(const std::string& name) {
  return "# " + name +
         " is a secret and not written here: set it in the environment (or use ~/.pgpass)\n";
}

bool mentions_out(const std::string& text) { return text.find(k_out_mark) != std::string::npos; }

// A name a shell function may be handed safely as a quoted word: printable, no control bytes.
bool is_plain_program_name(const std::string& name) {
  return !name.empty() && !has_control_char(name) && name.size() < 256;
}

// The trial's external parameter values, every parameter of the study's space required.
Result<std::map<std::string, search::ParamValue>> trial_params(const StudySpec& spec,
                                                               const search::FrozenTrial& trial) {
  std::map<std::string, search::ParamValue> params;
  for (const auto& [name, dist] : spec.space) {
    const auto p = trial.params.find(name);
    if (p == trial.params.end()) {
      return std::unexpected(fmt::format(
          "trial #{} has no value for parameter '{}' of {} (was the study file changed after "
          "the trial ran?); pick another with --trial",
          trial.number, name, spec.file));
    }
    const auto d = trial.distributions.find(name);
    params[name] =
        search::to_external(d != trial.distributions.end() ? d->second : dist, p->second);
  }
  return params;
}

// The trial's launch, rendered once: the script's command and environment and the job's shape
// both come from it.
struct Rendered {
  RenderedLaunch launch;
  LaunchRequest request;  // launch.request(): argv, env_set, env_unset with the marks in place
  TemplateValues values;  // the trial's placeholders, {trial_dir} the output mark
};

Result<Rendered> render_request(const StudySpec& spec, const search::FrozenTrial& trial,
                                const ExportOptions& options, bool allow_run_as_root) {
  auto params = trial_params(spec, trial);
  if (!params) return std::unexpected(params.error());
  const std::string trainer = options.trainer.empty() ? bundled_trainer_path() : options.trainer;
  auto values =
      trial_template_values(spec, *params, std::string(k_out_mark), trial.number, trainer);
  values["nproc"] = std::string(k_nproc_mark);
  // Scripts get no --allow-run-as-root: they set Open MPI's variables for that only when run as
  // root. The one-line mpirun format has no such place: it carries the flag when asked.
  // The study file already refuses other names; checked again because a name is written into
  // `export NAME=`, `unset NAME` and comment lines, where quoting cannot make it harmless.
  for (const auto& [name, text] : spec.env) {
    if (!is_env_var_name(name))
      return std::unexpected(fmt::format("{}: env.{}: not a valid environment variable name",
                                         spec.file, one_line(name)));
  }
  auto launch = render_launch(spec, values, allow_run_as_root);
  if (!launch) return std::unexpected(launch.error());
  Rendered r{std::move(*launch), {}, values};
  r.request = r.launch.request();
  return r;
}

std::string tuned_on(const search::FrozenTrial& trial);
std::string comment_lines(const std::string& text, const std::string& first,
                          const std::string& rest);

std::string header(const StudySpec& spec, const search::FrozenTrial& trial,
                   const ExportOptions& options) {
  std::string params;
  for (const auto& [name, dist] : spec.space) {
    const auto p = trial.params.find(name);
    if (p == trial.params.end()) continue;
    if (!params.empty()) params += ' ';
    params += name + '=' + search::param_value_to_string(search::to_external(dist, p->second));
  }
  std::string h = fmt::format("# Exported by `tune export` from study '{}', trial #{}.\n",
                              one_line(spec.name), trial.number);
  for (const auto& note : options.notes) h += comment_lines(one_line(note), "#", "#");
  if (!options.measured.empty()) h += "# Measured: " + one_line(options.measured) + "\n";
  if (!params.empty()) h += "# Parameters: " + one_line(params) + "\n";
  if (!spec.file.empty())
    h += "# Study file: " + one_line(std::filesystem::absolute(spec.file).string()) + "\n";
  if (!options.storage.empty())
    h += "# Database: " + one_line(redact_storage_url(options.storage)) + "\n";
  h += "# Tuned on: " + tuned_on(trial) + "\n";
  return h;
}

// A command line, continued over several lines once it gets long.
std::string command_line(const std::vector<std::string>& argv, const std::string& out_expr,
                         const std::string& indent) {
  std::string out, line;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string word = shell_word(argv[i], out_expr, i == 0);
    if (!line.empty() && line.size() + word.size() > 88) {
      out += line + " \\\n";
      line = indent;
    } else if (!line.empty()) {
      line += ' ';
    }
    line += word;
  }
  return out + line;
}

std::string job_name(const std::string& study, std::size_t limit) {
  return plain_name("tune-" + study, limit);
}

// Lines that warn, on the node the script runs on, when a program the trial found in PATH (a name
// without '/') is another one there, or an interpreter of another version: the setting was
// measured with the programs the trial ran, so the script names them and checks.
std::string program_checks(const search::FrozenTrial& trial) {
  const auto stored = trial.user_attrs.find(k_attr_programs);
  if (stored == trial.user_attrs.end()) return "";
  std::string s;
  for (const auto& p : programs_from_json(*stored)) {
    if (p.name.contains('/') || p.path.empty() || !is_plain_program_name(p.name)) continue;
    if (s.empty()) {
      s = "\n# The trial found these programs in PATH; warn when this node finds others.\n"
          "tune_check() {  # NAME PATH [VERSION]\n"
          "  found=$(command -v -- \"$1\" || true)\n"
          "  if [ \"$found\" != \"$2\" ]; then\n"
          "    echo \"warning: $1 is '${found:-not found}' here; the tuned trial ran $2\" >&2\n"
          "  elif [ -n \"${3:-}\" ] && [ \"$(\"$2\" --version 2>&1 | tail -n 1)\" != \"$3\" ]; "
          "then\n"
          "    echo \"warning: $2 is not $3 here, as it was in the tuned trial\" >&2\n"
          "  fi\n"
          "}\n";
    }
    s += "tune_check " + bash_quote(p.name) + " " + bash_quote(p.path);
    if (!p.version.empty()) s += " " + bash_quote(p.version);
    s += "\n";
  }
  return s;
}

// --- what a batch script asks of the scheduler ----------------------------------------------

// The trial's measured wall time and its re-runs': the longest and how many runs, none measured
// = nullopt.
struct MeasuredTime {
  double longest_s = 0;
  int runs = 0;
};

std::optional<MeasuredTime> measured_time(const search::FrozenTrial& trial,
                                          const ExportOptions& options) {
  MeasuredTime m;
  const auto add = [&](double s) {
    if (!(s >= 0)) return;  // NaN or negative: not a time
    m.longest_s = std::max(m.longest_s, s);
    ++m.runs;
  };
  if (const auto it = trial.user_attrs.find(k_attr_wall_time);
      it != trial.user_attrs.end() && it->is_number())
    add(it->get<double>());
  for (double s : options.rerun_wall_times) add(s);
  if (m.runs == 0) return std::nullopt;
  return m;
}

// The time limit line's value and the comment that says where it came from; nullopt = no limit
// written (nothing measured, none given): the scheduler's default stands.
struct TimeLimit {
  int seconds = 0;
  std::string why;  // comment lines, each "# ...\n"
};

std::optional<TimeLimit> time_limit(const search::FrozenTrial& trial, const ExportOptions& options,
                                    const std::string& override_how) {
  if (options.walltime_s) {
    const int seconds = static_cast<int>(std::ceil(std::max(1.0, *options.walltime_s)));
    return TimeLimit{seconds, "# Time limit " + format_walltime(seconds) +
                                  ": given to tune export (--walltime).\n"};
  }
  const auto m = measured_time(trial, options);
  if (!m) return std::nullopt;
  const int seconds = walltime_from_measured(m->longest_s);
  std::string why = fmt::format(
      "# Time limit {}: twice the trial's {} ({:.1f} s{}), at least 5 minutes more, rounded up "
      "to minutes.\n"
      "# The trial may have been a shortened run (fewer steps than a real one): a full run may "
      "need longer;\n"
      "# give it with {} or tune export --walltime.\n",
      format_walltime(seconds), m->runs > 1 ? "longest run" : "run", m->longest_s,
      m->runs > 1 ? fmt::format(", the longest of {} runs", m->runs) : "", override_how);
  return TimeLimit{seconds, std::move(why)};
}

// Threads per rank, and the CPUs per task a batch script asks for them.
//
// Where the threads per rank come from, first that applies:
//  - step: with launch.slurm, the step's --cpus-per-task when it is a number (Slurm granted it).
//  - prediction: the trial's stored prediction (k_attr_probe_prediction): the busy threads of a
//    rank, each pool's share as the probes counted it for this trial from the knob catalog and
//    the study's `knobs:`, so a pool sized by the program's own flag (`--threads={t}`) counts; the
//    rank with the most, the main thread included and the runtimes' own threads (no knob's) not.
//  - variable names: the trial has no prediction (probes off): the largest plain positive number
//    among the trial's variables whose name holds "THREADS" (OMP_NUM_THREADS, MKL_NUM_THREADS,
//    OPENBLAS_NUM_THREADS, OPENCV_FOR_THREADS_NUM, ...). The largest, not the sum: a rank's
//    pools take turns (OpenMP regions, then BLAS calls), as the prediction assumes too.
// nullopt: none of them applies, and the scheduler's default (one CPU per task) stands.
//
// The CPUs asked never exceed the node the trial ran on (k_attr_machine): ranks per node x CPUs
// per task <= its PUs. A winner that oversubscribed its node on purpose (2 ranks x 2 OpenMP
// threads on 2 cores) is asked floor(PUs / ranks per node) CPUs, at least 1: what it had, and
// what a scheduler of that very machine can grant (more stays pending forever).
struct ThreadsPerRank {
  enum class Basis { step, prediction, variable_names };
  Basis basis = Basis::variable_names;
  int threads = 0;         // the threads per rank the trial ran (busy at once)
  int cpus = 0;            // what the script asks per task: `threads`, capped to the tuned node
  std::string source;      // "OMP_NUM_THREADS=4", "main 1, openmp 1 (OMP_NUM_THREADS=2)"
  std::optional<int> omp;  // OMP_NUM_THREADS, when the trial set it to a plain number
  std::string fit;  // comment lines: how the threads relate to the tuned node's cores; "" = none
};

// The busy threads per rank of the trial's stored prediction, and each pool's share; nullopt
// when the trial has none (probes off, or a prediction without ranks). A prediction that is there
// but not as the probes write it is an error naming the attribute.
struct PredictedThreads {
  int threads = 0;
  std::string pools;  // "main 1, openmp 1 (OMP_NUM_THREADS=2)"
};

Result<std::optional<PredictedThreads>> predicted_threads(const search::FrozenTrial& trial) {
  const auto it = trial.system_attrs.find(k_attr_probe_prediction);
  if (it == trial.system_attrs.end() || it->is_null()) return std::nullopt;
  const auto bad = [&](const std::string& key, const std::string& why) {
    return std::unexpected(fmt::format(
        "trial #{}: system attr '{}{}' {}, not as tune's probes store it; pick another trial "
        "with --trial",
        trial.number, k_attr_probe_prediction, key, why));
  };
  if (!it->is_object()) return bad("", "is not a JSON object");
  if (const auto v = it->find("schema_version");
      v != it->end() && *v != probes::k_prediction_schema_version)
    return bad(".schema_version", fmt::format("is {}, this tune reads {}", one_line(v->dump()),
                                              probes::k_prediction_schema_version));
  const auto ranks = it->find("ranks");
  if (ranks == it->end()) return std::nullopt;
  if (!ranks->is_array()) return bad(".ranks", "is not a list");
  std::optional<PredictedThreads> most;
  for (std::size_t r = 0; r < ranks->size(); ++r) {
    const auto& rank = (*ranks)[r];
    const auto groups = rank.is_object() ? rank.find("groups") : rank.end();
    if (!rank.is_object() || groups == rank.end() || !groups->is_array())
      return bad(fmt::format(".ranks[{}].groups", r), "is not a list");
    PredictedThreads p;
    for (std::size_t g = 0; g < groups->size(); ++g) {
      const auto& group = (*groups)[g];
      const auto key = fmt::format(".ranks[{}].groups[{}]", r, g);
      if (!group.is_object() || !group.contains("name") || !group["name"].is_string())
        return bad(key + ".name", "is not a string");
      if (!group.contains("busy") || !group["busy"].is_number_integer() ||
          group["busy"].get<std::int64_t>() < 0 || group["busy"].get<std::int64_t>() > 1 << 20)
        return bad(key + ".busy", "is not a whole number of threads");
      const auto name = group["name"].get<std::string>();
      const int busy = group["busy"].get<int>();
      // The runtimes' own threads are no pool a CPU is asked for (the prediction's verdict
      // leaves them out too).
      if (busy == 0 || name == probes::k_runtime_group) continue;
      p.threads += busy;
      if (!p.pools.empty()) p.pools += ", ";
      p.pools += one_line(name) + " " + std::to_string(busy);
      const auto detail = group.find("detail");
      if (name != "main" && detail != group.end() && detail->is_string() &&
          !detail->get<std::string>().empty())
        p.pools += " (" + one_line(detail->get<std::string>()) + ")";
    }
    if (!most || p.threads > most->threads) most = std::move(p);
  }
  if (most && most->threads < 1) return std::nullopt;
  return most;
}

// The threads per rank by the last rule: the trial's variables named *THREADS*.
std::optional<ThreadsPerRank> threads_from_variable_names(const Rendered& r) {
  std::optional<ThreadsPerRank> best;
  for (const auto& [name, value] : r.request.env_set) {
    const auto n = positive_int(value);
    if (!n || !name.contains("THREADS")) continue;
    if (!best || *n > best->threads) {
      if (!best) best.emplace();
      best->threads = *n;
      best->source = name + "=" + std::to_string(*n);
    }
  }
  return best;
}

// The machine the trial ran on (k_attr_machine), when the runner recorded it.
struct TunedMachine {
  std::string host;
  int packages = 0, numa_nodes = 0, cores = 0, pus = 0;
};

std::optional<TunedMachine> tuned_machine(const search::FrozenTrial& trial) {
  const auto it = trial.system_attrs.find(k_attr_machine);
  if (it == trial.system_attrs.end() || !it->is_object()) return std::nullopt;
  const auto count = [&](const char* key) {
    const auto v = it->find(key);
    return v != it->end() && v->is_number_integer() ? v->get<int>() : 0;
  };
  TunedMachine m;
  const auto host = it->find("host");
  if (host != it->end() && host->is_string()) m.host = host->get<std::string>();
  m.packages = count("packages");
  m.numa_nodes = count("numa_nodes");
  m.cores = count("cores");
  m.pus = count("pus");
  if (m.cores <= 0 || m.pus <= 0) return std::nullopt;
  return m;
}

std::string machine_text(const TunedMachine& m) {
  return fmt::format("{}: {}, {}, {}, {}", m.host.empty() ? "unknown host" : one_line(m.host),
                     plural(m.packages, "package", "packages"),
                     plural(m.numa_nodes, "NUMA node", "NUMA nodes"),
                     plural(m.cores, "core", "cores"), plural(m.pus, "PU", "PUs"));
}

// The tuned host's name inside a double-quoted echo: only a name of safe characters is written.
std::string host_word(const TunedMachine& m) {
  if (m.host.empty()) return "an unknown host";
  return bash_quote(m.host) == m.host ? m.host : "another host";
}

// Lines that warn when the node the script runs on has other cores or PUs than the one tuned on:
// the thread counts and binding fit that machine. nproc --all and lscpu's core list are on every
// Linux; a node without lscpu is compared by PUs alone.
std::string machine_check(const search::FrozenTrial& trial) {
  const auto m = tuned_machine(trial);
  if (!m) return "";
  return fmt::format(
      "\n# The setting was tuned on {}; warn when this node differs.\n"
      "tune_pus=$(nproc --all 2>/dev/null || getconf _NPROCESSORS_ONLN)\n"
      "tune_cores=$({{ lscpu -p=core,socket 2>/dev/null || true; }} | {{ grep -v '^#' || true; }} "
      "| sort -u | wc -l)\n"
      "if [ \"$tune_pus\" != {} ] || {{ [ \"$tune_cores\" -gt 0 ] && [ \"$tune_cores\" != {} ]; "
      "}}; then\n"
      "  echo \"warning: this node has $tune_cores cores and $tune_pus PUs; the setting was tuned "
      "on {} cores and {} PUs ({}): check the thread counts, or tune again here\" >&2\n"
      "fi\n",
      machine_text(*m), m->pus, m->cores, m->cores, m->pus, host_word(*m));
}

// The header's "Tuned on:" text: the machine, or why it is not known.
std::string tuned_on(const search::FrozenTrial& trial) {
  if (const auto m = tuned_machine(trial)) return machine_text(*m);
  return "unknown (the trial did not record its machine: tune before it did, or hwloc failed)";
}

// `text` as comment lines of at most ~96 columns: the first starts with `first`, the rest with
// `rest` ("#  ", "#    "), each word after a space.
std::string comment_lines(const std::string& text, const std::string& first,
                          const std::string& rest) {
  std::string out, line = first;
  bool line_has_words = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (line_has_words && line.size() + 1 + word.size() > 96) {
      out += line + "\n";
      line = rest;
      line_has_words = false;
    }
    line += ' ' + word;
    line_has_words = true;
    pos = end + 1;
  }
  return out + line + "\n";
}

// "2x", "1.5x": how many times the PUs the busy threads were.
std::string times(int busy, int pus) {
  return fmt::format("{:.3g}x", static_cast<double>(busy) / std::max(1, pus));
}

// Threads per rank by the rules above, with the CPUs asked capped to the tuned node (`shape`: the
// job's ranks per node) and the header's lines on how they relate to its cores. `asked` spells
// the request for those lines from the CPUs per rank ("--cpus-per-task=1", "ncpus=2").
Result<std::optional<ThreadsPerRank>> threads_per_rank(
    const Rendered& r, const search::FrozenTrial& trial, const JobShape& shape,
    const std::function<std::string(int cpus_per_rank)>& asked) {
  std::optional<int> omp;
  if (const auto it = r.request.env_set.find("OMP_NUM_THREADS"); it != r.request.env_set.end())
    omp = positive_int(it->second);
  std::optional<ThreadsPerRank> t;
  if (const auto step_cpus = r.launch.kind->cpus_per_task()) {
    if (auto n = positive_int(*step_cpus)) {
      t = ThreadsPerRank{ThreadsPerRank::Basis::step, *n, *n, "", omp, ""};
      t->source = "the step's own --cpus-per-task=" + std::to_string(*n);
      return t;  // what Slurm granted the trial's steps: no cap to judge
    }
  }
  auto predicted = predicted_threads(trial);
  if (!predicted) return std::unexpected(predicted.error());
  if (*predicted) {
    t = ThreadsPerRank{
        ThreadsPerRank::Basis::prediction, (*predicted)->threads, 0, (*predicted)->pools, omp, ""};
  } else if ((t = threads_from_variable_names(r))) {
    t->basis = ThreadsPerRank::Basis::variable_names;
    t->omp = omp;
  } else {
    return t;
  }
  t->cpus = t->threads;
  const auto m = tuned_machine(trial);
  if (!m) {
    t->fit =
        "# Not checked against the node it was tuned on: the trial did not record its machine.\n";
    return t;
  }
  const int per_node = std::max(1, shape.tasks_per_node.value_or(1));
  const int busy = per_node * t->threads;
  const std::string on = m->pus == m->cores ? plural(m->cores, "core", "cores")
                                            : plural(m->cores, "core", "cores") + " (" +
                                                  plural(m->pus, "PU", "PUs") + ")";
  const std::string ran =
      fmt::format("The winner ran {} x {} on {}", plural(per_node, "rank", "ranks"),
                  plural(t->threads, "thread", "threads"), on);
  if (busy <= m->pus) {
    t->fit = fmt::format("# {}: {} of its {} busy, as {} asks.\n", ran, busy,
                         plural(m->pus, "PU", "PUs"), asked(t->cpus));
    return t;
  }
  t->cpus = std::max(1, m->pus / per_node);
  t->fit = fmt::format("# {} ({} oversubscribed); {} asks for what it had", ran,
                       times(busy, m->pus), asked(t->cpus));
  t->fit += per_node > m->pus ? fmt::format(" (its {} ranks alone outnumber the {}).\n", per_node,
                                            plural(m->pus, "PU", "PUs"))
                              : ".\n";
  return t;
}

// The header's lines on the CPUs per task: how many (`what`: "CPUs per task: 1"), from where, how
// they fit the tuned node.
std::string cpus_note(const ThreadsPerRank& t, const std::string& what) {
  std::string s;
  switch (t.basis) {
    case ThreadsPerRank::Basis::step:
      s = fmt::format("# {}, {} (launch.slurm).\n", what, t.source);
      break;
    case ThreadsPerRank::Basis::prediction:
      s = comment_lines(
          fmt::format("{}; the trial's busy threads per rank, {}, from the probes' prediction "
                      "for it: {}.",
                      what, t.threads, t.source),
          "#", "#  ");
      break;
    case ThreadsPerRank::Basis::variable_names:
      s = comment_lines(
          fmt::format("{}; the largest thread pool of a rank ({}), read from the trial's "
                      "variables named *THREADS*: the trial has no prediction (probes off).",
                      what, t.source),
          "#", "#  ");
      break;
  }
  return s + t.fit;
}

// Flags the study needed on its own machine and a cluster may not want: kept, so the script
// runs what the trial ran, and named in a comment so nobody submits them unawares.
std::string development_flag_notes(const Rendered& r) {
  std::vector<std::string> notes;
  if (r.launch.kind->oversubscribes())
    notes.push_back(
        "--oversubscribe: lets more ranks start than the node has slots, as the study needed "
        "on its development machine; in an allocation it hides a job shape that does not fit");
  for (const auto& [key, value] : r.launch.kind->mca()) {
    if (key == "pml" && value.contains("cm"))
      notes.push_back("--mca pml " + one_line(value) +
                      ": turns off the cm PML (PSM/OFI), a workaround on the study's machine; "
                      "on a cluster that PML may be the fast interconnect");
    else if (key.starts_with("btl_tcp_if") || key.starts_with("oob_tcp_if"))
      notes.push_back("--mca " + one_line(key) + " " + one_line(value) +
                      ": names the study machine's network interfaces, which a cluster's nodes "
                      "may not have");
    else if (key.starts_with("plm_rsh"))
      notes.push_back("--mca " + one_line(key) +
                      ": how the study's mpirun reached other hosts; inside an allocation mpirun "
                      "starts its daemons through the scheduler");
    else if (key == "btl")
      notes.push_back("--mca btl " + one_line(value) +
                      ": the transports the study's machine used; a cluster's fabric may need "
                      "others");
  }
  if (notes.empty()) return "";
  std::string s =
      "\n# Kept from the study, which ran on a development machine; they may not be wanted on a "
      "cluster:\n";
  for (const auto& n : notes) s += comment_lines(n + ".", "#  ", "#    ");
  return s +
         "# They are part of what was measured; remove them from the command if they do not "
         "apply here.\n";
}

// The srun flags that match the trial's mpirun binding, for the comment that says why the
// script keeps mpirun.
std::string srun_equivalent(const RenderedMpirun& m, const JobShape& shape,
                            const std::optional<ThreadsPerRank>& threads) {
  std::string s = fmt::format("srun --mpi=pmix --ntasks={}", shape.total_tasks);
  if (shape.tasks_per_node) s += fmt::format(" --ntasks-per-node={}", *shape.tasks_per_node);
  if (threads) s += fmt::format(" --cpus-per-task={}", threads->cpus);
  if (m.bind_to) {
    const std::string how = m.bind_to->substr(0, m.bind_to->find(':'));
    const std::map<std::string, std::string> k_bind = {
        {"core", "cores"},     {"hwthread", "threads"}, {"none", "none"},
        {"socket", "sockets"}, {"package", "sockets"},  {"numa", "ldoms"}};
    if (const auto it = k_bind.find(how); it != k_bind.end()) s += " --cpu-bind=" + it->second;
  }
  if (m.map_by) {
    const std::string how = m.map_by->substr(0, m.map_by->find(':'));
    if (how == "node")
      s += " --distribution=cyclic";
    else if (how == "core" || how == "slot" || how == "hwthread")
      s += " --distribution=block";
  }
  return s + " ...";
}

// Slurm: why the job starts with the study's mpirun, not srun.
std::string launcher_note(const StudySpec& spec, const Rendered& r, const JobShape& shape,
                          const std::optional<ThreadsPerRank>& threads) {
  const RenderedMpirun* mpirun = r.launch.kind->mpirun();
  if (mpirun == nullptr) return "";
  const RenderedMpirun& m = *mpirun;
  std::string binding;
  if (m.bind_to) binding += " --bind-to " + one_line(*m.bind_to);
  if (m.map_by) binding += " --map-by " + one_line(*m.map_by);
  (void)spec;
  return "\n" +
         comment_lines(
             "Started with the study's mpirun, not srun: inside the allocation Open MPI's mpirun "
             "reads Slurm's nodes and slots and starts its daemons through Slurm, and the "
             "trial's binding" +
                 (binding.empty() ? std::string(" (mpirun's default)")
                                  : " (" + binding.substr(1) + ")") +
                 " stays word for word what was measured. srun needs --mpi=pmix with Debian's "
                 "Open MPI (plain srun fails) and a translation of the binding; the matching "
                 "line would be:",
             "#", "#") +
         "#   " + one_line(srun_equivalent(m, shape, threads)) + "\n";
}

// Slurm: the OpenMP pool and the CPUs each task gets agree; warn when the allocation differs.
std::string threads_check(const std::optional<ThreadsPerRank>& threads) {
  if (!threads || !threads->omp) return "";
  const int n = threads->cpus;
  std::string s;
  if (*threads->omp == n) {
    s = fmt::format(
        "\n# OMP_NUM_THREADS={0}, as the trial set it, matches --cpus-per-task={0} above: each "
        "rank's OpenMP\n# threads get the CPUs Slurm gives its task. Warn when the allocation "
        "gives another number.\n",
        n);
  } else {
    s = fmt::format("\n# --cpus-per-task={} above is {}; the trial's OMP_NUM_THREADS is {}.\n", n,
                    n < threads->threads ? "what the winner had on the node it was tuned on"
                                         : "the trial's threads per rank",
                    *threads->omp);
  }
  s += fmt::format(
      "if [ \"${{SLURM_CPUS_PER_TASK:-{0}}}\" != {0} ]; then\n"
      "  echo \"warning: SLURM_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK, but the tuned setting {1} "
      "per rank\" >&2\n"
      "fi\n",
      n,
      n < threads->threads ? fmt::format("had {} CPU(s)", n) : fmt::format("runs {} thread(s)", n));
  return s;
}

// The trial's working directory (`workdir:`) and its staged inputs (`files:`): cd there, then
// copy, link or write each file as the runner did (tuner/run/staging.h), so the command finds
// what the trial found. Every user value is one quoted word (shell_word); rendered templates are
// written with printf '%s', never through a shell string built from them.
std::string workdir_and_files(const StudySpec& spec, const Rendered& r) {
  std::string s;
  // A stored value (the database's: untrusted) that would move the folder out of the one the
  // study file names ("../x") is refused here as the runner refuses it (templates.h).
  if (auto contained = expand_path_template(spec.workdir, r.values, spec.dir); !contained)
    return "\n# workdir: " + one_line(printable(contained.error(), 300)) + "\nexit 1\n";
  auto dir = expand_template(spec.workdir, r.values);
  std::string where = dir && *dir ? **dir : std::string(k_out_mark);
  if (where.empty()) where = std::string(k_out_mark);
  if (!where.starts_with(k_out_mark) && std::filesystem::path(where).is_relative())
    where = (std::filesystem::path(spec.dir) / where).lexically_normal().string();
  const std::string word = shell_word(where, "\"$TUNE_OUT\"");
  if (word == "\"$TUNE_OUT\"") {
    s += "\n# Trials run in their output folder; so does this.\ncd -- \"$TUNE_OUT\"\n";
  } else {
    s += "\n# Trials run in their working directory (workdir:); so does this.\n";
    s += "mkdir -p -- " + word + "\ncd -- " + word + "\n";
  }
  if (spec.files.empty()) return s;
  s += "\n# The trial's inputs (files:), staged as the trial staged them.\n"
       "tune_stage() {  # copy|link|template SRC DEST (template: DEST made ready for printf)\n"
       "  if [ \"$1\" != template ] && [ -e \"$3\" ] && [ \"$2\" -ef \"$3\" ]; then return 0; fi\n"
       "  mkdir -p -- \"$(dirname -- \"$3\")\"\n"
       "  if [ -d \"$3\" ] && [ ! -L \"$3\" ]; then\n"
       "    if [ \"$1\" = copy ] && [ -d \"$2\" ]; then cp -R -- \"$2\"/. \"$3\"; return; fi\n"
       "    echo \"cannot write $3: a folder is there (staging replaces files, never folders)\" "
       ">&2\n"
       "    return 1\n"
       "  fi\n"
       "  rm -f -- \"$3\"\n"
       "  case $1 in\n"
       "    link) ln -s -- \"$2\" \"$3\" ;;\n"
       "    copy) cp -R -- \"$2\" \"$3\" ;;\n"
       "  esac\n"
       "}\n";
  for (const auto& f : spec.files) {
    const std::string dest = bash_quote(f.dest);
    if (f.mode != StagedFile::Mode::render) {
      s += fmt::format("tune_stage {} {} {}\n", staged_mode_name(f.mode), bash_quote(f.src), dest);
      continue;
    }
    auto text = expand_text(f.text, r.values);
    if (!text) {  // checked when the study loaded; a trial's values cannot break it
      s += "# " + one_line(f.dest) + ": " + one_line(text.error()) + "\nexit 1\n";
      continue;
    }
    s += fmt::format("tune_stage template {} {}\n", bash_quote(f.src), dest);
    s += fmt::format("printf '%s' {} > {}\n", shell_word(*text, "\"$TUNE_OUT\""), dest);
  }
  return s;
}

// The body shared by the bash, Slurm and PBS scripts; `scheduler` is the batch format's own
// lines, run before the command.
std::string script_body(const StudySpec& spec, const Rendered& r, const ExportOptions& options,
                        const search::FrozenTrial& trial, const std::string& scheduler = "") {
  std::string s = "set -euo pipefail\n\n";
  s += "# The run's output folder (the study's {trial_dir}); set TUNE_OUT to choose another.\n";
  s += "if [ -z \"${TUNE_OUT:-}\" ]; then TUNE_OUT=" + bash_quote(options.default_out) + "; fi\n";
  s += "mkdir -p -- \"$TUNE_OUT\"\nTUNE_OUT=$(cd -- \"$TUNE_OUT\" && pwd)\nexport TUNE_OUT\n";
  s += r.launch.kind->script_setup();
  if (!r.request.env_set.empty() || !r.request.env_unset.empty()) {
    s += "\n# The winning trial's environment.\n";
    for (const auto& [name, value] : spec.env) {
      if (auto it = r.request.env_set.find(name); it != r.request.env_set.end()) {
        s += is_secret_env_var(name)
                 ? secret_env_note(name)
                 : "export " + name + "=" + shell_word(it->second, "\"$TUNE_OUT\"") + "\n";
      } else if (std::find(r.request.env_unset.begin(), r.request.env_unset.end(), name) !=
                 r.request.env_unset.end()) {
        s += "unset " + name + "  # null in this trial: the library keeps its own default\n";
      }
    }
  }
  s += program_checks(trial);
  s += machine_check(trial);
  s += kernel_checks(spec, trial, r.request.env_set);
  s += scheduler;
  s += development_flag_notes(r);
  s += workdir_and_files(spec, r);
  s += command_line(r.request.argv, "\"$TUNE_OUT\"", "    ") + "\n";
  return s;
}

// --format mpirun: one command line, self-contained: the environment goes in front through
// env(1).
Result<std::string> mpirun_line(const StudySpec& spec, const Rendered& r,
                                const ExportOptions& options) {
  std::vector<std::string> argv;
  if (!r.request.env_set.empty() || !r.request.env_unset.empty()) {
    // env(1) takes every NAME=VALUE word before the program for a variable, `--` or not.
    if (!r.request.argv.empty() && r.request.argv.front().contains('='))
      return std::unexpected(
          fmt::format("{}: the program '{}' holds '=', which env(1) would take for a variable; use "
                      "--format bash instead",
                      spec.file, one_line(r.request.argv.front())));
    argv.push_back("env");
    for (const auto& name : r.request.env_unset) argv.insert(argv.end(), {"-u", name});
    // A secret (PGPASSWORD) is left to the caller's environment, which env(1) passes on.
    for (const auto& [name, value] : r.request.env_set)
      if (!is_secret_env_var(name)) argv.push_back(name + "=" + value);
  }
  argv.insert(argv.end(), r.request.argv.begin(), r.request.argv.end());
  std::string line;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i) line += ' ';
    line += shell_word(argv[i], "\"${TUNE_OUT:-" + options.default_out + "}\"", i == 0);
  }
  return line + "\n";
}

// --format env: KEY=VALUE lines, the command as a comment.
std::string env_file(const StudySpec& spec, const Rendered& r, const ExportOptions& options,
                     const std::string& head) {
  std::string s = head;
  s += "# KEY=VALUE lines for the winning trial's environment. To export them all:\n"
       "#   set -a; . THIS_FILE; set +a\n";
  bool needs_out = false;
  for (const auto& [name, value] : r.request.env_set)
    needs_out |= !is_secret_env_var(name) && mentions_out(value);
  if (needs_out) s += "TUNE_OUT=${TUNE_OUT:-" + options.default_out + "}\n";
  for (const auto& [name, text] : spec.env) {
    if (auto it = r.request.env_set.find(name); it != r.request.env_set.end()) {
      s += is_secret_env_var(name) ? secret_env_note(name)
                                   : name + "=" + shell_word(it->second, "\"$TUNE_OUT\"") + "\n";
    } else {
      s += "# " + name + " is left unset (null in this trial: the library's own default)\n";
    }
  }
  std::string command;
  for (std::size_t i = 0; i < r.request.argv.size(); ++i) {
    if (i) command += ' ';
    command += shell_word(r.request.argv[i], "\"$TUNE_OUT\"", i == 0);
  }
  s += "# Command: " + one_line(command) + "\n";
  return s;
}

}  // namespace

const std::vector<std::string>& export_format_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, format] : k_export_formats) v.emplace_back(name);
    return v;
  }();
  return names;
}

Result<ExportFormat> parse_export_format(const std::string& text) {
  for (const auto& [name, format] : k_export_formats) {
    if (name == text) return format;
  }
  return std::unexpected(fmt::format("--format: unknown export format '{}' (known: {})", text,
                                     fmt::join(export_format_names(), ", ")));
}

int walltime_from_measured(double longest_s) {
  const double s = std::max({0.0, 2 * longest_s, longest_s + 300});
  return static_cast<int>(std::ceil(s / 60)) * 60;
}

std::string format_walltime(int seconds) {
  seconds = std::max(0, seconds);
  return fmt::format("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
}

Result<JobShape> job_shape(const StudySpec& spec, const search::FrozenTrial& trial) {
  auto r = render_request(spec, trial, ExportOptions{}, /*allow_run_as_root=*/false);
  if (!r) return std::unexpected(r.error());
  return r->launch.job_shape();
}

Result<std::string> render_export(const StudySpec& spec, const search::FrozenTrial& trial,
                                  ExportFormat format, const ExportOptions& options) {
  if (bash_quote(options.default_out) != options.default_out)
    return std::unexpected("export: the default output folder must be a plain path");
  auto r = render_request(spec, trial, options,
                          format == ExportFormat::mpirun && options.allow_run_as_root);
  if (!r) return std::unexpected(r.error());
  const std::string head = header(spec, trial, options);

  switch (format) {
    case ExportFormat::slurm_array:
      return std::unexpected("export: slurm-array exports the study, not a trial (worker_array.h)");
    case ExportFormat::mpirun:
      return mpirun_line(spec, *r, options);
    case ExportFormat::env:
      return env_file(spec, *r, options, head);
    case ExportFormat::bash:
      return "#!/usr/bin/env bash\n" + head +
             "# Run: bash THIS_FILE (output in $TUNE_OUT, default " + options.default_out +
             ")\n\n" + script_body(spec, *r, options, trial);
    case ExportFormat::slurm: {
      const JobShape shape = r->launch.job_shape();
      const auto per_rank = threads_per_rank(
          *r, trial, shape, [](int n) { return "--cpus-per-task=" + std::to_string(n); });
      if (!per_rank) return std::unexpected(per_rank.error());
      const auto& threads = *per_rank;
      const auto limit = time_limit(trial, options, "sbatch --time");
      std::string s = "#!/usr/bin/env bash\n";
      s += "#SBATCH --job-name=" + job_name(spec.name, 64) + "\n";
      s += fmt::format("#SBATCH --nodes={}\n", shape.nodes);
      if (shape.tasks_per_node)
        s += fmt::format("#SBATCH --ntasks-per-node={}\n", *shape.tasks_per_node);
      if (threads) s += fmt::format("#SBATCH --cpus-per-task={}\n", threads->cpus);
      if (limit) s += "#SBATCH --time=" + format_walltime(limit->seconds) + "\n";
      s += head;
      if (threads) s += cpus_note(*threads, fmt::format("CPUs per task: {}", threads->cpus));
      s += limit ? limit->why
                 : "# No time limit: the trial has no measured wall time; give one with sbatch "
                   "--time.\n";
      s += "# Submit: sbatch THIS_FILE (output in $TUNE_OUT, default " + options.default_out +
           " under the submit folder)\n";
      if (!spec.launch.host.empty() || !spec.launch.hosts.empty() || !spec.launch.hostfile.empty())
        s += "# The study's --host/--hostfile stay in the command: check they match the "
             "allocation.\n";
      return s + "\n" +
             script_body(spec, *r, options, trial,
                         threads_check(threads) + launcher_note(spec, *r, shape, threads));
    }
    case ExportFormat::pbs: {
      const JobShape shape = r->launch.job_shape();
      const int per_node = shape.tasks_per_node.value_or(1);
      const auto ncpus = [per_node](int n) {
        return fmt::format("ncpus={} ({} per rank)", per_node * n, n);
      };
      const auto found = threads_per_rank(*r, trial, shape, ncpus);
      if (!found) return std::unexpected(found.error());
      const auto& threads = *found;
      const auto limit = time_limit(trial, options, "qsub -l walltime=");
      const int per_rank = threads ? threads->cpus : 1;
      std::string s = "#!/usr/bin/env bash\n";
      s += "#PBS -N " + job_name(spec.name, 15) + "\n";
      s += fmt::format("#PBS -l select={}:ncpus={}:mpiprocs={}", shape.nodes, per_node * per_rank,
                       per_node);
      if (threads) s += fmt::format(":ompthreads={}", per_rank);
      s += "\n";
      if (limit) s += "#PBS -l walltime=" + format_walltime(limit->seconds) + "\n";
      s += "#PBS -j oe\n";
      s += head;
      if (threads)
        s += cpus_note(*threads, fmt::format("ncpus: {} ({} ranks x {})", per_node * per_rank,
                                             per_node, plural(per_rank, "CPU", "CPUs")));
      s += limit ? limit->why
                 : "# No time limit: the trial has no measured wall time; give one with qsub -l "
                   "walltime=.\n";
      s += "# Submit: qsub THIS_FILE (output in $TUNE_OUT, default " + options.default_out +
           " under the submit folder)\n\n";
      s += "cd -- \"${PBS_O_WORKDIR:-.}\"\n";
      return s + script_body(spec, *r, options, trial);
    }
  }
  return std::unexpected("export: unknown format");
}

}  // namespace tune::tuner
