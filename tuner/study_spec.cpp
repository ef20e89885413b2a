#include "tuner/study_spec.h"

#include "tuner/objective.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "search/pruner.h"
#include "search/sampler.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::ParamValue;

const std::set<std::string> k_builtins = {"trial_dir",  "trial_number", "study", "study_dir",
                                          "output_dir", "tune_trainer", "nproc"};

// Thrown inside the parser only; turned into the returned error at the top.
struct SpecError {
  std::string message;
};

// Bounds on the document before it becomes a node tree. A real study file has a few hundred
// nodes; the bounds are far above that and far below what would hurt.
constexpr std::uint64_t k_max_nodes = 100'000;  // counting every copy an alias makes
constexpr std::size_t k_max_depth = 64;         // nesting of mappings and sequences

// `text` with control characters written as \xHH, for messages that must stay one line.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

bool has_control_char(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// POSIX's portable environment variable name: the only names a shell can export or unset.
bool is_env_var_name(const std::string& name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// The first pass over the study file, on yaml-cpp's parse events, before any node tree exists.
// yaml-cpp keeps both of two equal keys without a word (lookups see the first, iteration both),
// and it shares an aliased node, so a walk over the tree (to_json, a parameter's choices)
// copies that node once per reference: a 1 KB file of nested aliases becomes gigabytes. Here an
// alias is one event whose expanded size is known from its anchor, so both problems are caught
// at the key and line that cause them, before anything is copied. Not thread-safe; one per parse.
class DocumentCheck : public YAML::EventHandler {
 public:
  explicit DocumentCheck(std::string file) : m_file(std::move(file)) {}

  // The first problem found ("FILE:LINE: key 'a.b': ..."), if any.
  const std::optional<std::string>& error() const { return m_error; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++m_documents > 1)
      fail(mark, "(top level)", "a second YAML document ('---'); a study file holds exactly one");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    leaf(mark, anchor, "null");
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    leaf(mark, anchor, value);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (m_error) return;
    const auto it = m_anchors.find(anchor);
    if (it == m_anchors.end()) {
      // yaml-cpp rejects unknown anchors itself: this one is still open, so the alias sits
      // inside the node it names and the tree would be a cycle.
      return fail(mark, path_of_next(), "a YAML alias inside the node it names (a cycle)");
    }
    if (count(mark, it->second.size)) node(mark, it->second.size, it->second.scalar);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor, /*is_map=*/false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor, /*is_map=*/true);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Anchored {
    std::uint64_t size = 1;             // nodes, aliases expanded
    std::optional<std::string> scalar;  // its text, when a scalar (it may serve as a key)
  };
  struct Frame {
    bool is_map = false;
    YAML::Mark mark;
    std::string path;  // this node's key in the Parser's notation (a.b[2].c); "" for the root
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::uint64_t size = 1;                      // nodes so far, itself included, aliases expanded
    std::size_t index = 0;                       // next item (sequence)
    bool at_key = true;                          // the next node is a key (mapping)
    std::string key;                             // the key whose value comes next (mapping)
    std::unordered_map<std::string, int> lines;  // key -> line of its first occurrence
  };

  void fail(const YAML::Mark& mark, const std::string& path, const std::string& what) {
    if (!m_error) m_error = fmt::format("{}:{}: key '{}': {}", m_file, mark.line + 1, path, what);
  }

  // The key path of the node that starts now.
  std::string path_of_next() const {
    if (m_stack.empty()) return "(top level)";
    const Frame& f = m_stack.back();
    if (!f.is_map) return fmt::format("{}[{}]", f.path, f.index);
    const std::string key = f.at_key ? std::string("(a key)") : printable(f.key);
    return f.path.empty() ? key : f.path + "." + key;
  }

  // Counts `size` more nodes (an alias counts all of its anchor's) toward the bound.
  bool count(const YAML::Mark& mark, std::uint64_t size) {
    m_total += size;
    if (m_total <= k_max_nodes) return true;
    fail(mark, path_of_next(),
         fmt::format("the study file grows past {} nodes once its YAML aliases are expanded "
                     "(an alias bomb?); write the values out instead",
                     k_max_nodes));
    return false;
  }

  // A complete node of `size` nodes (already counted): it advances the enclosing sequence or
  // mapping. A scalar key is checked against the keys before it in the same mapping.
  void node(const YAML::Mark& mark, std::uint64_t size, const std::optional<std::string>& scalar) {
    if (m_stack.empty()) return;
    Frame& f = m_stack.back();
    f.size += size;
    if (!f.is_map) {
      ++f.index;
    } else if (!f.at_key) {
      f.at_key = true;
    } else {
      f.at_key = false;
      f.key = scalar.value_or("(a key)");
      if (!scalar) return;
      const auto [first, inserted] = f.lines.emplace(*scalar, mark.line + 1);
      if (!inserted) {
        const auto key = printable(*scalar);
        fail(mark, f.path.empty() ? key : f.path + "." + key,
             fmt::format("duplicate key (first at line {}); give each key once", first->second));
      }
    }
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string& text) {
    if (m_error) return;
    if (anchor != YAML::NullAnchor) m_anchors[anchor] = Anchored{1, text};
    if (count(mark, 1)) node(mark, 1, text);
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    if (m_error) return;
    Frame f;
    f.is_map = is_map;
    f.mark = mark;
    f.anchor = anchor;
    if (!m_stack.empty()) f.path = path_of_next();
    if (m_stack.size() >= k_max_depth)
      return fail(mark, f.path, fmt::format("nested deeper than {} levels", k_max_depth));
    if (count(mark, 1)) m_stack.push_back(std::move(f));
  }

  void close() {
    if (m_error) return;
    Frame f = std::move(m_stack.back());
    m_stack.pop_back();
    if (f.anchor != YAML::NullAnchor) m_anchors[f.anchor] = Anchored{f.size, std::nullopt};
    node(f.mark, f.size, std::nullopt);
  }

  std::string m_file;
  std::optional<std::string> m_error;
  int m_documents = 0;
  std::uint64_t m_total = 0;  // nodes so far, aliases expanded
  std::vector<Frame> m_stack;
  std::unordered_map<YAML::anchor_t, Anchored> m_anchors;
};

class Parser {
 public:
  explicit Parser(std::string file) : m_file(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& what) const {
    const int line = node.IsDefined() && node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    throw SpecError{fmt::format("{}:{}: key '{}': {}", m_file, line, key, what)};
  }

  void check_keys(const YAML::Node& map, const std::string& where,
                  const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, where, "expected a mapping");
    for (const auto& kv : map) {
      const auto key = kv.first.as<std::string>();
      if (!allowed.contains(key)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(kv.first, join(where, key), fmt::format("unknown key (allowed: {})", list));
      }
    }
  }

  // An error from search/ ("sampler.seed: must be ...") at the line of the key it names.
  [[noreturn]] void fail_in(const YAML::Node& root, const std::string& section,
                            const std::string& error) const {
    const auto colon = error.find(": ");
    std::string key = section;
    std::string what = error;
    if (colon != std::string::npos && error.starts_with(section) &&
        error.substr(0, colon).find(' ') == std::string::npos) {
      key = error.substr(0, colon);
      what = error.substr(colon + 2);
    }
    // The deepest node of the key's path that the file has.
    // (reset(), not operator=: assigning a YAML::Node overwrites the node it refers to.)
    YAML::Node node = root[section];
    std::size_t pos = section.size();
    while (pos < key.size() && key[pos] == '.' && node.IsMap()) {
      const auto end = std::min(key.find('.', pos + 1), key.size());
      const YAML::Node& parent = node;
      const YAML::Node child = parent[key.substr(pos + 1, end - pos - 1)];
      if (!child) break;
      node.reset(child);
      pos = end;
    }
    fail(node, key, what);
  }

  // Why `name` cannot be one component of a path, if it cannot.
  static std::optional<std::string> bad_path_component(const std::string& name) {
    if (name.empty()) return "is empty";
    if (name == "." || name == "..") return "is not a folder name";
    if (name.find('/') != std::string::npos) return "holds a '/'";
    if (has_control_char(name)) return "holds a control character";
    if (name.size() > 255) return "is longer than 255 bytes";
    return std::nullopt;
  }

  static std::string join(const std::string& a, const std::string& b) {
    return a.empty() ? b : a + "." + b;
  }

  std::string string(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "expected a string");
    return n.Scalar();
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) fail(n, key, "expected true or false");
    return v;
  }
  double number(const YAML::Node& n, const std::string& key) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v)) {
      fail(n, key, "expected a finite number");
    }
    return v;
  }
  std::int64_t integer(const YAML::Node& n, const std::string& key) const {
    long long v = 0;
    if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v))
      fail(n, key, "expected an integer");
    return v;
  }
  // A template-able scalar (string, number or bool written as text).
  std::string scalar_text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "expected a scalar value");
    return n.Scalar();
  }

  // YAML scalar -> parameter value with YAML's own typing (null, bool, int, float, string).
  ParamValue value(const YAML::Node& n, const std::string& key) const {
    if (n.IsNull()) return std::monostate{};
    if (!n.IsScalar()) fail(n, key, "expected a scalar value (null, bool, number or string)");
    if (n.Tag() == "!") return n.Scalar();  // quoted: always a string
    long long i = 0;
    if (YAML::convert<long long>::decode(n, i)) return static_cast<std::int64_t>(i);
    double d = 0;
    if (YAML::convert<double>::decode(n, d)) return d;
    bool b = false;
    if (YAML::convert<bool>::decode(n, b)) return b;
    return n.Scalar();
  }

  search::Distribution param(const YAML::Node& n, const std::string& key) const {
    if (n.IsSequence()) {  // shorthand: a list of choices
      search::CategoricalDistribution c;
      for (std::size_t i = 0; i < n.size(); ++i) c.choices.push_back(value(n[i], key));
      return checked(c, n, key);
    }
    check_keys(n, key, {"type", "low", "high", "log", "step", "choices"});
    if (!n["type"]) fail(n, key, "missing 'type' (int, float or categorical)");
    const auto type = string(n["type"], join(key, "type"));
    auto require = [&](const char* k) {
      if (!n[k]) fail(n, join(key, k), fmt::format("required for type {}", type));
      return n[k];
    };
    auto forbid = [&](const char* k) {
      if (n[k]) fail(n[k], join(key, k), fmt::format("not allowed for type {}", type));
    };
    // int and float: the same keys, read as integers or as numbers.
    auto range = [&](auto d, auto read) {
      forbid("choices");
      d.low = (this->*read)(require("low"), join(key, "low"));
      d.high = (this->*read)(require("high"), join(key, "high"));
      if (n["log"]) d.log = boolean(n["log"], join(key, "log"));
      if (n["step"]) d.step = (this->*read)(n["step"], join(key, "step"));
      return checked(d, n, key);
    };
    if (type == "int") return range(search::IntDistribution{}, &Parser::integer);
    if (type == "float") return range(search::FloatDistribution{}, &Parser::number);
    if (type == "categorical") {
      for (const char* k : {"low", "high", "log", "step"}) forbid(k);
      const auto& ch = require("choices");
      if (!ch.IsSequence()) fail(ch, join(key, "choices"), "expected a list");
      search::CategoricalDistribution c;
      for (std::size_t i = 0; i < ch.size(); ++i) c.choices.push_back(value(ch[i], key));
      return checked(c, n, key);
    }
    fail(n["type"], join(key, "type"),
         fmt::format("unknown type '{}' (int, float, categorical)", type));
  }

  search::Distribution checked(search::Distribution d, const YAML::Node& n,
                               const std::string& key) const {
    if (auto ok = search::validate(d); !ok) fail(n, key, ok.error());
    return d;
  }

  // YAML subtree -> JSON (for sampler/pruner sections handed to search/).
  nlohmann::json to_json(const YAML::Node& n, const std::string& key) const {
    if (n.IsMap()) {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : n) {
        const auto k = kv.first.as<std::string>();
        j[k] = to_json(kv.second, join(key, k));
      }
      return j;
    }
    if (n.IsSequence()) {
      nlohmann::json j = nlohmann::json::array();
      for (std::size_t i = 0; i < n.size(); ++i) j.push_back(to_json(n[i], key));
      return j;
    }
    return search::param_value_to_json(value(n, key));
  }

  void check_template(const YAML::Node& n, const std::string& key, const std::string& text,
                      const StudySpec& spec) const {
    auto names = template_names(text);
    if (!names) fail(n, key, names.error());
    for (const auto& name : *names) {
      if (k_builtins.contains(name)) continue;
      bool found = false;
      for (const auto& [p, d] : spec.space) found = found || p == name;
      if (!found) {
        fail(n, key,
             fmt::format("placeholder '{{{}}}' names no parameter of 'params' and no "
                         "built-in (trial_dir, trial_number, study, study_dir, "
                         "output_dir, tune_trainer, nproc)",
                         name));
      }
    }
  }

  StudySpec parse(const YAML::Node& root) {
    StudySpec spec;
    if (!root.IsMap()) fail(root, "(top level)", "the study file must be a YAML mapping");
    check_keys(
        root, "",
        {"name", "direction", "objective", "constraints", "launch", "command", "env", "timeout",
         "params", "sampler", "pruner", "enqueue", "output", "storage", "probes"});
    parse_name_direction(root, spec);
    // Parameters first: templates elsewhere are checked against them.
    if (const auto& params = root["params"]) parse_params(params, spec);
    parse_command(root, spec);
    if (const auto& env = root["env"]) parse_env(env, spec);
    if (const auto& t = root["timeout"]) {
      auto d = parse_duration(scalar_text(t, "timeout"));
      if (!d) fail(t, "timeout", d.error());
      spec.timeout_s = *d;
    }
    if (const auto& o = root["objective"]) parse_objective(o, spec);
    if (const auto& c = root["constraints"]) parse_constraints(c, spec);
    if (const auto& l = root["launch"]) parse_launch(l, spec);
    parse_sampler_pruner(root, spec);
    if (const auto& e = root["enqueue"]) parse_enqueue(e, spec);
    parse_output_storage(root, spec);
    if (const auto& p = root["probes"]) parse_probes(p, spec);
    return spec;
  }

  void parse_name_direction(const YAML::Node& root, StudySpec& spec) {
    if (!root["name"]) fail(root, "name", "missing (the study's name)");
    spec.name = string(root["name"], "name");
    if (auto why = bad_path_component(spec.name)) {
      fail(root["name"], "name",
           fmt::format("'{}' {}: the name is one folder of the output (tune-out/NAME)",
                       printable(spec.name), *why));
    }
    if (root["direction"]) {
      const auto d = string(root["direction"], "direction");
      if (d == "minimize") {
        spec.direction = search::Direction::minimize;
      } else if (d == "maximize") {
        spec.direction = search::Direction::maximize;
      } else {
        fail(root["direction"], "direction", "expected minimize or maximize");
      }
    }
  }

  void parse_params(const YAML::Node& params, StudySpec& spec) {
    if (!params.IsMap()) fail(params, "params", "expected a mapping of name: domain");
    for (const auto& kv : params) {
      const auto name = kv.first.as<std::string>();
      if (k_builtins.contains(name)) {
        fail(kv.first, "params." + name, "is a built-in placeholder name; choose another");
      }
      spec.space.emplace_back(name, param(kv.second, "params." + name));
    }
  }

  void parse_command(const YAML::Node& root, StudySpec& spec) {
    if (!root["command"]) fail(root, "command", "missing (the argv of one trial, a list)");
    const auto& cmd = root["command"];
    if (!cmd.IsSequence() || cmd.size() == 0) fail(cmd, "command", "expected a non-empty list");
    spec.command = template_list(cmd, "command", spec);
  }

  // The strings of a YAML list, each a template checked against the study's placeholders.
  std::vector<std::string> template_list(const YAML::Node& list, const std::string& key,
                                         const StudySpec& spec) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto item = fmt::format("{}[{}]", key, i);
      out.push_back(scalar_text(list[i], item));
      check_template(list[i], item, out.back(), spec);
    }
    return out;
  }

  void parse_env(const YAML::Node& env, StudySpec& spec) {
    if (!env.IsMap()) fail(env, "env", "expected a mapping NAME: value");
    for (const auto& kv : env) {
      const auto name = kv.first.as<std::string>();
      const auto key = "env." + name;
      if (!is_env_var_name(name)) {
        fail(kv.first, "env." + printable(name),
             "not an environment variable name (letters, digits and '_', not starting with "
             "a digit)");
      }
      spec.env.emplace_back(name, scalar_text(kv.second, key));
      check_template(kv.second, key, spec.env.back().second, spec);
    }
  }

  void parse_sampler_pruner(const YAML::Node& root, StudySpec& spec) {
    if (const auto& s = root["sampler"]) {
      if (!s.IsMap())
        fail(s, "sampler", "expected a mapping (type: gp|tpe|random|grid, seed: N, ...)");
      spec.sampler = to_json(s, "sampler");
      // Built once here so that a bad option is a study-file error with its line, not a
      // failure after the database was opened.
      if (auto sampler = search::make_sampler(spec.sampler, spec.space); !sampler)
        fail_in(root, "sampler", sampler.error());
    }
    if (const auto& p = root["pruner"]) {
      if (!p.IsMap()) fail(p, "pruner", "expected a mapping (type: median|percentile|...)");
      spec.pruner = to_json(p, "pruner");
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
                       printable(spec.output)));
    }
    spec.storage = root["storage"] ? string(root["storage"], "storage") : "";
    if (auto why = storage_url_problem(spec.storage))
      fail(root["storage"], "storage", fmt::format("'{}' {}", printable(spec.storage), *why));
  }

  void parse_probes(const YAML::Node& p, StudySpec& spec) {
    check_keys(p, "probes", {"enabled", "constrain", "interval"});
    if (p["enabled"]) spec.probes.enabled = boolean(p["enabled"], "probes.enabled");
    if (p["constrain"]) spec.probes.constrain = boolean(p["constrain"], "probes.constrain");
    if (p["interval"]) {
      auto d = parse_duration(scalar_text(p["interval"], "probes.interval"));
      if (!d || *d <= 0) fail(p["interval"], "probes.interval", "expected a positive duration");
      spec.probes.interval_s = *d;
    }
  }

  void parse_objective(const YAML::Node& o, StudySpec& spec) {
    check_keys(o, "objective",
               {"log", "key", "entry", "regex", "stream", "intermediate", "step_key"});
    auto& obj = spec.objective;
    if (o["regex"]) {
      obj.use_regex = true;
      obj.regex = string(o["regex"], "objective.regex");
      // Checked by the engine that will run it (RE2), so what loads is what runs.
      if (auto error = regex_error(obj.regex)) {
        fail(o["regex"], "objective.regex",
             fmt::format("invalid regular expression (RE2 syntax): {}", *error));
      }
      if (o["log"]) fail(o["log"], "objective.log", "use either 'regex' or 'log', not both");
    }
    if (o["log"]) {
      obj.log = string(o["log"], "objective.log");
      check_template(o["log"], "objective.log", obj.log, spec);
    }
    if (o["key"]) obj.key = string(o["key"], "objective.key");
    if (o["entry"]) {
      obj.entry = string(o["entry"], "objective.entry");
      if (obj.entry != "last" && obj.entry != "first" && obj.entry != "min" && obj.entry != "max") {
        fail(o["entry"], "objective.entry", "expected last, first, min or max");
      }
    }
    if (o["stream"]) {
      obj.stream = string(o["stream"], "objective.stream");
      if (obj.stream != "stdout" && obj.stream != "stderr") {
        fail(o["stream"], "objective.stream", "expected stdout or stderr");
      }
    }
    if (o["intermediate"])
      obj.intermediate_key = string(o["intermediate"], "objective.intermediate");
    if (o["step_key"]) obj.step_key = string(o["step_key"], "objective.step_key");
  }

  void parse_constraints(const YAML::Node& c, StudySpec& spec) {
    if (!c.IsSequence()) fail(c, "constraints", "expected a list of {key, min|max}");
    for (std::size_t i = 0; i < c.size(); ++i) {
      const auto where = fmt::format("constraints[{}]", i);
      check_keys(c[i], where, {"key", "min", "max"});
      ConstraintSpec cs;
      if (!c[i]["key"]) fail(c[i], where + ".key", "missing (the logged metric to bound)");
      cs.key = string(c[i]["key"], where + ".key");
      if (c[i]["min"]) cs.min = number(c[i]["min"], where + ".min");
      if (c[i]["max"]) cs.max = number(c[i]["max"], where + ".max");
      if (!cs.min && !cs.max) fail(c[i], where, "needs 'min' or 'max'");
      cs.line = c[i].Mark().line + 1;
      spec.constraints.push_back(cs);
    }
  }

  void parse_launch(const YAML::Node& l, StudySpec& spec) {
    check_keys(l, "launch", {"mpirun"});
    const auto& m = l["mpirun"];
    if (!m) return;
    if (m.IsScalar()) {
      spec.launch.mpirun = boolean(m, "launch.mpirun");
      return;
    }
    check_keys(m, "launch.mpirun",
               {"program", "n", "npernode", "bind_to", "map_by", "hostfile", "host",
                "oversubscribe", "mca", "extra"});
    auto& ls = spec.launch;
    ls.mpirun = true;
    auto templ = [&](const char* k, std::string& out) {
      if (!m[k]) return;
      const auto key = std::string("launch.mpirun.") + k;
      out = scalar_text(m[k], key);
      check_template(m[k], key, out, spec);
    };
    templ("program", ls.mpirun_program);
    templ("n", ls.n);
    templ("npernode", ls.npernode);
    templ("bind_to", ls.bind_to);
    templ("map_by", ls.map_by);
    templ("hostfile", ls.hostfile);
    templ("host", ls.host);
    if (m["oversubscribe"])
      ls.oversubscribe = boolean(m["oversubscribe"], "launch.mpirun.oversubscribe");
    if (const auto& mca = m["mca"]) {
      if (!mca.IsMap()) fail(mca, "launch.mpirun.mca", "expected a mapping PARAM: value");
      for (const auto& kv : mca) {
        const auto key = "launch.mpirun.mca." + kv.first.as<std::string>();
        ls.mca.emplace_back(kv.first.as<std::string>(), scalar_text(kv.second, key));
        check_template(kv.second, key, ls.mca.back().second, spec);
      }
    }
    if (const auto& extra = m["extra"]) {
      if (!extra.IsSequence()) fail(extra, "launch.mpirun.extra", "expected a list");
      ls.extra = template_list(extra, "launch.mpirun.extra", spec);
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

 private:
  std::string m_file;
};

}  // namespace

Result<std::vector<std::string>> template_names(const std::string& text) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') {
      if (i + 1 < text.size() && text[i + 1] == '{') {
        ++i;
        continue;
      }
      const auto end = text.find('}', i);
      if (end == std::string::npos) {
        return std::unexpected(
            fmt::format("unclosed '{{' in '{}' (write '{{{{' for a literal brace)", text));
      }
      names.push_back(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (text[i] == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        ++i;
        continue;
      }
      return std::unexpected(
          fmt::format("stray '}}' in '{}' (write '}}}}' for a literal brace)", text));
    }
  }
  return names;
}

Result<std::optional<std::string>> expand_template(const std::string& text,
                                                   const TemplateValues& values) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const auto end = text.find('}', i);
    if (end == std::string::npos)
      return std::unexpected(fmt::format("unclosed '{{' in '{}'", text));
    const auto name = text.substr(i + 1, end - i - 1);
    const auto it = values.find(name);
    if (it == values.end())
      return std::unexpected(fmt::format("no value for placeholder '{{{}}}'", name));
    if (std::holds_alternative<std::monostate>(it->second)) return std::optional<std::string>();
    out += search::param_value_to_string(it->second);
    i = end;
  }
  return std::optional<std::string>(std::move(out));
}

std::optional<std::string> storage_url_problem(const std::string& url) {
  constexpr std::string_view k_sqlite = "sqlite:///";
  if (has_control_char(url)) return "holds a control character";
  if (url.contains("://") && !url.starts_with(k_sqlite))
    return "only SQLite is built in (sqlite:///path.db or a file path)";
  if (url == k_sqlite) return "names no database file (sqlite:///path.db)";
  return std::nullopt;
}

Result<double> parse_duration(const std::string& text) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    return std::unexpected(fmt::format("'{}' is not a duration (e.g. 90, 90s, 5m, 2h)", text));
  }
  const auto unit = text.substr(pos);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "m" || unit == "min") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return std::unexpected(fmt::format("'{}' has an unknown unit (use s, ms, m or h)", text));
  }
  if (!std::isfinite(v) || v <= 0)
    return std::unexpected(fmt::format("'{}' must be positive", text));
  return v * scale;
}

Result<StudySpec> parse_study_spec(const std::string& yaml_text, const std::string& path) {
  YAML::Node root;
  try {
    // Duplicate keys, alias bombs and extra documents first, on the event stream: the node
    // tree would hide the first and be unsafe to walk with the second.
    std::istringstream in(yaml_text);
    YAML::Parser events(in);
    DocumentCheck check(path);
    while (events.HandleNextDocument(check) && !check.error()) {
    }
    if (check.error()) return std::unexpected(*check.error());
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("{}:{}: invalid YAML: {}", path, e.mark.line + 1, e.msg));
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
