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

// One rule worked out on a study: what it wants of each parameter it speaks about, or why it
// changes nothing on this machine (`inert`: its tool's condition does not hold).
struct RuleWish {
  std::string why;  // what the rule does, in its own terms
  std::map<std::string, ParamValue> values;
  std::vector<std::string> notes;  // what it could not say in the study's parameters
  std::string inert;
};

// What the rules read of the study and the machine.
struct RuleInputs {
  const RuleMachine& m;
  const std::map<std::string, ParamTarget>& targets;
  const std::map<std::string, ParamValue>& as_run;
  bool omp_set = false;  // OMP_NUM_THREADS is set as run
  int rpn() const { return std::max(1, m.ranks_per_node); }
  std::int64_t per_rank_pus() const { return std::max(1, m.pus / rpn()); }
  std::int64_t per_rank_cores() const { return std::max(1, m.cores / rpn()); }
};

void set_binding(RuleWish& w, const RuleInputs& in, const std::string& bind,
                 const std::string& map) {
  for (const auto& [param, t] : in.targets) {
    if (t.control == "binding") w.values[param] = bind;
    if (t.control == "mapping" && !map.empty()) w.values[param] = map;
  }
}

bool sets_omp_variable(const ParamTarget& t) { return t.variable == "OMP_NUM_THREADS"; }

RuleWish torchrun_wish(const RuleInputs& in) {
  RuleWish w;
  w.why = "OMP_NUM_THREADS=1 where unset with more than one process per node, no binding";
  if (in.rpn() <= 1) {
    w.inert = "one process per node (torchrun sets OMP_NUM_THREADS=1 only with more than one)";
    return w;
  }
  if (in.omp_set) {
    w.inert = "OMP_NUM_THREADS is set as run (torchrun sets it only where unset)";
    return w;
  }
  // OMP_NUM_THREADS=1: its parameter where the study has one (the pools left unset follow it at
  // run time); else each pool left unset that falls back on it takes the 1.
  const bool omp_param = std::any_of(in.targets.begin(), in.targets.end(),
                                     [](const auto& t) { return sets_omp_variable(t.second); });
  for (const auto& [param, t] : in.targets) {
    const auto it = in.as_run.find(param);
    if (omp_param ? sets_omp_variable(t)
                  : !t.pool.empty() && follows_omp_variable(t.pool) && it != in.as_run.end() &&
                        unset(it->second, t))
      w.values[param] = std::int64_t{1};
  }
  set_binding(w, in, "none", "");
  return w;
}

RuleWish lightning_wish(const RuleInputs& in) {
  RuleWish w;
  w.why = fmt::format("torch threads = CPUs / local ranks = {} where OMP_NUM_THREADS is unset",
                      in.per_rank_pus());
  if (in.omp_set) {
    w.inert = "OMP_NUM_THREADS is set as run (Lightning sets threads only where it is unset)";
    return w;
  }
  for (const auto& [param, t] : in.targets)
    if (sets_omp_variable(t) || t.pool == "torch_intra_op" || t.pool == "openmp")
      w.values[param] = in.per_rank_pus();
  return w;
}

RuleWish lightning_workers_wish(const RuleInputs& in) {
  RuleWish w;
  const std::int64_t bound = std::max<std::int64_t>(1, in.per_rank_pus() - 1);
  w.why = fmt::format("DataLoader workers = max(1, CPUs / local ranks - 1) = {} where fewer than 2",
                      bound);
  bool any = false;
  for (const auto& [param, t] : in.targets) {
    if (t.pool != "dataloader_workers") continue;
    any = true;
    const auto it = in.as_run.find(param);
    // Unset: the DataLoader's own default, 0 workers.
    const double workers = it == in.as_run.end() ? 0 : number_of(it->second).value_or(0);
    if (workers < 2 && bound > 1) w.values[param] = bound;
  }
  if (any && w.values.empty())
    w.inert = bound > 1 ? "the DataLoader has 2 or more workers as run (Lightning warns below 2)"
                        : "that bound is not above 1 (Lightning warns only then)";
  return w;
}

RuleWish openmpi_wish(const RuleInputs& in) {
  RuleWish w;
  const auto& m = in.m;
  std::string bind, map;
  if (in.rpn() > m.cores) {
    bind = "none";  // an oversubscribed node: Open MPI clears its default binding
  } else if (m.ranks <= 2) {
    bind = map = "core";
  } else if (m.numa_nodes >= 1) {
    bind = map = "numa";
  } else {
    bind = map = "socket";
  }
  w.why = in.rpn() > m.cores
              ? fmt::format("Open MPI binds nothing when {} ranks oversubscribe {} cores",
                            in.rpn(), m.cores)
              : fmt::format("Open MPI's default binding for np = {}: {}", m.ranks, bind);
  set_binding(w, in, bind, map);
  // A binding left to mpirun (null) is this rule already.
  for (const auto& [param, t] : in.targets) {
    const auto it = in.as_run.find(param);
    if ((t.control == "binding" || t.control == "mapping") && it != in.as_run.end() &&
        std::holds_alternative<std::monostate>(it->second))
      w.values[param] = ParamValue{};
  }
  return w;
}

RuleWish cores_per_rank_wish(const RuleInputs& in) {
  RuleWish w;
  const auto per_rank_cores = in.per_rank_cores();
  std::string bind = "none";
  if (per_rank_cores == 1)
    bind = "core";
  else if (in.rpn() == in.m.packages)
    bind = "socket";
  else if (in.rpn() == in.m.numa_nodes)
    bind = "numa";
  w.why = fmt::format(
      "every compute pool = physical cores / local ranks = {}, ranks bound to their cores ({})",
      per_rank_cores, bind);
  if (bind == "none")
    w.notes.push_back(fmt::format(
        "cores_per_rank: a rank's {} cores are no core, package or NUMA node of their own; "
        "the rank is left unbound (mpirun --map-by slot:PE={} would bind it)",
        per_rank_cores, per_rank_cores));
  for (const auto& [param, t] : in.targets)
    if (compute_pool(t.pool)) w.values[param] = per_rank_cores;
  set_binding(w, in, bind, "");
  return w;
}

RuleWish wish_of(const std::string& rule, const RuleInputs& in) {
  if (rule == "torchrun") return torchrun_wish(in);
  if (rule == "lightning") return lightning_wish(in);
  if (rule == "lightning_workers") return lightning_workers_wish(in);
  if (rule == "openmpi") return openmpi_wish(in);
  if (rule == "cores_per_rank") return cores_per_rank_wish(in);
  RuleWish w;  // horovodrun
  w.why = "-bind-to none -map-by slot";
  set_binding(w, in, "none", "slot");
  return w;
}

// Whether OMP_NUM_THREADS is set as run: its parameter's value, else a literal `env:` entry,
// else the environment trials inherit.
bool omp_set_as_run(const StudySpec& spec, const RuleMachine& m,
                    const std::map<std::string, ParamTarget>& targets,
                    const std::map<std::string, ParamValue>& as_run) {
  for (const auto& [param, t] : targets) {
    if (!sets_omp_variable(t)) continue;
    const auto it = as_run.find(param);
    return it != as_run.end() && !unset(it->second, t);
  }
  for (const auto& [name, value] : spec.env)
    if (name == "OMP_NUM_THREADS") return true;
  return m.omp_env_set;
}

}  // namespace

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = {
      "torchrun", "lightning", "lightning_workers", "horovodrun", "openmpi", "cores_per_rank"};
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
  const RuleInputs inputs{machine, targets, as_run, omp_set_as_run(spec, machine, targets, as_run)};
  // The entry of the command as run (an inert rule labels it); none without `enqueue:`.
  const auto label_as_run = [&](const std::string& rule, const std::string& text) {
    if (entries.empty() || !entries.front().from_enqueue) {
      notes.push_back(text);
      return;
    }
    entries.front().rules.push_back(rule);
    entries.front().texts.push_back(text);
  };
  for (const auto& rule : spec.rules) {
    RuleWish wish = wish_of(rule, inputs);
    for (auto& n : wish.notes) notes.push_back(std::move(n));
    if (!wish.inert.empty()) {
      label_as_run(rule, fmt::format("{} ({}): changes nothing here: {}", rule, wish.why,
                                     wish.inert));
      continue;
    }
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
