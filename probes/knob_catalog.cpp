#include "probes/knob_catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <yaml-cpp/yaml.h>

#include "embedded/knobs_yaml.h"

namespace tune::probes {
namespace {

// Thrown while parsing; parse() returns it as its error.
struct CatalogError {
  std::string message;
};

const std::set<std::string> k_set_by = {"env", "flag", "mpirun", "mca"};
const std::set<std::string> k_types = {"int", "float", "bool", "choice", "bytes"};
const std::set<std::string> k_when = {"", "smt", "multi_package", "multi_numa", "gpus"};
const std::map<std::string, PoolBusy> k_busy = {{"all", PoolBusy::all},
                                                {"spin", PoolBusy::spin},
                                                {"turns", PoolBusy::turns},
                                                {"idle", PoolBusy::idle}};

// 'text', built by append: GCC 12 warns (-Wrestrict, a false positive) on "'" + string.
std::string quoted(std::string_view text) {
  std::string out = "'";
  out.append(text);
  out += '\'';
  return out;
}

bool numeric_type(const std::string& type) {
  return type == "int" || type == "float" || type == "bytes";
}

std::optional<double> parse_number(std::string_view text) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

// Reads the YAML tree into a KnobCatalog, checking every field; a friend of KnobCatalog.
class KnobCatalogParser {
 public:
  explicit KnobCatalogParser(std::string file) : m_file(std::move(file)) {}

  KnobCatalog read(const YAML::Node& root) {
    check_keys(root, "", {"schema_version", "programs", "other_controls", "pools", "knobs"});
    if (integer(required(root, "schema_version", ""), "schema_version") != 1)
      fail(root["schema_version"], "schema_version", "this build reads version 1");
    KnobCatalog c;
    c.m_programs = strings(required(root, "programs", ""), "programs");
    c.m_other_controls = strings(required(root, "other_controls", ""), "other_controls");
    const YAML::Node pools = required(root, "pools", "");
    if (!pools.IsMap()) fail(pools, "pools", "expected a mapping of pool names");
    for (const auto& kv : pools) c.m_pools.push_back(read_pool(kv.first.Scalar(), kv.second));
    const YAML::Node knobs = required(root, "knobs", "");
    if (!knobs.IsSequence()) fail(knobs, "knobs", "expected a list of knobs");
    std::set<std::string> names;
    for (std::size_t i = 0; i < knobs.size(); ++i) {
      Knob k = read_knob(knobs[i], "knobs[" + std::to_string(i) + "]", c);
      if (!names.insert(k.name).second) fail(knobs[i], "knobs." + k.name, "duplicate knob name");
      c.m_knobs.push_back(std::move(k));
    }
    check_pool_references(c, pools);
    return c;
  }

 private:
  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& what) const {
    const int line = node.IsDefined() && node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    throw CatalogError{m_file + ":" + std::to_string(line) + ": key '" + key + "': " + what};
  }

  void check_keys(const YAML::Node& map, const std::string& where,
                  const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, where, "expected a mapping");
    for (const auto& kv : map)
      if (!allowed.contains(kv.first.Scalar()))
        fail(kv.first, where.empty() ? kv.first.Scalar() : where + "." + kv.first.Scalar(),
             "unknown key");
  }

  YAML::Node required(const YAML::Node& map, const std::string& key,
                      const std::string& where) const {
    const YAML::Node& m = map;
    YAML::Node n = m[key];
    if (!n) fail(map, where.empty() ? key : where + "." + key, "missing");
    return n;
  }

  std::string text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "expected a string");
    return n.Scalar();
  }

  bool boolean(const YAML::Node& n, const std::string& key) const {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) fail(n, key, "expected true or false");
    return v;
  }

  long long integer(const YAML::Node& n, const std::string& key) const {
    long long v = 0;
    if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v))
      fail(n, key, "expected an integer");
    return v;
  }

  std::vector<std::string> strings(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) fail(n, key, "expected a list");
    std::vector<std::string> out;
    for (const auto& e : n) out.push_back(text(e, key));
    return out;
  }

  // An optional key's text, "" when absent.
  std::string optional_text(const YAML::Node& map, const std::string& key,
                            const std::string& where) const {
    const YAML::Node& m = map;
    const YAML::Node n = m[key];
    return n ? text(n, where + "." + key) : std::string();
  }

  void check_expression(const YAML::Node& n, const std::string& key) const {
    if (auto v = evaluate_knob_expression(text(n, key), KnobContext{}); !v) fail(n, key, v.error());
  }

  KnobPool read_pool(const std::string& name, const YAML::Node& n) {
    const std::string where = "pools." + name;
    check_keys(n, where,
               {"unit", "counts_caller", "busy", "env", "env_capped", "default", "default_text",
                "includes", "libraries"});
    KnobPool p;
    p.name = name;
    p.unit = text(required(n, "unit", where), where + ".unit");
    if (p.unit != "thread" && p.unit != "process")
      fail(n["unit"], where + ".unit", "expected thread or process");
    const YAML::Node& m = n;
    if (m["counts_caller"]) p.counts_caller = boolean(m["counts_caller"], where + ".counts_caller");
    const std::string busy = text(required(n, "busy", where), where + ".busy");
    if (!k_busy.contains(busy)) fail(m["busy"], where + ".busy", "expected all|spin|turns|idle");
    p.busy = k_busy.at(busy);
    p.env = strings(required(n, "env", where), where + ".env");
    if (m["env_capped"]) p.env_capped = boolean(m["env_capped"], where + ".env_capped");
    p.default_expr = text(required(n, "default", where), where + ".default");
    check_expression(m["default"], where + ".default");
    p.default_text = text(required(n, "default_text", where), where + ".default_text");
    if (m["includes"]) p.includes = strings(m["includes"], where + ".includes");
    if (m["libraries"]) p.libraries = strings(m["libraries"], where + ".libraries");
    return p;
  }

  std::vector<KnobChoice> read_choices(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence() || n.size() == 0) fail(n, key, "expected a non-empty list of choices");
    std::vector<KnobChoice> out;
    for (const auto& e : n) {
      KnobChoice c;
      if (e.IsMap()) {
        check_keys(e, key, {"value", "when"});
        c.value = text(required(e, "value", key), key + ".value");
        c.when = optional_text(e, "when", key);
        if (!k_when.contains(c.when) && c.when != "file")
          fail(e["when"], key + ".when", "expected smt|multi_package|multi_numa|gpus|file");
        if (c.when == "file" && !c.value.starts_with("/"))
          fail(e["value"], key + ".value", "a `when: file` choice is an absolute path");
      } else {
        c.value = text(e, key);
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  Knob read_knob(const YAML::Node& n, const std::string& at, const KnobCatalog& c) {
    check_keys(n, at,
               {"name", "set_by", "variable", "example", "controls", "type", "low", "high",
                "choices", "log", "default", "default_text", "programs", "requires", "note", "when",
                "affects", "busy"});
    Knob k;
    k.name = text(required(n, "name", at), at + ".name");
    const std::string where = "knobs." + k.name;
    const YAML::Node& m = n;
    k.set_by = text(required(n, "set_by", where), where + ".set_by");
    if (!k_set_by.contains(k.set_by))
      fail(m["set_by"], where + ".set_by", "expected env|flag|mpirun|mca");
    k.variable = text(required(n, "variable", where), where + ".variable");
    if (k.variable.empty() && k.set_by != "flag")
      fail(m["variable"], where + ".variable", "only a flag of the user's script may be empty");
    k.example = optional_text(n, "example", where);
    k.controls = text(required(n, "controls", where), where + ".controls");
    if (!c.is_control(k.controls))
      fail(m["controls"], where + ".controls",
           "'" + k.controls + "' is neither a pool nor in other_controls");
    k.type = text(required(n, "type", where), where + ".type");
    if (!k_types.contains(k.type))
      fail(m["type"], where + ".type", "expected int|float|bool|choice|bytes");
    if (numeric_type(k.type)) {
      k.low = text(required(n, "low", where), where + ".low");
      check_expression(m["low"], where + ".low");
      k.high = text(required(n, "high", where), where + ".high");
      check_expression(m["high"], where + ".high");
    } else if (m["low"] || m["high"]) {
      fail(m["low"] ? m["low"] : m["high"], where, "low/high are for int, float and bytes knobs");
    }
    if (k.type == "choice")
      k.choices = read_choices(required(n, "choices", where), where + ".choices");
    else if (m["choices"])
      fail(m["choices"], where + ".choices", "only a choice knob has choices");
    if (m["log"]) k.log = boolean(m["log"], where + ".log");
    k.default_value = text(required(n, "default", where), where + ".default");
    check_default(k, m["default"], where + ".default", c);
    k.default_text = text(required(n, "default_text", where), where + ".default_text");
    k.programs = strings(required(n, "programs", where), where + ".programs");
    for (const auto& p : k.programs)
      if (std::find(c.m_programs.begin(), c.m_programs.end(), p) == c.m_programs.end())
        fail(m["programs"], where + ".programs", "unknown program '" + p + "' (see programs:)");
    if (m["requires"]) k.needs = strings(m["requires"], where + ".requires");
    k.note = optional_text(n, "note", where);
    k.when = optional_text(n, "when", where);
    if (!k_when.contains(k.when))
      fail(m["when"], where + ".when", "expected smt|multi_package|multi_numa|gpus");
    k.affects = optional_text(n, "affects", where);
    if (!k.affects.empty() && c.pool(k.affects) == nullptr)
      fail(m["affects"], where + ".affects", "'" + k.affects + "' is not a pool");
    if (m["busy"]) k.busy = read_busy_rules(m["busy"], where + ".busy", k);
    return k;
  }

  // `busy: {value: all|spin|turns|idle, ">N": ...}`, in the order written.
  std::vector<std::pair<std::string, PoolBusy>> read_busy_rules(const YAML::Node& n,
                                                                const std::string& key,
                                                                const Knob& k) const {
    if (k.affects.empty()) fail(n, key, "busy rules need `affects:` (the pool they change)");
    if (!n.IsMap() || n.size() == 0) fail(n, key, "expected a mapping of values to busy models");
    std::vector<std::pair<std::string, PoolBusy>> out;
    for (const auto& kv : n) {
      const std::string value = kv.first.Scalar();
      if (value.starts_with(">") && !parse_number(value.substr(1)))
        fail(kv.first, key + "." + value, "expected >N with a number N");
      const std::string model = text(kv.second, key + "." + value);
      if (!k_busy.contains(model)) fail(kv.second, key + "." + value, "expected all|spin|turns|idle");
      out.emplace_back(value, k_busy.at(model));
    }
    return out;
  }

  // A default is "default" (the library's choice), "pool" (the pool's), or a value of the type.
  void check_default(const Knob& k, const YAML::Node& n, const std::string& key,
                     const KnobCatalog& c) const {
    const std::string& v = k.default_value;
    if (v == "default") return;
    if (v == "pool") {
      if (c.pool(k.controls) == nullptr) fail(n, key, "'pool' needs a knob that controls a pool");
      return;
    }
    if (k.type == "bool" && v != "true" && v != "false") fail(n, key, "expected true or false");
    if (numeric_type(k.type) && !parse_number(v)) fail(n, key, "expected a number");
    if (k.type == "int" || k.type == "bytes") {
      long long whole = 0;
      if (!YAML::convert<long long>::decode(n, whole)) fail(n, key, "expected an integer");
    }
    if (k.type == "choice" && std::none_of(k.choices.begin(), k.choices.end(),
                                           [&](const KnobChoice& ch) { return ch.value == v; }))
      fail(n, key, "'" + v + "' is not one of the choices");
  }

  // Every variable a pool reads is an env knob, and every pool a pool includes exists.
  void check_pool_references(const KnobCatalog& c, const YAML::Node& pools) const {
    for (const KnobPool& p : c.m_pools) {
      const YAML::Node& all = pools;
      for (const auto& v : p.env) {
        const Knob* k = c.find_variable(v);
        if (k == nullptr || k->set_by != "env")
          fail(all[p.name]["env"], "pools." + p.name + ".env", "'" + v + "' is not an env knob");
      }
      for (const auto& inc : p.includes)
        if (c.pool(inc) == nullptr)
          fail(all[p.name]["includes"], "pools." + p.name + ".includes",
               "'" + inc + "' is not a pool");
    }
  }

  std::string m_file;
};

bool machine_has(std::string_view when, const KnobContext& ctx, std::string_view value) {
  if (when == "smt") return ctx.pus > ctx.cores;
  if (when == "multi_package") return ctx.packages > 1;
  if (when == "multi_numa") return ctx.numa_nodes > 1;
  if (when == "gpus") return ctx.gpus > 0;
  if (when == "file") {
    const std::string path(value);
    if (ctx.file_exists) return ctx.file_exists(path);
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
  }
  return true;
}

std::optional<PoolBusy> knob_busy(const Knob& knob, std::string_view value) {
  auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) ==
                    std::tolower(static_cast<unsigned char>(y));
           });
  };
  const auto number = parse_number(value);
  for (const auto& [rule, busy] : knob.busy) {
    if (rule.starts_with(">")) {
      if (number && *number > parse_number(std::string_view(rule).substr(1)).value_or(0))
        return busy;
    } else if (same(rule, value) || (number && parse_number(rule) == number)) {
      return busy;
    }
  }
  return std::nullopt;
}

bool Knob::applies_to(std::string_view program) const {
  return std::any_of(programs.begin(), programs.end(),
                     [&](const std::string& p) { return p == "any" || p == program; });
}

int KnobContext::pus_per_rank() const {
  if (cpuset_pus > 0) return cpuset_pus;
  return std::max(1, pus / std::max(1, ranks_per_node));
}

int KnobContext::cores_per_rank() const { return std::max(1, cores / std::max(1, ranks_per_node)); }

KnobContext knob_context(const Topology& topo, int ranks_per_node) {
  KnobContext ctx;
  ctx.pus = std::max(1, topo.pu_count());
  ctx.cores = std::max(1, topo.core_count());
  ctx.packages = std::max<int>(1, static_cast<int>(topo.packages.size()));
  ctx.numa_nodes = std::max<int>(1, static_cast<int>(topo.numa_nodes.size()));
  ctx.gpus = static_cast<int>(topo.gpus.size());
  ctx.ranks_per_node = std::max(1, ranks_per_node);
  return ctx;
}

std::expected<double, std::string> evaluate_knob_expression(std::string_view expr,
                                                            const KnobContext& ctx) {
  double factor = 1;
  std::string_view name = expr;
  if (const auto star = expr.find('*'); star != std::string_view::npos) {
    const auto k = parse_number(expr.substr(0, star));
    if (!k) return std::unexpected(quoted(expr) + ": expected K*name");
    factor = *k;
    name = expr.substr(star + 1);
  }
  if (const auto v = parse_number(name)) return factor * *v;
  const std::map<std::string_view, int> names = {
      {"pus", ctx.pus},
      {"cores", ctx.cores},
      {"packages", ctx.packages},
      {"numa_nodes", ctx.numa_nodes},
      {"gpus", ctx.gpus},
      {"ranks_per_node", ctx.ranks_per_node},
      {"pus_per_rank", ctx.pus_per_rank()},
      {"cores_per_rank", ctx.cores_per_rank()},
      {"cpuset_pus", ctx.pus_per_rank()},
  };
  const auto it = names.find(name);
  if (it == names.end())
    return std::unexpected(quoted(expr) +
                           ": unknown name (pus, cores, packages, numa_nodes, gpus, "
                           "ranks_per_node, pus_per_rank, cores_per_rank, cpuset_pus)");
  return factor * it->second;
}

std::expected<KnobCatalog, std::string> KnobCatalog::parse(const std::string& yaml_text,
                                                           const std::string& file) {
  try {
    return KnobCatalogParser(file).read(YAML::Load(yaml_text));
  } catch (const CatalogError& e) {
    return std::unexpected(e.message);
  } catch (const YAML::Exception& e) {
    return std::unexpected(file + ":" + std::to_string(e.mark.line + 1) +
                           ": invalid YAML: " + e.msg);
  }
}

const Knob* KnobCatalog::find(std::string_view name) const {
  for (const Knob& k : m_knobs)
    if (k.name == name) return &k;
  return nullptr;
}

const Knob* KnobCatalog::find_variable(std::string_view variable, std::string_view program) const {
  const Knob* first = nullptr;
  for (const Knob& k : m_knobs) {
    if (k.variable.empty() || k.variable != variable) continue;
    if (program.empty() || k.applies_to(program)) return &k;
    if (first == nullptr && k.set_by != "flag") first = &k;  // env and MCA names are global
  }
  return first;
}

const KnobPool* KnobCatalog::pool(std::string_view name) const {
  for (const KnobPool& p : m_pools)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<const Knob*> KnobCatalog::controlling(std::string_view pool_or_control) const {
  std::vector<const Knob*> out;
  for (const Knob& k : m_knobs)
    if (k.controls == pool_or_control) out.push_back(&k);
  return out;
}

std::vector<const Knob*> KnobCatalog::for_program(std::string_view program) const {
  std::vector<const Knob*> out;
  for (const Knob& k : m_knobs)
    if (k.applies_to(program)) out.push_back(&k);
  return out;
}

bool KnobCatalog::is_control(std::string_view name) const {
  return pool(name) != nullptr || std::find(m_other_controls.begin(), m_other_controls.end(),
                                            name) != m_other_controls.end();
}

std::expected<KnobRange, std::string> KnobCatalog::resolve(const Knob& knob,
                                                           const KnobContext& ctx) const {
  KnobRange r;
  r.type = knob.type;
  r.log = knob.log;
  if (knob.type == "bool") {
    r.choices = {"false", "true"};
  } else if (knob.type == "choice") {
    for (const KnobChoice& c : knob.choices)
      if (machine_has(c.when, ctx, c.value)) r.choices.push_back(c.value);
  } else {
    auto low = evaluate_knob_expression(knob.low, ctx);
    auto high = evaluate_knob_expression(knob.high, ctx);
    if (!low) return std::unexpected("knob " + knob.name + ": low " + low.error());
    if (!high) return std::unexpected("knob " + knob.name + ": high " + high.error());
    r.low = *low;
    r.high = std::max(*low, *high);  // one PU per rank still leaves a one-value range
  }
  return r;
}

int KnobCatalog::pool_default(const KnobPool& pool, const KnobContext& ctx) const {
  const auto v = evaluate_knob_expression(pool.default_expr, ctx);
  return v ? static_cast<int>(*v) : 0;  // parse() evaluated every default once
}

std::optional<double> KnobCatalog::default_number(const Knob& knob, const KnobContext& ctx) const {
  if (knob.default_value == "pool") {
    const KnobPool* p = pool(knob.controls);
    return p ? std::optional<double>(pool_default(*p, ctx)) : std::nullopt;
  }
  return parse_number(knob.default_value);
}

const KnobCatalog& knob_catalog() {
  static const KnobCatalog catalog = [] {
    auto parsed = KnobCatalog::parse(std::string(embedded::k_knobs_yaml), "probes/knobs.yaml");
    if (!parsed) {
      std::fprintf(stderr, "tune: the embedded knob catalog is broken: %s\n",
                   parsed.error().c_str());
      std::abort();
    }
    return std::move(*parsed);
  }();
  return catalog;
}

std::string_view knob_catalog_text() { return embedded::k_knobs_yaml; }

}  // namespace tune::probes
