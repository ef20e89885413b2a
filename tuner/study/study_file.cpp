#include "tuner/study/study_file.h"

#include <sys/stat.h>

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "probes/blas_kernels.h"
#include "search/pruner.h"
#include "search/sampler.h"
#include "search/sampler_factory.h"
#include "tuner/base/text.h"
#include "tuner/storage/storage_url.h"
#include "tuner/study/launch_spec.h"
#include "tuner/study/patterns.h"
#include "tuner/study/rules.h"
#include "tuner/study/yaml_document_check.h"
#include "tuner/study/yaml_reader.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::ParamValue;

// What kind of file `mode` is, when staging refuses it: only regular files and folders are
// staged (a FIFO would block the copy or the job, a device would stream forever).
std::optional<std::string> unstageable_kind(mode_t mode) {
  if (S_ISREG(mode) || S_ISDIR(mode)) return std::nullopt;
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "neither a regular file nor a folder";
}

// Why `path` cannot be staged, naming it: missing, a symbolic link loop or one to nothing, not a
// regular file or folder. `walk`: a folder is copied whole, so everything in it is checked the
// same way (its symbolic links followed, as the copy follows them; `ancestors` are the folders
// above, by device and inode, so that a link back up is named as the loop it is).
std::optional<std::string> staged_source_problem(
    const fs::path& path, bool walk, std::vector<std::pair<dev_t, ino_t>>* ancestors = nullptr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return fmt::format("{} does not exist (paths are taken from the study file's folder)",
                       path.string());
  }
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const auto target = fs::read_symlink(path, ec).string();
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ELOOP)
        return fmt::format("{} is a symbolic link loop ({} -> {})", path.string(), path.string(),
                           target);
      return fmt::format("{} is a symbolic link to {}, which does not exist", path.string(),
                         target);
    }
  }
  if (auto kind = unstageable_kind(st.st_mode))
    return fmt::format("{} is {}: staging takes regular files and folders only", path.string(),
                       *kind);
  if (!walk || !S_ISDIR(st.st_mode)) return std::nullopt;
  std::vector<std::pair<dev_t, ino_t>> top;
  if (ancestors == nullptr) ancestors = &top;
  const std::pair<dev_t, ino_t> self{st.st_dev, st.st_ino};
  if (std::ranges::find(*ancestors, self) != ancestors->end()) {
    return fmt::format("{} is a symbolic link loop (it leads back to a folder above it)",
                       path.string());
  }
  ancestors->push_back(self);
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto why = staged_source_problem(it->path(), true, ancestors)) return why;
  }
  ancestors->pop_back();
  if (ec) return fmt::format("{} cannot be read: {}", path.string(), ec.message());
  return std::nullopt;
}

// The study file's sections, each read into the StudySpec; every read goes through YamlReader,
// so any problem stops the parse as a SpecError naming the file, line and key.
class Parser : private YamlReader {
 public:
  explicit Parser(std::string file) : YamlReader(std::move(file)) {}

  // `text` (at `n`, `key`) names only parameters of `spec` and built-ins.
  void check_template(const YAML::Node& n, const std::string& key, const std::string& text,
                      const StudySpec& spec) const {
    auto names = template_names(text);
    if (!names) fail(n, key, names.error());
    for (const auto& name : *names) {
      if (is_builtin_placeholder(name)) continue;
      bool found = false;
      for (const auto& [p, d] : spec.space) found = found || p == name;
      if (!found) {
        fail(n, key,
             fmt::format("placeholder '{{{}}}' names no parameter of 'params' and no "
                         "built-in ({})",
                         name, fmt::join(k_builtin_placeholders, ", ")));
      }
    }
  }

  StudySpec parse(const YAML::Node& root) {
    StudySpec spec;
    if (!root.IsMap()) fail(root, "(top level)", "the study file must be a YAML mapping");
    check_keys(
        root, "",
        {"name",         "direction", "directions", "objective", "constraints", "launch",
         "command",      "env",       "timeout",    "params",    "sampler",     "pruner",
         "enqueue",      "output",    "storage",    "probes",    "knobs",       "incumbent_repeats",
         "max_failures", "workdir",   "files",      "program",   "load",        "rules",
         "first_guess"});
    parse_name_direction(root, spec);
    // Parameters first: templates elsewhere are checked against them.
    if (const auto& params = root["params"]) parse_params(params, spec);
    if (const auto& k = root["knobs"]) spec.probes.knobs = parse_study_knobs(*this, k, spec.space);
    if (const auto& p = root["program"]) spec.probes.program = parse_study_program(*this, p);
    parse_command(root, spec);
    if (const auto& env = root["env"]) parse_env(env, spec);
    if (const auto& w = root["workdir"]) parse_workdir(w, spec);
    if (const auto& f = root["files"]) parse_files(f, spec);
    if (const auto& t = root["timeout"]) spec.timeout_s = positive_duration(t, "timeout");
    parse_objectives(root, spec);
    if (const auto& c = root["constraints"]) parse_constraints(c, spec);
    if (const auto& l = root["launch"]) parse_launch(l, spec);
    parse_sampler_pruner(root, spec);
    if (const auto& k = root["incumbent_repeats"]) {
      const auto repeats = integer(k, "incumbent_repeats");
      if (repeats < 0 || repeats > 100) fail(k, "incumbent_repeats", "expected 0 to 100");
      if (repeats > 0 && spec.directions.size() > 1)
        fail(k, "incumbent_repeats",
             "re-measures the one best trial; a multi-objective study has a front (directions)");
      spec.incumbent_repeats = static_cast<int>(repeats);
    }
    if (const auto& k = root["max_failures"]) {
      const auto n = integer(k, "max_failures");
      if (n < 0 || n > 1'000'000) fail(k, "max_failures", "expected 0 (never stop) or more");
      spec.max_failures = static_cast<int>(n);
    }
    if (const auto& e = root["enqueue"]) parse_enqueue(e, spec);
    if (const auto& r = root["rules"]) parse_rules(r, spec);
    if (const auto& g = root["first_guess"]) spec.first_guess = boolean(g, "first_guess");
    parse_output_storage(root, spec);
    if (const auto& p = root["probes"]) parse_probes(p, spec);
    if (const auto& l = root["load"]) parse_load(l, spec);
    check_wall_time(root, spec);
    record_key_lines(root, spec);
    return spec;
  }

  // Where the keys a later check names are (spec.key_lines).
  static void record_key_lines(const YAML::Node& root, StudySpec& spec) {
    const auto line_of = [](const YAML::Node& n) { return n.Mark().line + 1; };
    const auto record_map = [&](const YAML::Node& map, const std::string& prefix) {
      if (!map || !map.IsMap()) return;
      for (const auto& kv : map)
        spec.key_lines[prefix + "." + kv.first.as<std::string>()] = line_of(kv.first);
    };
    for (const auto& kv : root) spec.key_lines[kv.first.as<std::string>()] = line_of(kv.first);
    record_map(root["params"], "params");
    const auto& o = root["objective"];
    if (o && o.IsSequence()) {
      for (std::size_t i = 0; i < o.size(); ++i) {
        const auto key = fmt::format("objective[{}]", i);
        spec.key_lines[key] = line_of(o[i]);
        record_map(o[i], key);
      }
    } else if (o) {
      record_map(o, "objective");
    }
  }

  void parse_name_direction(const YAML::Node& root, StudySpec& spec) {
    if (!root["name"]) fail(root, "name", "missing (the study's name)");
    spec.name = string(root["name"], "name");
    if (auto why = study_name_problem(spec.name)) {
      fail(root["name"], "name",
           fmt::format("'{}' {}: the name is one folder of the output (tune-out/NAME)",
                       escape_controls(spec.name), *why));
    }
    if (root["direction"] && root["directions"]) {
      fail(root["directions"], "directions",
           "give either 'direction' (one objective) or 'directions' (a list), not both");
    }
    if (root["direction"]) spec.direction = direction(root["direction"], "direction");
    spec.directions = {spec.direction};
    if (const auto& list = root["directions"]) {
      if (!list.IsSequence() || list.size() == 0) {
        fail(list, "directions", "expected a list such as [minimize, maximize]");
      }
      spec.directions.clear();
      for (std::size_t i = 0; i < list.size(); ++i) {
        spec.directions.push_back(direction(list[i], fmt::format("directions[{}]", i)));
      }
      spec.direction = spec.directions.front();
    }
  }

  search::Direction direction(const YAML::Node& n, const std::string& key) const {
    const auto d = string(n, key);
    if (d == "maximize") return search::Direction::maximize;
    if (d != "minimize") fail(n, key, "expected minimize or maximize");
    return search::Direction::minimize;
  }

  // `objective:` is one mapping, or a list of them with one entry per `directions` entry.
  void parse_objectives(const YAML::Node& root, StudySpec& spec) {
    const auto& o = root["objective"];
    const std::size_t n = spec.directions.size();
    if (o && o.IsSequence()) {
      if (!root["directions"]) {
        fail(o, "objective",
             "a list of objectives needs 'directions: [...]' with one direction for each");
      }
      if (o.size() != n) {
        fail(o, "objective",
             fmt::format("{} objectives for {} directions; give one objective per direction",
                         o.size(), n));
      }
      spec.objectives.assign(n, ObjectiveSpec{});
      for (std::size_t i = 0; i < n; ++i) {
        const auto key = fmt::format("objective[{}]", i);
        parse_objective(o[i], key, spec, spec.objectives[i]);
        if (i > 0 && o[i]["log"] && spec.objectives[i].log != spec.objectives[0].log) {
          fail(o[i]["log"], key + ".log", "every objective reads the first objective's log");
        }
        if (i > 0) spec.objectives[i].log = spec.objectives[0].log;
      }
    } else {
      if (n > 1) {
        fail(o ? o : root, "objective",
             fmt::format("'directions' has {} entries: give a list of {} objectives, e.g. "
                         "[{{key: elapsed_time}}, {{key: validation/main/accuracy}}]",
                         n, n));
      }
      spec.objectives.assign(1, ObjectiveSpec{});
      if (o) parse_objective(o, "objective", spec, spec.objectives[0]);
    }
    spec.objective = spec.objectives.front();
  }

  void parse_params(const YAML::Node& params, StudySpec& spec) {
    if (!params.IsMap()) fail(params, "params", "expected a mapping of name: domain");
    for (const auto& kv : params) {
      const auto name = kv.first.as<std::string>();
      if (is_builtin_placeholder(name)) {
        fail(kv.first, "params." + name, "is a built-in placeholder name; choose another");
      }
      if (kv.second.IsMap() && kv.second["type"] && kv.second["type"].IsScalar() &&
          kv.second["type"].Scalar() == "kernel") {
        spec.space.emplace_back(name, kernel_param(kv.second, name, spec));
        continue;
      }
      spec.space.emplace_back(name, param(kv.second, "params." + name));
    }
  }

  // `type: kernel`: [null] alone until the study's creation checks the library's kernels (those
  // given, each one the library knows, or those the CPU runs) and adds those that pass
  // (StudySpec::KernelParam).
  search::Distribution kernel_param(const YAML::Node& n, const std::string& name, StudySpec& spec) {
    const std::string key = "params." + name;
    check_keys(n, key, {"type", "library", "file", "choices"});
    StudySpec::KernelParam k;
    k.name = name;
    if (n["library"]) k.library = string(n["library"], key + ".library");
    const probes::KernelLibrary* library = probes::kernel_library(k.library);
    if (library == nullptr)
      fail(n["library"], key + ".library",
           fmt::format("unknown library '{}' (openblas, onednn)", printable(k.library)));
    if (n["file"]) k.file = string(n["file"], key + ".file");
    search::CategoricalDistribution c;
    c.choices.push_back(std::monostate{});
    if (const auto& ch = n["choices"]) {
      const std::string what = fmt::format("{} {}", library->product, library->kernel_word);
      if (!ch.IsSequence()) fail(ch, key + ".choices", "expected a list of " + what + "s");
      for (std::size_t i = 0; i < ch.size(); ++i) {
        const std::string core = string(ch[i], key + ".choices");
        if (!probes::kernel_name_known(k.library, core))
          fail(ch[i], key + ".choices",
               fmt::format("'{}' is not an {} ({})", printable(core), what,
                           k.library == "onednn" ? "AVX2, AVX512_CORE, AVX512_CORE_BF16, ..."
                                                 : "SkylakeX, Haswell, Zen, ..."));
        k.candidates.push_back(core);
      }
    }
    spec.kernel_params.push_back(std::move(k));
    if (auto ok = search::validate(search::Distribution(c)); !ok) fail(n, key, ok.error());
    return c;
  }

  void parse_command(const YAML::Node& root, StudySpec& spec) {
    if (!root["command"]) fail(root, "command", "missing (the argv of one trial, a list)");
    const auto& cmd = root["command"];
    if (!cmd.IsSequence() || cmd.size() == 0) fail(cmd, "command", "expected a non-empty list");
    spec.command = template_list(cmd, "command", spec);
  }

  // A scalar that is a template, checked against the study's placeholders.
  std::string template_text(const YAML::Node& n, const std::string& key,
                            const StudySpec& spec) const {
    std::string text = scalar_text(n, key);
    check_template(n, key, text, spec);
    return text;
  }

  // The strings of a YAML list, each a template.
  std::vector<std::string> template_list(const YAML::Node& list, const std::string& key,
                                         const StudySpec& spec) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < list.size(); ++i)
      out.push_back(template_text(list[i], fmt::format("{}[{}]", key, i), spec));
    return out;
  }

  void parse_env(const YAML::Node& env, StudySpec& spec) {
    if (!env.IsMap()) fail(env, "env", "expected a mapping NAME: value");
    for (const auto& kv : env) {
      const auto name = kv.first.as<std::string>();
      const auto key = "env." + name;
      if (!is_env_var_name(name)) {
        fail(kv.first, "env." + escape_controls(name),
             "not an environment variable name (letters, digits and '_', not starting with "
             "a digit)");
      }
      spec.env.emplace_back(name, template_text(kv.second, key, spec));
    }
  }

  void parse_sampler_pruner(const YAML::Node& root, StudySpec& spec) {
    if (const auto& s = root["sampler"]) {
      if (!s.IsMap())
        fail(s, "sampler", "expected a mapping (type: gp|tpe|random|grid, seed: N, ...)");
      spec.sampler = to_json(s, "sampler");
      // Built once here so that a bad option is a study-file error with its line, not a
      // failure after the database was opened.
      if (auto sampler = search::make_sampler(spec.sampler, spec.space, spec.directions.size());
          !sampler)
        fail_in(root, "sampler", sampler.error());
    }
    if (const auto& p = root["pruner"]) {
      if (!p.IsMap()) fail(p, "pruner", "expected a mapping (type: median|percentile|...)");
      spec.pruner = to_json(p, "pruner");
      // Optuna prunes single-objective studies only (Trial.report refuses several objectives).
      if (spec.directions.size() > 1 && spec.pruner.value("type", "") != "none") {
        fail(p, "pruner",
             "pruning judges one objective; leave it out of a multi-objective study (directions)");
      }
      if (auto pruner = search::make_pruner(spec.pruner); !pruner)
        fail_in(root, "pruner", pruner.error());
    }
  }

  void parse_output_storage(const YAML::Node& root, StudySpec& spec) {
    spec.output = root["output"] ? string(root["output"], "output") : "tune-out/" + spec.name;
    if (spec.output.empty()) fail(root["output"], "output", "must not be empty");
    if (has_control_char(spec.output)) {
      fail(root["output"], "output",
           fmt::format("'{}' holds a control character; name a plain folder",
                       escape_controls(spec.output)));
    }
    spec.storage = root["storage"] ? string(root["storage"], "storage") : "";
    if (auto why = storage_url_problem(spec.storage))
      fail(root["storage"], "storage",
           fmt::format("'{}' {}", escape_controls(redact_storage_url(spec.storage)), *why));
  }

  void parse_probes(const YAML::Node& p, StudySpec& spec) {
    check_keys(p, "probes", {"enabled", "constrain", "interval", "thread_origins"});
    if (p["enabled"]) spec.probes.enabled = boolean(p["enabled"], "probes.enabled");
    if (p["thread_origins"])
      spec.probes.thread_origins = boolean(p["thread_origins"], "probes.thread_origins");
    if (p["constrain"]) spec.probes.constrain = boolean(p["constrain"], "probes.constrain");
    if (p["interval"]) {
      auto d = parse_duration(scalar_text(p["interval"], "probes.interval"));
      if (!d || *d <= 0) fail(p["interval"], "probes.interval", "expected a positive duration");
      spec.probes.interval_s = *d;
    }
  }

  // `load: off`, or `load: {check, max_external_cpus, max_external_share, wait}`.
  void parse_load(const YAML::Node& l, StudySpec& spec) {
    if (l.IsScalar()) {
      const auto text = scalar_text(l, "load");
      if (text != "off" && text != "false")
        fail(l, "load",
             "expected off, or a mapping such as {max_external_cpus: 0.25, max_external_share: "
             "10%, wait: 10m}");
      spec.load.check = false;
      return;
    }
    check_keys(l, "load", {"check", "max_external_cpus", "max_external_share", "wait"});
    if (l["check"]) spec.load.check = boolean(l["check"], "load.check");
    if (const auto& n = l["max_external_cpus"]) {
      const double v = number(n, "load.max_external_cpus");
      if (v < 0) fail(n, "load.max_external_cpus", "expected 0 or more CPUs' worth, e.g. 0.25");
      spec.load.max_external_cpus = v;
    }
    if (const auto& n = l["max_external_share"])
      spec.load.max_external_share = fraction(n, "load.max_external_share", 0, 1);
    if (const auto& n = l["wait"]) {
      const double w = duration_or_zero(n, "load.wait");
      if (w > 7 * 86400) fail(n, "load.wait", "expected at most a week (e.g. 10m; 0: never wait)");
      spec.load.wait_s = w;
    }
  }

  void parse_objective(const YAML::Node& o, const std::string& where, const StudySpec& spec,
                       ObjectiveSpec& obj) {
    check_keys(o, where,
               {"log", "key", "entry", "regex", "stream", "intermediate", "step_key", "wall_time",
                "file", "json", "csv", "window", "number"});
    const auto k = [&](const char* name) { return where + "." + name; };
    if (o["window"]) {
      for (const char* key : {"log", "key", "entry", "regex", "stream", "intermediate", "step_key",
                              "wall_time", "file", "json", "csv", "number"}) {
        if (o[key]) {
          fail(o[key], k(key),
               "makes no sense next to 'window' (the value is the rate measured over the window; "
               "where its progress comes from goes inside it); remove one of them");
        }
      }
      obj.window = parse_window(o["window"], k("window"), spec);
      return;
    }
    if (o["file"] || o["json"] || o["csv"]) {
      for (const char* key :
           {"log", "key", "entry", "stream", "intermediate", "step_key", "wall_time"}) {
        if (o[key]) {
          fail(o[key], k(key),
               "makes no sense with 'file' (the value is read from that file, not from a log, "
               "a stream or the wall time); remove one of them");
        }
      }
      obj.file = file_metric(o, where, spec);
      return;
    }
    if (o["wall_time"]) parse_wall_time(o, where, obj);
    if (o["number"]) {
      if (!o["regex"]) {
        fail(o["number"], k("number"),
             "says how a regex's match writes its number: it needs 'regex' (or 'file' with "
             "regex or csv)");
      }
      obj.number = number_style(o["number"], k("number"));
    }
    if (o["regex"]) {
      obj.use_regex = true;
      obj.regex = string(o["regex"], k("regex"));
      // Checked by the engine that will run it (RE2), so what loads is what runs.
      if (auto error = regex_error(obj.regex)) {
        fail(o["regex"], k("regex"),
             fmt::format("invalid regular expression (RE2 syntax): {}", *error));
      }
      if (o["log"]) fail(o["log"], k("log"), "use either 'regex' or 'log', not both");
    }
    if (o["log"]) {
      obj.log = string(o["log"], k("log"));
      check_template(o["log"], k("log"), obj.log, spec);
    }
    if (o["key"]) obj.key = string(o["key"], k("key"));
    if (o["entry"]) {
      obj.entry = string(o["entry"], k("entry"));
      if (obj.entry != "last" && obj.entry != "first" && obj.entry != "min" && obj.entry != "max") {
        fail(o["entry"], k("entry"), "expected last, first, min or max");
      }
    }
    if (o["stream"]) {
      obj.stream = string(o["stream"], k("stream"));
      if (obj.stream != "stdout" && obj.stream != "stderr") {
        fail(o["stream"], k("stream"), "expected stdout or stderr");
      }
    }
    if (o["intermediate"]) obj.intermediate_key = string(o["intermediate"], k("intermediate"));
    if (o["step_key"]) obj.step_key = string(o["step_key"], k("step_key"));
  }

  // `number:` of a regex or csv objective: how the job writes its number (base/number_text.h).
  NumberStyle number_style(const YAML::Node& n, const std::string& key) const {
    const auto text = scalar_text(n, key);
    if (auto style = number_style_named(text)) return *style;
    fail(n, key,
         fmt::format("'{}' is not a number style: expected plain (12345.6), grouped (12,345.6) "
                     "or decimal_comma (1,75)",
                     escape_controls(text)));
  }

  // A duration that may be 0 ("0", "0s"): a warm-up may be none.
  double duration_or_zero(const YAML::Node& n, const std::string& key) const {
    const auto text = scalar_text(n, key);
    if (text == "0" || text == "0s" || text == "0ms") return 0;
    auto d = parse_duration(text);
    if (!d) fail(n, key, d.error());
    return *d;
  }

  double positive_duration(const YAML::Node& n, const std::string& key) const {
    auto d = parse_duration(scalar_text(n, key));
    if (!d) fail(n, key, d.error());
    return *d;
  }

  // A fraction written as a percentage ("2%") or a number (0.02), within (low, high].
  double fraction(const YAML::Node& n, const std::string& key, double low, double high) const {
    std::string text = scalar_text(n, key);
    const bool percent = !text.empty() && text.back() == '%';
    if (percent) text.pop_back();
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
      fail(n, key,
           fmt::format("'{}' is not a fraction (write e.g. 2% or 0.02)",
                       escape_controls(scalar_text(n, key))));
    }
    if (percent) v /= 100;
    if (!(v > low && v <= high + 1e-12)) {  // 99.9% / 100 is 0.99900000000000011
      fail(n, key,
           fmt::format("{} is outside ({}%, {}%]", escape_controls(scalar_text(n, key)), low * 100,
                       high * 100));
    }
    return v;
  }

  // objective.window: where the progress comes from, what its number is, and when to stop.
  WindowSpec parse_window(const YAML::Node& w, const std::string& where, const StudySpec& spec) {
    if (!w.IsMap()) {
      fail(w, where,
           "expected a mapping such as {regex: 'step ([0-9]+)', scale: 256} or {log: "
           "'{trial_dir}/log'}");
    }
    check_keys(
        w, where,
        {"regex", "stream", "file", "log", "key", "time_key", "measure", "scale", "unit", "warmup",
         "warmup_steps", "target", "confidence", "min", "max", "startup", "prune", "number"});
    const auto k = [&](const char* name) { return where + "." + name; };
    WindowSpec ws;
    if (w["log"]) {
      for (const char* key : {"regex", "stream", "file"}) {
        if (w[key]) {
          fail(w[key], k(key),
               "give either 'log' (a Chainer log's entries) or 'regex' (progress lines of a "
               "stream or a file), not both");
        }
      }
      if (w["number"]) {
        fail(w["number"], k("number"),
             "makes no sense with 'log' (a JSON number has one spelling); it says how the "
             "progress lines a regex reads write their numbers");
      }
      ws.source = WindowSpec::Source::log;
      ws.path = template_text(w["log"], k("log"), spec);
      if (ws.path.empty()) fail(w["log"], k("log"), "must not be empty");
      if (w["key"]) ws.key = string(w["key"], k("key"));
      if (ws.key.empty()) fail(w["key"], k("key"), "must not be empty");
      if (w["time_key"]) ws.time_key = string(w["time_key"], k("time_key"));
    } else {
      for (const char* key : {"key", "time_key"}) {
        if (w[key]) fail(w[key], k(key), "goes with 'log' (a key of the log's entries)");
      }
      if (!w["regex"]) {
        fail(w, k("regex"),
             "missing: the progress lines' regex (RE2), e.g. 'step ([0-9]+)', or log: PATH for a "
             "Chainer log");
      }
      ws.regex = string(w["regex"], k("regex"));
      if (ws.regex.empty()) fail(w["regex"], k("regex"), "must not be empty");
      if (auto error = regex_error(ws.regex)) {
        fail(w["regex"], k("regex"),
             fmt::format("invalid regular expression (RE2 syntax): {}", *error));
      }
      if (w["file"] && w["stream"]) {
        fail(w["stream"], k("stream"),
             "give either 'stream' (stdout or stderr) or 'file' (a file the job appends to)");
      }
      if (w["file"]) {
        ws.source = WindowSpec::Source::file;
        ws.path = template_text(w["file"], k("file"), spec);
        if (ws.path.empty()) fail(w["file"], k("file"), "must not be empty");
      }
      if (w["stream"]) {
        ws.stream = string(w["stream"], k("stream"));
        if (ws.stream != "stdout" && ws.stream != "stderr")
          fail(w["stream"], k("stream"), "expected stdout or stderr");
      }
      if (w["number"]) ws.number = number_style(w["number"], k("number"));
    }
    auto& st = ws.settings;
    if (w["measure"]) {
      const auto m = string(w["measure"], k("measure"));
      if (m == "counter") {
        st.measure = WindowMeasure::counter;
      } else if (m == "lines") {
        st.measure = WindowMeasure::lines;
      } else if (m == "rate") {
        st.measure = WindowMeasure::rate;
      } else {
        fail(w["measure"], k("measure"),
             "expected counter (the number counts work done), lines (each line is one unit of "
             "work) or rate (the number is itself a rate)");
      }
      if (st.measure == WindowMeasure::lines && ws.source == WindowSpec::Source::log)
        fail(w["measure"], k("measure"),
             "lines counts progress lines; a log has entries: use "
             "counter (the entries' key) or rate");
    }
    if (w["scale"]) {
      st.scale = number(w["scale"], k("scale"));
      if (!(st.scale > 0)) fail(w["scale"], k("scale"), "must be positive (units per count)");
    }
    if (w["unit"]) {
      ws.unit = string(w["unit"], k("unit"));
      if (has_control_char(ws.unit) || ws.unit.size() > 40)
        fail(w["unit"], k("unit"), "expected a short name such as samples/s");
    }
    if (w["warmup"]) st.warmup_s = duration_or_zero(w["warmup"], k("warmup"));
    if (w["warmup_steps"]) {
      st.warmup_steps = number(w["warmup_steps"], k("warmup_steps"));
      if (st.warmup_steps < 0) fail(w["warmup_steps"], k("warmup_steps"), "must be 0 or more");
    }
    if (w["target"]) st.target = fraction(w["target"], k("target"), 0, 0.5);
    if (w["confidence"]) st.confidence = fraction(w["confidence"], k("confidence"), 0.5, 0.999);
    if (w["max"]) ws.max_s = positive_duration(w["max"], k("max"));
    if (w["min"]) st.min_s = duration_or_zero(w["min"], k("min"));
    if (st.min_s > ws.max_s) {
      fail(
          w["min"] ? w["min"] : w["max"], w["min"] ? k("min") : k("max"),
          fmt::format("the window's min ({} s) is longer than its max ({} s)", st.min_s, ws.max_s));
    }
    if (w["startup"]) ws.startup_s = positive_duration(w["startup"], k("startup"));
    if (w["prune"]) ws.prune = boolean(w["prune"], k("prune"));
    return ws;
  }

  // `file: PATH` with one of regex/json/csv, in an objective or a constraint.
  FileMetric file_metric(const YAML::Node& o, const std::string& where,
                         const StudySpec& spec) const {
    const auto k = [&](const char* name) { return where + "." + name; };
    FileMetric m;
    const char* given = nullptr;
    for (const char* key : {"regex", "json", "csv"}) {
      if (!o[key]) continue;
      if (!o["file"])
        fail(o[key], k(key), "needs 'file' (the file the trial wrote to read it from)");
      if (given) {
        fail(o[key], k(key),
             fmt::format("give one of 'regex', 'json' or 'csv' with 'file', not both '{}' and "
                         "'{}'",
                         given, key));
      }
      given = key;
    }
    if (!given) {
      fail(o["file"], k("file"),
           "needs one of 'regex', 'json' or 'csv' to say what to read from the file");
    }
    m.file = template_text(o["file"], k("file"), spec);
    if (m.file.empty()) fail(o["file"], k("file"), "must not be empty");
    if (o["regex"]) {
      m.regex = string(o["regex"], k("regex"));
      if (auto error = regex_error(m.regex)) {
        fail(o["regex"], k("regex"),
             fmt::format("invalid regular expression (RE2 syntax): {}", *error));
      }
    }
    if (o["json"]) {
      m.json = string(o["json"], k("json"));
      if (auto error = json_path_error(m.json)) fail(o["json"], k("json"), *error);
    }
    if (o["number"]) {
      if (o["json"]) {
        fail(o["number"], k("number"),
             "makes no sense with 'json' (a JSON number has one spelling); it is for regex or "
             "csv");
      }
      m.number = number_style(o["number"], k("number"));
    }
    if (const auto& c = o["csv"]) {
      if (c.IsMap()) {
        check_keys(c, k("csv"), {"column", "row"});
        if (!c["column"]) fail(c, k("csv") + ".column", "missing (the column's header name)");
        m.csv = string(c["column"], k("csv") + ".column");
        if (c["row"]) {
          m.csv_row = string(c["row"], k("csv") + ".row");
          if (m.csv_row != "last" && m.csv_row != "first" && m.csv_row != "max" &&
              m.csv_row != "min") {
            fail(c["row"], k("csv") + ".row", "expected last, first, max or min");
          }
        }
      } else {
        m.csv = string(c, k("csv"));
      }
      if (m.csv.empty()) fail(c, k("csv"), "the column's header name must not be empty");
    }
    return m;
  }

  // workdir: trial | study | a path template (relative to the study file's folder).
  void parse_workdir(const YAML::Node& w, StudySpec& spec) const {
    const auto text = template_text(w, "workdir", spec);
    if (text.empty()) fail(w, "workdir", "must not be empty (trial, study or a folder)");
    spec.workdir = text == "trial" ? "{trial_dir}" : text == "study" ? "{study_dir}" : text;
    // A choice that would move the working folder out of where the file puts it is refused now,
    // not when a trial draws it (expand_path_template refuses that trial too).
    const auto names = template_names(text);  // checked above
    for (const auto& name : names ? *names : std::vector<std::string>{}) {
      for (const auto& [p, d] : spec.space) {
        const auto* c = std::get_if<search::CategoricalDistribution>(&d);
        if (p != name || c == nullptr) continue;
        for (const auto& choice : c->choices) {
          if (auto why = path_value_problem(choice)) {
            fail(
                w, "workdir",
                fmt::format("params.{}'s choice '{}' {}: a parameter's value may name a folder "
                            "inside the one '{}' writes, never move the trial out of it (write "
                            "such a path in 'workdir:' itself)",
                            p, escape_controls(search::param_value_to_string(choice)), *why, text));
          }
        }
      }
    }
  }

  // files: [{copy: PATH}, {link: PATH}, {template: PATH, dest: NAME}, {src, mode, dest}].
  void parse_files(const YAML::Node& f, StudySpec& spec) const {
    if (!f.IsSequence()) {
      fail(f, "files",
           "expected a list such as [{copy: input.dat}, {template: HPL.dat.in, dest: HPL.dat}]");
    }
    const fs::path base = fs::absolute(fs::path(file())).parent_path();
    for (std::size_t i = 0; i < f.size(); ++i) {
      const auto where = fmt::format("files[{}]", i);
      const auto& e = f[i];
      if (!e.IsMap()) fail(e, where, "expected a mapping such as {copy: input.dat}");
      check_keys(e, where, {"copy", "link", "template", "src", "mode", "dest"});
      StagedFile sf;
      sf.line = e.Mark().line + 1;
      std::string src_key;
      for (const char* key : {"copy", "link", "template", "src"}) {
        if (!e[key]) continue;
        if (!src_key.empty()) {
          fail(e[key], where + "." + key,
               fmt::format("give one of copy, link, template or src, not both '{}' and '{}'",
                           src_key, key));
        }
        src_key = key;
      }
      if (src_key.empty()) fail(e, where, "needs one of copy, link, template or src (the file)");
      const auto& src_node = e[src_key];
      const auto src_where = where + "." + src_key;
      sf.mode = src_key == "link"       ? StagedFile::Mode::link
                : src_key == "template" ? StagedFile::Mode::render
                                        : StagedFile::Mode::copy;
      if (e["mode"]) {
        if (src_key != "src")
          fail(e["mode"], where + ".mode", "goes with 'src', not '" + src_key + "'");
        const auto mode = string(e["mode"], where + ".mode");
        if (mode == "link") {
          sf.mode = StagedFile::Mode::link;
        } else if (mode == "template") {
          sf.mode = StagedFile::Mode::render;
        } else if (mode != "copy") {
          fail(e["mode"], where + ".mode", "expected copy, link or template");
        }
      }
      const auto src = string(src_node, src_where);
      if (src.empty()) fail(src_node, src_where, "must not be empty");
      const fs::path src_path = (base / src).lexically_normal();
      std::error_code ec;
      if (auto why = staged_source_problem(src_path, sf.mode == StagedFile::Mode::copy))
        fail(src_node, src_where, *why);
      sf.src = src_path.string();
      std::string dest =
          e["dest"] ? string(e["dest"], where + ".dest") : fs::path(src).filename().string();
      if (dest.empty()) fail(e["dest"] ? e["dest"] : e, where + ".dest", "must not be empty");
      const fs::path d(dest);
      bool climbs = false;
      for (const auto& part : d) climbs = climbs || part == "..";
      if (d.is_absolute() || climbs || has_control_char(dest)) {
        fail(e["dest"] ? e["dest"] : e, where + ".dest",
             fmt::format("'{}' must be a path inside the working directory (relative, no '..')",
                         escape_controls(dest)));
      }
      sf.dest = d.lexically_normal().string();
      if (sf.mode == StagedFile::Mode::render) {
        if (!fs::is_regular_file(src_path, ec)) fail(src_node, src_where, "is not a file");
        std::ifstream in(src_path, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        if (!in && !in.eof()) fail(src_node, src_where, "cannot be read");
        sf.text = ss.str();
        if (sf.text.find('\0') != std::string::npos)
          fail(src_node, src_where, "holds a NUL byte; a template is a text file (use copy)");
        check_file_template(src_node, src_where, src, sf.text, spec);
      }
      spec.files.push_back(std::move(sf));
    }
  }

  // A staged template's placeholders, line by line so the error names the template's line too.
  void check_file_template(const YAML::Node& n, const std::string& key, const std::string& name,
                           const std::string& text, const StudySpec& spec) const {
    std::size_t start = 0;
    for (int line = 1; start <= text.size(); ++line) {
      auto end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const std::string one = text.substr(start, end - start);
      try {
        check_template(n, key, one, spec);
      } catch (const SpecError& e) {
        // "FILE:LINE: key 'K': WHAT" -> "FILE:LINE: key 'K': TEMPLATE:N: WHAT"
        const auto at = e.message.find("': ");
        throw SpecError{at == std::string::npos
                            ? e.message
                            : fmt::format("{}{}:{}: {}", e.message.substr(0, at + 3), name, line,
                                          e.message.substr(at + 3))};
      }
      start = end + 1;
    }
  }

  // objective.wall_time: the value is the trial's wall time, so nothing is read from a log or a
  // stream; keys that would say where to read it are contradictions, not silently ignored.
  void parse_wall_time(const YAML::Node& o, const std::string& where, ObjectiveSpec& obj) {
    obj.wall_time = boolean(o["wall_time"], where + ".wall_time");
    if (!obj.wall_time) return;
    for (const char* key : {"key", "entry", "regex", "stream", "intermediate", "step_key"}) {
      if (o[key]) {
        fail(o[key], where + "." + key,
             "makes no sense with wall_time: true (the value is the trial's wall time, read "
             "from no log or stream); remove one of them");
      }
    }
  }

  // Checks across sections, once everything is read.
  void check_wall_time(const YAML::Node& root, const StudySpec& spec) const {
    for (std::size_t i = 0; i < spec.objectives.size(); ++i) {
      if (!spec.objectives[i].window) continue;
      const auto& o = root["objective"];
      if (spec.objectives.size() > 1) {
        fail(o[i]["window"], fmt::format("objective[{}].window", i),
             "a window measures one rate and stops the trial on it: a study with one objective "
             "only (direction, not directions)");
      }
      if (spec.directions[i] != search::Direction::maximize) {
        fail(root["direction"] ? root["direction"] : o["window"],
             root["direction"] ? "direction" : "objective.window",
             "a window measures a rate: use direction: maximize");
      }
      if (root["pruner"] && spec.pruner.value("type", "") != "none") {
        fail(root["pruner"], "pruner",
             "the window prunes by itself (objective.window.prune: a trial whose interval is "
             "clear below the best's); remove 'pruner'");
      }
      if (spec.timeout_s && *spec.timeout_s <= spec.objectives[i].window->max_s) {
        fail(root["timeout"], "timeout",
             fmt::format("{} s is not longer than the window's max ({} s): every trial would time "
                         "out before its window is measured",
                         *spec.timeout_s, spec.objectives[i].window->max_s));
      }
    }
    for (std::size_t i = 0; i < spec.objectives.size(); ++i) {
      if (spec.objectives[i].wall_time && spec.directions[i] != search::Direction::minimize) {
        const char* key = root["directions"] ? "directions" : "direction";
        fail(root[key], key, "wall_time is minimized; use minimize for it");
      }
    }
    if (!spec.objective.wall_time) return;
    if (root["objective"]["log"] && spec.constraints.empty()) {
      fail(root["objective"]["log"], "objective.log",
           "with wall_time: true the log is read only for 'constraints', and there are none");
    }
  }

  void parse_constraints(const YAML::Node& c, StudySpec& spec) {
    if (!c.IsSequence()) fail(c, "constraints", "expected a list of {key, min|max}");
    for (std::size_t i = 0; i < c.size(); ++i) {
      const auto where = fmt::format("constraints[{}]", i);
      check_keys(c[i], where, {"key", "min", "max", "file", "regex", "json", "csv", "number"});
      ConstraintSpec cs;
      if (c[i]["file"] || c[i]["regex"] || c[i]["json"] || c[i]["csv"]) {
        if (c[i]["key"]) {
          fail(c[i]["key"], where + ".key",
               "give either 'key' (a logged metric) or 'file' with regex/json/csv, not both");
        }
        cs.file = file_metric(c[i], where, spec);
      } else {
        if (!c[i]["key"])
          fail(c[i], where + ".key", "missing (the logged metric to bound, or 'file')");
        if (c[i]["number"]) {
          fail(c[i]["number"], where + ".number",
               "is for a number read from text ('file' with regex or csv), not a logged key");
        }
        cs.key = string(c[i]["key"], where + ".key");
      }
      if (c[i]["min"]) cs.min = number(c[i]["min"], where + ".min");
      if (c[i]["max"]) cs.max = number(c[i]["max"], where + ".max");
      if (!cs.min && !cs.max) fail(c[i], where, "needs 'min' or 'max'");
      cs.line = c[i].Mark().line + 1;
      spec.constraints.push_back(cs);
    }
  }

  void parse_launch(const YAML::Node& l, StudySpec& spec) {
    check_keys(l, "launch", {"mpirun", "slurm"});
    if (l["mpirun"] && l["slurm"])
      fail(l["slurm"], "launch.slurm", "give only one of mpirun and slurm: each starts the ranks");
    if (const auto& s = l["slurm"]) {
      parse_slurm(s, spec);
      return;
    }
    const auto& m = l["mpirun"];
    if (!m) return;
    if (m.IsScalar()) {
      spec.launch.mpirun = boolean(m, "launch.mpirun");
      return;
    }
    std::set<std::string> keys = {"program", "oversubscribe", "mca", "extra", "hosts"};
    for (const auto& option : k_mpirun_value_options) keys.insert(option.key);
    check_keys(m, "launch.mpirun", keys);
    auto& ls = spec.launch;
    ls.mpirun = true;
    auto templ = [&](const char* k, std::string& out) {
      if (m[k]) out = template_text(m[k], std::string("launch.mpirun.") + k, spec);
    };
    templ("program", ls.mpirun_program);
    // n, npernode, bind_to, ...: one table (tuner/launch/rendered_launch.h) for parsing and
    // rendering.
    for (const auto& option : k_mpirun_value_options) templ(option.key, ls.*option.spec);
    if (m["oversubscribe"])
      ls.oversubscribe = boolean(m["oversubscribe"], "launch.mpirun.oversubscribe");
    if (const auto& mca = m["mca"]) {
      if (!mca.IsMap()) fail(mca, "launch.mpirun.mca", "expected a mapping PARAM: value");
      for (const auto& kv : mca) {
        const auto name = kv.first.as<std::string>();
        ls.mca.emplace_back(name, template_text(kv.second, "launch.mpirun.mca." + name, spec));
      }
    }
    if (const auto& extra = m["extra"]) {
      if (!extra.IsSequence()) fail(extra, "launch.mpirun.extra", "expected a list");
      ls.extra = template_list(extra, "launch.mpirun.extra", spec);
    }
    if (const auto& hosts = m["hosts"]) {
      if (!hosts.IsSequence() || hosts.size() == 0)
        fail(hosts, "launch.mpirun.hosts", "expected a list of host names, e.g. [node1, node2]");
      if (m["host"]) fail(hosts, "launch.mpirun.hosts", "give either host or hosts, not both");
      ls.hosts = template_list(hosts, "launch.mpirun.hosts", spec);
    }
  }

  // launch.slurm: srun's settings, every one a template (one table: tuner/launch/slurm_launch.h).
  // `slurm: true` is srun with its defaults.
  void parse_slurm(const YAML::Node& s, StudySpec& spec) {
    SlurmLaunchSpec slurm;
    if (s.IsScalar()) {
      if (boolean(s, "launch.slurm")) spec.launch.slurm = slurm;
      return;
    }
    if (!s.IsMap()) fail(s, "launch.slurm", "expected a mapping of srun settings");
    std::set<std::string> keys = {"program", "extra"};
    for (const auto& option : k_srun_value_options) keys.insert(option.key);
    check_keys(s, "launch.slurm", keys);
    auto templ = [&](const char* k, std::string& out) {
      if (s[k]) out = template_text(s[k], std::string("launch.slurm.") + k, spec);
    };
    templ("program", slurm.program);
    for (const auto& option : k_srun_value_options) templ(option.key, slurm.*option.spec);
    if (const auto& extra = s["extra"]) {
      if (!extra.IsSequence()) fail(extra, "launch.slurm.extra", "expected a list");
      slurm.extra = template_list(extra, "launch.slurm.extra", spec);
    }
    spec.launch.slurm = std::move(slurm);
  }

  void parse_rules(const YAML::Node& r, StudySpec& spec) {
    const auto known = fmt::format("{}", fmt::join(rule_names(), ", "));
    if (r.IsScalar() && r.as<std::string>() == "all") {
      spec.rules = rule_names();
      return;
    }
    if (!r.IsSequence())
      fail(r, "rules", fmt::format("expected `all` or a list of rule names ({})", known));
    if (spec.directions.size() > 1)
      fail(r, "rules",
           "a rule is compared with the one best trial; a multi-objective study has a "
           "front (directions)");
    for (std::size_t i = 0; i < r.size(); ++i) {
      const auto where = fmt::format("rules[{}]", i);
      if (!r[i].IsScalar()) fail(r[i], where, "expected a rule name");
      const auto name = r[i].as<std::string>();
      if (std::find(rule_names().begin(), rule_names().end(), name) == rule_names().end())
        fail(r[i], where, fmt::format("unknown rule '{}' (rules: {})", printable(name, 60), known));
      if (std::find(spec.rules.begin(), spec.rules.end(), name) != spec.rules.end())
        fail(r[i], where, fmt::format("rule '{}' is listed twice", name));
      spec.rules.push_back(name);
    }
  }

  void parse_enqueue(const YAML::Node& e, StudySpec& spec) {
    if (!e.IsSequence()) fail(e, "enqueue", "expected a list of {param: value} mappings");
    for (std::size_t i = 0; i < e.size(); ++i) {
      const auto where = fmt::format("enqueue[{}]", i);
      if (!e[i].IsMap()) fail(e[i], where, "expected a mapping param: value");
      std::map<std::string, ParamValue> fixed;
      for (const auto& kv : e[i]) {
        const auto name = kv.first.as<std::string>();
        const auto key = where + "." + name;
        const search::Distribution* dist = nullptr;
        for (const auto& [p, d] : spec.space) {
          if (p == name) dist = &d;
        }
        if (!dist) fail(kv.first, key, "names no parameter of 'params'");
        ParamValue v = value(kv.second, key);
        if (auto internal = search::to_internal(*dist, v); !internal)
          fail(kv.second, key, internal.error());
        fixed[name] = v;
      }
      spec.enqueue.push_back(std::move(fixed));
    }
  }
};

}  // namespace

const char* staged_mode_name(StagedFile::Mode mode) {
  switch (mode) {
    case StagedFile::Mode::link:
      return "link";
    case StagedFile::Mode::render:
      return "template";
    case StagedFile::Mode::copy:
      break;
  }
  return "copy";
}

std::optional<std::string> study_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is not a folder name";
  if (name.find('/') != std::string::npos) return "holds a '/'";
  if (has_control_char(name)) return "holds a control character";
  if (name.size() > 255) return "is longer than 255 bytes";
  return std::nullopt;
}

Result<StudySpec> parse_study_spec(const std::string& yaml_text, const std::string& path) {
  // Duplicate keys, alias bombs and extra documents first, on the event stream: the node tree
  // would hide the first and be unsafe to walk with the second.
  if (auto ok = check_yaml_document(yaml_text, path); !ok) return std::unexpected(ok.error());
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return std::unexpected(yaml_error_message(e, path, yaml_text));
  }
  try {
    Parser parser(path);
    StudySpec spec = parser.parse(root);
    spec.file = path;
    std::error_code ec;
    auto abs = fs::absolute(fs::path(path), ec).parent_path();
    spec.dir = abs.lexically_normal().string();
    return spec;
  } catch (const SpecError& e) {
    return std::unexpected(e.message);
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
}

std::string spec_error(const StudySpec& spec, const std::string& key, const std::string& what) {
  std::string at = key;
  int line = 0;
  while (!at.empty()) {
    if (const auto it = spec.key_lines.find(at); it != spec.key_lines.end()) {
      line = it->second;
      break;
    }
    const auto cut = at.find_last_of(".[");
    at = cut == std::string::npos ? "" : at.substr(0, cut);
  }
  return fmt::format("{}:{}: key '{}': {}", spec.file, line, key, what);
}

std::string objective_label(const ObjectiveSpec& objective) {
  if (objective.file)
    return objective.file->regex.empty() ? objective.file->json + objective.file->csv : "";
  if (objective.wall_time) return "wall_time";
  if (objective.window) return objective.window->unit.empty() ? "rate" : objective.window->unit;
  return objective.use_regex ? "" : objective.key;
}

std::vector<std::string> objective_names(const StudySpec& spec) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < spec.objectives.size(); ++i) {
    const auto& o = spec.objectives[i];
    const auto label = objective_label(o);
    names.push_back(label.empty() ? fmt::format("objective {}", i) : label);
  }
  return names;
}

bool StudySpec::is_kernel_param(const std::string& name) const {
  return std::ranges::any_of(kernel_params, [&](const KernelParam& k) { return k.name == name; });
}

Result<StudySpec> load_study_spec(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return std::unexpected(fmt::format("{}: is a directory, not a study file", path));
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    return std::unexpected(
        fmt::format("{}: cannot read the study file ({})", path, std::strerror(err)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_study_spec(ss.str(), path);
}

}  // namespace tune::tuner
