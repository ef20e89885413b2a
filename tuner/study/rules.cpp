#include "tuner/study/rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "probes/knob_catalog.h"
#include "tuner/study/templates.h"

namespace tune::tuner {
namespace {

using search::ParamValue;

// The parameter a template is exactly a placeholder of ("{threads}" -> "threads"), if any.
std::optional<std::string> sole_placeholder(const std::string& text) {
  if (text.size() < 3 || text.front() != '{' || text.back() != '}') return std::nullopt;
  auto names = template_names(text);
  if (!names || names->size() != 1 || "{" + names->front() + "}" != text) return std::nullopt;
  return names->front();
}

ParamTarget target_of(const probes::Knob& knob, const std::string& variable) {
  const auto& catalog = probes::knob_catalog();
  ParamTarget t;
  t.variable = variable;
  if (catalog.pool(knob.controls) != nullptr)
    t.pool = knob.controls;
  else
    t.control = knob.controls;
  return t;
}

// Pools whose threads do the job's compute (the ones a thread rule sizes).
bool compute_pool(const std::string& pool) {
  return pool == "openmp" || pool == "blas" || pool == "opencv" || pool == "torch_intra_op";
}
bool worker_pool(const std::string& pool) {
  return pool == "iterator_workers" || pool == "dataloader_workers";
}
// Pools that follow OMP_NUM_THREADS when nothing else sizes them.
bool follows_omp_variable(const std::string& pool) {
  const auto* p = probes::knob_catalog().pool(pool);
  return p != nullptr && std::find(p->env.begin(), p->env.end(), "OMP_NUM_THREADS") != p->env.end();
}

std::optional<double> number_of(const ParamValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

// Whether a pool's parameter leaves it to its library (null, or a number below the catalog
// knob's `low`: the bundled trainer's --omp-threads 0 means "not set").
bool unset(const ParamValue& v, const ParamTarget& target) {
  if (std::holds_alternative<std::monostate>(v)) return true;
  const auto n = number_of(v);
  if (!n) return false;
  const auto* knob = probes::knob_catalog().find_variable(target.variable);
  if (knob == nullptr || knob->low.empty()) return false;
  const auto low = probes::evaluate_knob_expression(knob->low, probes::KnobContext{});
  return low && *n < *low;
}

}  // namespace

std::optional<ParamValue> fit_into_domain(const search::Distribution& dist, const ParamValue& want,
                                          bool& clamped) {
  clamped = false;
  const auto target = number_of(want);
  if (const auto* c = std::get_if<search::CategoricalDistribution>(&dist)) {
    for (const auto& choice : c->choices)
      if (choice == want) return choice;
    if (!target) return std::nullopt;
    std::optional<ParamValue> best;
    double gap = 0;
    for (const auto& choice : c->choices) {
      const auto n = number_of(choice);
      if (!n) continue;
      if (!best || std::abs(*n - *target) < gap) {
        best = choice;
        gap = std::abs(*n - *target);
      }
    }
    clamped = best.has_value();
    return best;
  }
  if (!target) return std::nullopt;
  if (const auto* i = std::get_if<search::IntDistribution>(&dist)) {
    auto v = static_cast<std::int64_t>(std::llround(*target));
    v = std::clamp(v, i->low, i->high);
    if (i->step > 1) v = i->low + (v - i->low) / i->step * i->step;
    clamped = static_cast<double>(v) != *target;
    return ParamValue{v};
  }
  const auto& f = std::get<search::FloatDistribution>(dist);
  const double v = std::clamp(*target, f.low, f.high);
  clamped = v != *target;
  return ParamValue{v};
}

namespace {

// One rule worked out on a study: what it wants of each parameter it speaks about.
struct RuleWish {
  std::string why;  // what the rule does, in its own terms
  std::map<std::string, ParamValue> values;
  std::vector<std::string> notes;  // what it could not say in the study's parameters
};

RuleWish wish_of(const std::string& rule, const RuleMachine& m,
                 const std::map<std::string, ParamTarget>& targets,
                 const std::map<std::string, ParamValue>& as_run) {
  RuleWish w;
  const int rpn = std::max(1, m.ranks_per_node);
  const std::int64_t per_rank_pus = std::max(1, m.pus / rpn);
  const std::int64_t per_rank_cores = std::max(1, m.cores / rpn);
  const auto set_binding = [&](const std::string& bind, const std::string& map) {
    for (const auto& [param, t] : targets) {
      if (t.control == "binding") w.values[param] = bind;
      if (t.control == "mapping" && !map.empty()) w.values[param] = map;
    }
  };
  if (rule == "torchrun") {
    w.why = "OMP_NUM_THREADS=1 where unset, no binding";
    for (const auto& [param, t] : targets) {
      const auto it = as_run.find(param);
      if (!t.pool.empty() && follows_omp_variable(t.pool) && it != as_run.end() &&
          unset(it->second, t))
        w.values[param] = std::int64_t{1};
    }
    set_binding("none", "");
  } else if (rule == "lightning") {
    const bool workers = std::any_of(targets.begin(), targets.end(),
                                     [](const auto& t) { return worker_pool(t.second.pool); });
    w.why = fmt::format("threads = PUs / local ranks = {} where unset", per_rank_pus);
    if (workers)
      w.why += fmt::format(", DataLoader workers = PUs / local ranks - 1 = {}",
                           std::max<std::int64_t>(1, per_rank_pus - 1));
    for (const auto& [param, t] : targets) {
      const auto it = as_run.find(param);
      if (!t.pool.empty() && follows_omp_variable(t.pool) && it != as_run.end() &&
          unset(it->second, t))
        w.values[param] = per_rank_pus;
      if (worker_pool(t.pool)) w.values[param] = std::max<std::int64_t>(1, per_rank_pus - 1);
    }
  } else if (rule == "horovodrun") {
    w.why = "-bind-to none -map-by slot";
    set_binding("none", "slot");
  } else if (rule == "openmpi") {
    const bool small = m.ranks <= 2;
    w.why = fmt::format("Open MPI's default binding for np = {}: {}", m.ranks,
                        small ? "core" : "package");
    set_binding(small ? "core" : "socket", small ? "core" : "socket");
    // A binding left to mpirun (null) is this rule already.
    for (const auto& [param, t] : targets) {
      const auto it = as_run.find(param);
      if ((t.control == "binding" || t.control == "mapping") && it != as_run.end() &&
          std::holds_alternative<std::monostate>(it->second))
        w.values[param] = ParamValue{};
    }
  } else if (rule == "cores_per_rank") {
    std::string bind = "none";
    if (per_rank_cores == 1)
      bind = "core";
    else if (rpn == m.packages)
      bind = "socket";
    else if (rpn == m.numa_nodes)
      bind = "numa";
    w.why = fmt::format(
        "every compute pool = physical cores / local ranks = {}, ranks bound to "
        "their cores ({})",
        per_rank_cores, bind);
    if (bind == "none")
      w.notes.push_back(fmt::format(
          "cores_per_rank: a rank's {} cores are no core, package or NUMA node of their own; "
          "the rank is left unbound (mpirun --map-by slot:PE={} would bind it)",
          per_rank_cores, per_rank_cores));
    for (const auto& [param, t] : targets)
      if (compute_pool(t.pool)) w.values[param] = per_rank_cores;
    set_binding(bind, "");
  }
  return w;
}

}  // namespace

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = {"torchrun", "lightning", "horovodrun", "openmpi",
                                                 "cores_per_rank"};
  return names;
}

std::map<std::string, ParamTarget> param_targets(const StudySpec& spec) {
  const auto& catalog = probes::knob_catalog();
  std::map<std::string, ParamTarget> out;
  for (const auto& [name, value] : spec.env) {
    const auto param = sole_placeholder(value);
    const auto* knob = catalog.find_variable(name);
    if (param && knob != nullptr && knob->set_by == "env") out[*param] = target_of(*knob, name);
  }
  if (spec.launch.mpirun) {
    if (const auto p = sole_placeholder(spec.launch.bind_to))
      out[*p] = {"", "binding", "--bind-to"};
    if (const auto p = sole_placeholder(spec.launch.map_by)) out[*p] = {"", "mapping", "--map-by"};
  }
  for (std::size_t i = 0; i < spec.command.size(); ++i) {
    const std::string& arg = spec.command[i];
    std::string flag, value;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (arg.starts_with("-") && i + 1 < spec.command.size()) {
      flag = arg;
      value = spec.command[i + 1];
    }
    const auto param = flag.empty() ? std::nullopt : sole_placeholder(value);
    if (!param) continue;
    const auto* knob = catalog.find_variable(flag);
    if (knob != nullptr && knob->set_by == "flag") out[*param] = target_of(*knob, flag);
  }
  // The study's own declarations win: they say what a flag of the user's script sizes.
  for (const auto& k : spec.probes.knobs) {
    ParamTarget t;
    if (!k.pool.empty()) {
      t.pool = k.pool;
    } else if (const auto* knob = catalog.find(k.knob)) {
      t = target_of(*knob, knob->variable);
    }
    if (!t.pool.empty() || !t.control.empty()) out[k.param] = t;
  }
  return out;
}

std::vector<RuleEntry> enqueue_with_rules(const StudySpec& spec, const RuleMachine& machine,
                                          std::vector<std::string>& notes) {
  std::vector<RuleEntry> entries;
  for (const auto& fixed : spec.enqueue) entries.push_back({fixed, {}, {}, true});
  if (spec.rules.empty()) return entries;
  // The command as run: the first entry, with a parameter it leaves out at null where null is
  // one of its choices (the library's default).
  std::map<std::string, ParamValue> as_run;
  if (!spec.enqueue.empty()) as_run = spec.enqueue.front();
  for (const auto& [name, dist] : spec.space) {
    if (as_run.contains(name)) continue;
    const auto* c = std::get_if<search::CategoricalDistribution>(&dist);
    const bool has_null =
        c != nullptr && std::any_of(c->choices.begin(), c->choices.end(), [](const ParamValue& v) {
          return std::holds_alternative<std::monostate>(v);
        });
    if (!has_null) {
      notes.push_back(fmt::format(
          "rules: none enqueued: a rule changes the command as run (the first `enqueue:` entry), "
          "which does not give parameter '{}'",
          name));
      return entries;
    }
    as_run[name] = ParamValue{};
  }
  const auto targets = param_targets(spec);
  for (const auto& rule : spec.rules) {
    RuleWish wish = wish_of(rule, machine, targets, as_run);
    for (auto& n : wish.notes) notes.push_back(std::move(n));
    auto params = as_run;
    std::vector<std::string> changed;
    for (const auto& [param, want] : wish.values) {
      const auto dist = std::find_if(spec.space.begin(), spec.space.end(),
                                     [&](const auto& p) { return p.first == param; });
      if (dist == spec.space.end()) continue;
      bool clamped = false;
      const auto got = fit_into_domain(dist->second, want, clamped);
      if (!got) {
        notes.push_back(fmt::format("{}: parameter '{}' cannot take {}; left as run", rule, param,
                                    search::param_value_to_string(want)));
        continue;
      }
      if (*got != params[param])
        changed.push_back(fmt::format(
            "{}={}{}", param, search::param_value_to_string(*got),
            clamped ? fmt::format(" (for {})", search::param_value_to_string(want)) : ""));
      params[param] = *got;
    }
    if (wish.values.empty()) {
      notes.push_back(fmt::format("{}: the study has no parameter it sets", rule));
      continue;
    }
    const std::string text =
        fmt::format("{} ({}): {}", rule, wish.why,
                    changed.empty() ? std::string("the command as run")
                                    : fmt::format("{}", fmt::join(changed, " ")));
    // The first entry is compared as run (a parameter it leaves out at null).
    auto same = std::find_if(entries.begin(), entries.end(), [&](const RuleEntry& e) {
      return (!spec.enqueue.empty() && &e == &entries.front() ? as_run : e.params) == params;
    });
    if (same == entries.end()) {
      entries.push_back({std::move(params), {rule}, {text}, false});
    } else {
      same->rules.push_back(rule);
      same->texts.push_back(text);
    }
  }
  return entries;
}

}  // namespace tune::tuner
