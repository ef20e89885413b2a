#include "tuner/study/study_knobs.h"

#include "probes/predict.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "probes/knob_catalog.h"
#include "tuner/base/text.h"
#include "tuner/study/yaml_reader.h"

namespace tune::tuner {
namespace {

// The program a pool or knob implies: its first program other than "any" (and other than the
// bundled trainer, which is recognised by its executable), "" when there is none.
std::string implied_program(const std::vector<std::string>& programs) {
  for (const auto& p : programs)
    if (p != "any" && p != "tune-trainer") return p;
  return {};
}

std::string program_of_pool(const std::string& pool) {
  for (const probes::Knob* k : probes::knob_catalog().controlling(pool))
    if (auto p = implied_program(k->programs); !p.empty()) return p;
  return {};
}

// Whether every value `dist` can take is an integer (or null: "leave at the default").
bool integer_valued(const search::Distribution& dist) {
  if (std::holds_alternative<search::IntDistribution>(dist)) return true;
  if (const auto* c = std::get_if<search::CategoricalDistribution>(&dist)) {
    return std::all_of(c->choices.begin(), c->choices.end(), [](const search::ParamValue& v) {
      return std::holds_alternative<std::monostate>(v) || std::holds_alternative<std::int64_t>(v);
    });
  }
  return false;
}

std::vector<std::string> pool_names() {
  std::vector<std::string> out;
  for (const auto& p : probes::knob_catalog().pools()) out.push_back(p.name);
  return out;
}

// A pool size as `default:` and `pool_defaults:` take it.
int pool_size(const YamlReader& reader, const YAML::Node& n, const std::string& key) {
  const std::int64_t v = reader.integer(n, key);
  if (v < 0 || v > 1 << 20) reader.fail(n, key, "expected a pool size between 0 and 1048576");
  return static_cast<int>(v);
}

// `name` as a catalog pool, or an error at `n` listing the pools.
std::string catalog_pool(const YamlReader& reader, const YAML::Node& n, const std::string& key) {
  std::string name = reader.string(n, key);
  if (probes::knob_catalog().pool(name) == nullptr)
    reader.fail(n, key,
                fmt::format("unknown pool '{}' (pools: {})", name, fmt::join(pool_names(), ", ")));
  return name;
}

StudyKnob parse_one(const YamlReader& reader, const std::string& param, const YAML::Node& decl,
                    const search::Distribution& dist) {
  const std::string key = "knobs." + param;
  reader.check_keys(decl, key, {"pool", "knob", "default"});
  const probes::KnobCatalog& catalog = probes::knob_catalog();
  const YAML::Node pool = decl["pool"];
  const YAML::Node knob = decl["knob"];
  if (static_cast<bool>(pool) == static_cast<bool>(knob))
    reader.fail(decl, key, "give one of pool: NAME or knob: NAME");
  StudyKnob out;
  out.param = param;
  if (pool) {
    out.pool = reader.string(pool, key + ".pool");
    if (catalog.pool(out.pool) == nullptr)
      reader.fail(
          pool, key + ".pool",
          fmt::format("unknown pool '{}' (pools: {})", out.pool, fmt::join(pool_names(), ", ")));
    out.program = program_of_pool(out.pool);
  } else {
    out.knob = reader.string(knob, key + ".knob");
    const probes::Knob* k = catalog.find(out.knob);
    if (k == nullptr)
      reader.fail(knob, key + ".knob",
                  fmt::format("unknown knob '{}' (the knob catalog, probes/knobs.yaml, lists them)",
                              out.knob));
    if (catalog.pool(k->controls) != nullptr) out.pool = k->controls;
    out.program = implied_program(k->programs);
  }
  if (!out.pool.empty() && !integer_valued(dist))
    reader.fail(decl, key,
                fmt::format("parameter '{}' sizes the {} pool: it must take integer values", param,
                            out.pool));
  if (const YAML::Node def = decl["default"]) {
    if (out.pool.empty())
      reader.fail(def, key + ".default", "only a knob that sizes a pool takes a default");
    out.program_default = pool_size(reader, def, key + ".default");
  }
  return out;
}

}  // namespace

const std::vector<std::string>& program_kinds() {
  static const std::vector<std::string> kinds = {"any", "torch", "chainer", "tune-trainer"};
  return kinds;
}

StudyProgram parse_study_program(const YamlReader& reader, const YAML::Node& node) {
  if (!node.IsMap())
    reader.fail(node, "program", "expected a mapping: {kind: ..., pools: [...], ...}");
  reader.check_keys(node, "program", {"kind", "pools", "pool_defaults", "runtime_threads"});
  StudyProgram out;
  if (const YAML::Node kind = node["kind"]) {
    out.kind = reader.string(kind, "program.kind");
    const auto& kinds = program_kinds();
    if (std::find(kinds.begin(), kinds.end(), out.kind) == kinds.end())
      reader.fail(
          kind, "program.kind",
          fmt::format("unknown program kind '{}' (kinds: {})", out.kind, fmt::join(kinds, ", ")));
  }
  if (const YAML::Node pools = node["pools"]) {
    if (!pools.IsSequence())
      reader.fail(pools, "program.pools", "expected a list of catalog pools, e.g. [blas]");
    for (std::size_t i = 0; i < pools.size(); ++i) {
      const std::string key = fmt::format("program.pools[{}]", i);
      std::string name = catalog_pool(reader, pools[i], key);
      if (std::find(out.pools.begin(), out.pools.end(), name) != out.pools.end())
        reader.fail(pools[i], key, fmt::format("pool '{}' is listed twice", name));
      out.pools.push_back(std::move(name));
    }
  }
  if (const YAML::Node defaults = node["pool_defaults"]) {
    if (!defaults.IsMap())
      reader.fail(defaults, "program.pool_defaults",
                  "expected a mapping of pool: size, e.g. {torch_intra_op: 1}");
    for (const auto& kv : defaults) {
      const std::string key = "program.pool_defaults." + kv.first.Scalar();
      std::string name = catalog_pool(reader, kv.first, key);
      out.pool_defaults.emplace_back(std::move(name), pool_size(reader, kv.second, key));
    }
  }
  if (const YAML::Node rt = node["runtime_threads"]) {
    const std::int64_t n = reader.integer(rt, "program.runtime_threads");
    if (n < 0 || n > 4096)
      reader.fail(rt, "program.runtime_threads", "expected a thread count between 0 and 4096");
    out.runtime_threads = static_cast<int>(n);
  }
  return out;
}

std::vector<StudyKnob> parse_study_knobs(const YamlReader& reader, const YAML::Node& node,
                                         const search::SearchSpace& space) {
  if (!node.IsMap()) reader.fail(node, "knobs", "expected a mapping of parameter: {pool: NAME}");
  std::vector<StudyKnob> out;
  for (const auto& kv : node) {
    const std::string param = kv.first.Scalar();
    const auto it =
        std::find_if(space.begin(), space.end(), [&](const auto& p) { return p.first == param; });
    if (it == space.end())
      reader.fail(kv.first, "knobs." + param, "names no parameter of 'params'");
    out.push_back(parse_one(reader, param, kv.second, it->second));
  }
  return out;
}

probes::ProgramModel study_program_model(probes::ProgramModel base, const StudyProgram& program,
                                         const std::vector<StudyKnob>& knobs,
                                         const search::FrozenTrial& trial) {
  auto pool_of = [&](const std::string& name) {
    auto found = std::find_if(base.pools.begin(), base.pools.end(),
                              [&](const probes::PoolModel& p) { return p.pool == name; });
    if (found != base.pools.end()) return found;
    base.pools.emplace_back();
    base.pools.back().pool = name;
    return std::prev(base.pools.end());
  };
  if (!program.kind.empty()) base.program = program.kind;
  for (const std::string& name : program.pools) pool_of(name);
  for (const auto& [name, size] : program.pool_defaults) pool_of(name)->program_default = size;
  if (program.runtime_threads) base.runtime_threads = *program.runtime_threads;
  for (const StudyKnob& k : knobs) {
    if (base.program == "any" && !k.program.empty()) base.program = k.program;
    if (k.pool.empty()) continue;
    const auto found = pool_of(k.pool);
    if (k.program_default) found->program_default = k.program_default;
    const auto value = trial.params.find(k.param);
    const auto dist = trial.distributions.find(k.param);
    if (value == trial.params.end() || dist == trial.distributions.end()) continue;
    const search::ParamValue v = search::to_external(dist->second, value->second);
    if (const auto* n = std::get_if<std::int64_t>(&v)) {
      found->value = static_cast<int>(*n);
      found->value_detail = fmt::format("{{{}}} = {} (study knob)", k.param, *n);
    }
  }
  return base;
}

}  // namespace tune::tuner
