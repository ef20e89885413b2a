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
#include "tuner/export/job_request.h"
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

// The launcher's flags kept from the study's machine that a cluster may not want
// (LaunchKind::kept_flag_notes): kept, so the script runs what the trial ran, and named in a
// comment so nobody submits them unawares.
std::string kept_flags_text(const LaunchKind& kind) {
  const auto notes = kind.kept_flag_notes();
  if (notes.empty()) return "";
  std::string s =
      "\n# Kept from the study, which ran on a development machine; they may not be wanted on a "
      "cluster:\n";
  for (const auto& n : notes) s += comment_lines(n + ".", "#  ", "#    ");
  return s +
         "# They are part of what was measured; remove them from the command if they do not "
         "apply here.\n";
}

// Slurm: why the job starts with the study's launcher, not srun (LaunchKind::batch_launch_note).
std::string launcher_text(const LaunchKind& kind, const JobShape& shape,
                          const std::optional<ThreadsPerRank>& threads) {
  const auto note =
      kind.batch_launch_note(shape, threads ? std::optional<int>(threads->cpus) : std::nullopt);
  if (note.why.empty()) return "";
  return "\n" + comment_lines(note.why, "#", "#") + "#   " + note.equivalent + "\n";
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
  s += kept_flags_text(*r.launch.kind);
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
      const auto per_rank =
          threads_per_rank(r->request.env_set, *r->launch.kind, trial, shape,
                           [](int n) { return "--cpus-per-task=" + std::to_string(n); });
      if (!per_rank) return std::unexpected(per_rank.error());
      const auto& threads = *per_rank;
      const auto limit =
          time_limit(trial, options.walltime_s, options.rerun_wall_times, "sbatch --time");
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
                         threads_check(threads) + launcher_text(*r->launch.kind, shape, threads));
    }
    case ExportFormat::pbs: {
      const JobShape shape = r->launch.job_shape();
      const int per_node = shape.tasks_per_node.value_or(1);
      const auto ncpus = [per_node](int n) {
        return fmt::format("ncpus={} ({} per rank)", per_node * n, n);
      };
      const auto found = threads_per_rank(r->request.env_set, *r->launch.kind, trial, shape, ncpus);
      if (!found) return std::unexpected(found.error());
      const auto& threads = *found;
      const auto limit =
          time_limit(trial, options.walltime_s, options.rerun_wall_times, "qsub -l walltime=");
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
