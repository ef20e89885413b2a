// The YAML text of a `tune init` plan: every value quoted or typed so that it reads back as
// written, a comment on each parameter and baseline.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <sstream>

#include "tuner/init/init_plan.h"
#include "tuner/init/init_study.h"
#include "tuner/launch/rule_machine.h"
#include "tuner/study/rules.h"

namespace tune::tuner {
namespace {

using search::ParamValue;

// A YAML double-quoted scalar: always a string, whatever it looks like.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string yaml_value(const ParamValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "null";
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  return quoted(std::get<std::string>(v));
}

std::string number(double d) { return fmt::format("{}", d); }

// `text` as comment lines of at most ~100 columns, broken at spaces, each led by `indent` "# ".
std::string comment(const std::string& text, const std::string& indent) {
  constexpr std::size_t k_width = 100;
  std::string out, line = indent + "#";
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (line.size() + 1 + w.size() > k_width && line.size() > indent.size() + 1) {
      out += line + '\n';
      line = indent + "#  ";
    }
    line += ' ' + w;
  }
  return out + line + '\n';
}

std::string domain(const InitParam& p) {
  if (!p.kernel_file.empty()) {  // null is implicit: the kernel as the environment has it
    std::vector<std::string> items;
    for (const auto& c : p.choices)
      if (!std::holds_alternative<std::monostate>(c)) items.push_back(yaml_value(c));
    return fmt::format("{{type: kernel, {}file: {}, choices: [{}]}}",
                       p.kernel_library == "openblas" ? "" : "library: " + p.kernel_library + ", ",
                       quoted(p.kernel_file), fmt::join(items, ", "));
  }
  if (!p.range_type.empty()) {
    return fmt::format("{{type: {}, low: {}, high: {}{}}}", p.range_type, number(p.low),
                       number(p.high), p.log ? ", log: true" : "");
  }
  std::vector<std::string> items;
  for (const auto& c : p.choices) items.push_back(yaml_value(c));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

void write_launch(std::ostream& out, const InitPlan& plan) {
  if (!plan.mpirun) return;
  const auto& l = plan.launch;
  out << "launch:\n  mpirun:\n";
  if (l.program != "mpirun") out << "    program: " << quoted(l.program) << '\n';
  const std::pair<const char*, const std::string*> fields[] = {
      {"n", &l.n},           {"npernode", &l.npernode}, {"bind_to", &l.bind_to},
      {"map_by", &l.map_by}, {"host", &l.host},         {"hostfile", &l.hostfile}};
  for (const auto& [key, value] : fields) {
    if (!value->empty()) out << "    " << key << ": " << quoted(*value) << '\n';
  }
  if (!plan.ranks_note.empty()) out << comment(plan.ranks_note, "    ");
  if (l.oversubscribe) out << "    oversubscribe: true\n";
  if (!l.mca.empty()) {
    out << "    mca:\n";
    for (const auto& [k, v] : l.mca) out << "      " << k << ": " << quoted(v) << '\n';
  }
  if (!l.extra.empty()) {
    std::vector<std::string> items;
    for (const auto& e : l.extra) items.push_back(quoted(e));
    out << "    extra: [" << fmt::format("{}", fmt::join(items, ", ")) << "]\n";
  }
}

// The `program:` section, or the same as comments when the parser does not know the key.
void write_program(std::ostream& out, const InitProgram& p) {
  if (!p.present) return;
  std::ostringstream body;
  body << "program:   # what the program is and starts, as `tune init` saw it run\n";
  for (const auto& e : p.evidence) body << comment(e, "  ");
  body << "  kind: " << p.kind << '\n';
  body << "  pools: [" << fmt::format("{}", fmt::join(p.pools, ", ")) << "]\n";
  if (!p.pool_defaults.empty()) {
    std::vector<std::string> items;
    for (const auto& [pool, n] : p.pool_defaults) items.push_back(fmt::format("{}: {}", pool, n));
    body << "  pool_defaults: {" << fmt::format("{}", fmt::join(items, ", ")) << "}\n";
  }
  if (p.runtime_threads) body << "  runtime_threads: " << *p.runtime_threads << '\n';
  if (!p.commented) {
    out << body.str();
    return;
  }
  out << "# This tune's study parser does not read `program:` yet; the section as found:\n";
  std::istringstream lines(body.str());
  for (std::string line; std::getline(lines, line);) out << "# " << line << '\n';
}

// One enqueue entry: each parameter at `value_of(param)`.
template <typename F>
std::string baseline(const InitPlan& plan, F value_of) {
  std::vector<std::string> items;
  for (const auto& p : plan.params) items.push_back(p.name + ": " + yaml_value(value_of(p)));
  return fmt::format("  - {{{}}}\n", fmt::join(items, ", "));
}

void write_objective_and_baselines(std::ostream& out, const InitPlan& plan) {
  if (plan.window) {
    const auto& w = *plan.window;
    out << "objective:\n";
    for (const auto& n : plan.objective_notes) out << comment(n, "  ");
    out << "  window:\n";
    if (w.stream != "stdout") out << "    stream: " << w.stream << '\n';
    out << "    regex: " << quoted(w.regex) << '\n';
    if (w.number != NumberStyle::plain)
      out << "    number: " << number_style_name(w.number) << '\n';
    out << "    measure: " << w.measure << '\n'
        << "    warmup: " << w.warmup << "   # not measured: the job's first steps are slow\n"
        << "    target: " << w.target << "   # stop once the rate's 95% interval is within +-"
        << w.target << " of it\n"
        << "    min: " << w.min << "   # ... over a window at least this long\n"
        << "    max: " << w.max << "   # stop after this long a window anyway\n"
        << "    startup: " << w.startup << "   # no progress line by then: the trial fails\n";
    if (plan.incumbent_repeats > 0) {
      out << comment(plan.repeats_note, "") << "incumbent_repeats: " << plan.incumbent_repeats
          << '\n';
    }
  } else if (!plan.regex.empty() && !plan.objective_notes.empty()) {
    out << "objective:\n";
    for (const auto& n : plan.objective_notes) out << comment(n, "  ");
    if (!plan.objective_file.empty()) out << "  file: " << quoted(plan.objective_file) << '\n';
    if (plan.objective_file.empty() && plan.objective_stream != "stdout")
      out << "  stream: " << plan.objective_stream << '\n';
    out << "  regex: " << quoted(plan.regex) << '\n';
    if (plan.objective_number != NumberStyle::plain)
      out << "  number: " << number_style_name(plan.objective_number) << '\n';
  } else if (plan.regex.empty()) {
    out << "objective:\n";
    for (const auto& n : plan.objective_notes) out << comment(n, "  ");
    out << "  # Seconds from launch to exit as tune measures them (startup included, the same\n"
           "  # for every trial). Has the program a throughput line? tune init\n"
           "  # --throughput-regex 'samples/s: ([0-9.]+)' scores that instead (maximize).\n"
           "  wall_time: true\n";
  } else {
    out << "objective:\n"
           "  # The first group of the last match in the trial's stdout (RE2 syntax).\n"
        << "  regex: " << quoted(plan.regex) << '\n';
  }
  if (plan.params.empty()) return;
  out << "enqueue:\n"
         "  # The command as it runs today: the baseline `tune report` measures speedups "
         "against.\n"
      << baseline(plan, [](const InitParam& p) { return p.as_given; });
  const bool known = std::all_of(plan.params.begin(), plan.params.end(),
                                 [](const auto& p) { return p.library_default.has_value(); });
  const bool same = known && std::all_of(plan.params.begin(), plan.params.end(), [](const auto& p) {
                      return p.as_given == *p.library_default;
                    });
  if (known && !same) {
    out << "  # Every library, and mpirun, at its own default.\n"
        << baseline(plan, [](const InitParam& p) { return *p.library_default; });
  }
  // The usual cure for oversubscription, so the study measures it early: every pool at its
  // smallest size (one thread, no extra worker), the rest as today.
  auto smallest = [](const InitParam& p) {
    return p.sizes_pool && p.choices.size() > 1 ? p.choices[1] : p.as_given;
  };
  const bool changes = std::any_of(plan.params.begin(), plan.params.end(),
                                   [&](const auto& p) { return smallest(p) != p.as_given; });
  if (changes) {
    out << "  # The command as today with every thread/process pool at its smallest.\n"
        << baseline(plan, smallest);
  }
}

}  // namespace

std::string escape_braces(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

std::string init_rules_section(StudySpec spec, const probes::Topology& topo) {
  if (spec.enqueue.empty() || spec.directions.size() > 1) return "";
  spec.rules = rule_names();
  std::vector<std::string> notes;
  const auto entries = enqueue_with_rules(spec, rule_machine(spec, &topo), notes);
  std::ostringstream out;
  out << "# Rule baselines: what a launcher or an engineer's rule sets, each run once after the\n"
         "# trials above (a rule that gives the command as run labels that trial). The end of\n"
         "# `tune`, `tune best` and `tune report` say by how much the best beats the best rule.\n"
         "rules:\n";
  bool any = false;
  for (const auto& rule : rule_names()) {
    for (const auto& e : entries) {
      const auto it = std::find(e.rules.begin(), e.rules.end(), rule);
      if (it == e.rules.end()) continue;
      out << comment(e.texts[static_cast<std::size_t>(it - e.rules.begin())], "  ") << "  - "
          << rule << '\n';
      any = true;
    }
  }
  for (const auto& n : notes) out << comment("not used: " + n, "  ");
  return any ? out.str() : "";
}

std::string write_init_yaml(const InitPlan& plan) {
  std::ostringstream out;
  for (const auto& line : plan.header) out << "# " << line << '\n';
  out << "#\n"
         "#   tune --trials 30 THIS_FILE     # run (or continue) the study; the baseline runs "
         "first\n"
         "#   tune report THIS_FILE          # best trial, speedup over the baseline, probe "
         "verdicts\n"
         "#   tune export THIS_FILE -f bash  # the best settings as a script\n"
         "#\n"
         "# A null choice leaves that flag or variable out, so the library keeps its own "
         "default.\n";
  out << "name: " << quoted(plan.name) << '\n'
      << "direction: "
      << (plan.window || (!plan.regex.empty() && plan.maximize) ? "maximize" : "minimize") << '\n'
      << "timeout: " << quoted(plan.timeout) << "   # per trial: a hung trial is stopped\n";
  write_launch(out, plan);
  out << "command:\n";
  for (const auto& c : plan.command) out << "  - " << quoted(c) << '\n';
  if (!plan.env.empty()) {
    out << "env:\n";
    for (const auto& n : plan.env_notes) out << comment(n, "  ");
    for (const auto& [k, v] : plan.env) out << "  " << k << ": " << quoted(v) << '\n';
  }
  if (!plan.files.empty()) {
    out << "files:   # staged into each trial's folder before it runs (trials run in their own)\n";
    for (const auto& f : plan.files) {
      out << comment(f.comment, "  ") << "  - {" << f.mode << ": " << quoted(f.src) << "}\n";
    }
  }
  if (!plan.params.empty()) {
    out << "params:\n";
    for (const auto& p : plan.params) {
      out << comment(p.where + ": " + p.comment, "  ") << "  " << p.name << ": " << domain(p)
          << '\n';
    }
  }
  // The script's own flags mean nothing to the probes until the study says what they size.
  if (std::any_of(plan.params.begin(), plan.params.end(),
                  [](const auto& p) { return p.declare; })) {
    out << "knobs:   # what the program's own flags size, for the probes' prediction\n";
    for (const auto& p : plan.params) {
      if (!p.declare) continue;
      out << "  " << p.name << ": {knob: " << p.knob;
      if (p.program_default) out << ", default: " << *p.program_default;
      out << "}\n";
    }
  }
  write_program(out, plan.program);
  write_objective_and_baselines(out, plan);
  out << "probes: {enabled: true}   # predict and watch CPU oversubscription of every trial\n";
  for (const auto& note : plan.notes) out << comment("Not tuned: " + note, "");
  return out.str();
}

}  // namespace tune::tuner
