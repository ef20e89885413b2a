#include "tuner/run/rerun.h"

#include <fmt/format.h>

#include <algorithm>

#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/run/ranking.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

std::optional<int> rerun_of(const FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_rerun_of);
  if (it == t.system_attrs.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int>();
}

std::optional<double> rerun_value(const FrozenTrial& t) {
  if (t.state == TrialState::complete) return t.value;  // stored before re-runs were PRUNED
  const auto it = t.user_attrs.find(k_attr_rerun_value);
  if (t.state != TrialState::pruned || it == t.user_attrs.end() || !it->is_number())
    return std::nullopt;
  return it->get<double>();
}

std::optional<double> search_value(const FrozenTrial& t) {
  const auto it = t.user_attrs.find(k_attr_search_value);
  if (t.state == TrialState::complete && it != t.user_attrs.end() && it->is_number())
    return it->get<double>();
  return t.value;
}

StoredOutcome stored_outcome(const FrozenTrial& trial, TrialState state,
                             std::optional<double> value) {
  if (!rerun_of(trial) || state != TrialState::complete || !value) return {state, value, {}};
  return {TrialState::pruned, std::nullopt, value};
}

std::vector<double> rerun_values_of(const search::StudyView& study, int number) {
  std::vector<double> values;
  for (const auto& t : study.trials()) {
    if (rerun_of(t) != number) continue;
    if (auto v = rerun_value(t)) values.push_back(*v);
  }
  return values;
}

Result<void> believe_reruns(Storage& storage, StudyCache& cache, const FrozenTrial& rerun) {
  const auto of = rerun_of(rerun);
  if (!of) return {};
  if (auto r = cache.sync(); !r) return to_result(r);
  const auto& trials = cache.trials();
  const auto original = std::find_if(trials.begin(), trials.end(),
                                     [&](const FrozenTrial& t) { return t.number == *of; });
  if (original == trials.end() || original->state != TrialState::complete || !original->value)
    return {};  // a re-run of the baseline that failed, say: nothing to believe
  const auto values = rerun_values_of(cache, *of);
  if (values.empty()) return {};
  // The searched value is kept (k_attr_search_value) in the same transaction: the trial is
  // finished, and takes no attribute write of its own.
  auto set =
      storage.set_complete_trial_value(original->trial_id, median(values), k_attr_search_value);
  if (!set) return std::unexpected(set.error().message);
  cache.mark_stale(original->trial_id);
  return to_result(cache.sync());
}

Result<int> enqueue_incumbent_reruns(Storage& storage, StudyCache& cache, BestTracker& tracker,
                                     const search::SearchSpace& space, int repeats) {
  if (repeats <= 0) return 0;
  if (auto r = cache.sync(); !r) return std::unexpected(r.error().message);
  const FrozenTrial* best = tracker.best(cache);
  if (best == nullptr) return 0;
  const int number = best->number;
  if (tracker.has_reruns(cache, number)) return 0;
  auto fixed = fixed_params_of(*best, space);
  if (!fixed) return std::unexpected(fixed.error());
  for (int round = 0; round < repeats; ++round) {
    auto t = storage.create_trial(
        cache.study().study_id, TrialState::waiting,
        {{k_attr_fixed_params, *fixed}, {k_attr_rerun_of, number}, {k_attr_rerun_round, round}});
    if (!t) return std::unexpected(t.error().message);
  }
  if (auto r = cache.sync(); !r) return std::unexpected(r.error().message);
  return repeats;
}

Result<ConfirmPlan> plan_confirm(const search::StudyView& study, int top, int repeats) {
  if (repeats < 1) return std::unexpected("--repeats: must be at least 1");
  if (top < 0) return std::unexpected("--top: must be 0 or more");
  ConfirmPlan plan;
  const FrozenTrial* baseline = find_baseline(study);
  if (baseline == nullptr) {
    plan.note = "the study enqueued no baseline trial; only the top trials are re-run";
  } else if (!baseline->is_finished() || baseline->params.empty()) {
    plan.note =
        fmt::format("the baseline trial #{} has not run yet; it is left out", baseline->number);
    baseline = nullptr;
  } else {
    plan.originals.push_back(baseline->number);
  }
  int taken = 0;
  for (const FrozenTrial* t : ranked_trials(study)) {
    if (taken >= top) break;
    if (baseline != nullptr && t->number == baseline->number) continue;
    plan.originals.push_back(t->number);
    ++taken;
  }
  if (plan.originals.empty())
    return std::unexpected("nothing to confirm: the study has no completed trial and no baseline");
  for (int r = 0; r < repeats; ++r)
    plan.order.insert(plan.order.end(), plan.originals.begin(), plan.originals.end());
  return plan;
}

Result<nlohmann::json> fixed_params_of(const FrozenTrial& trial, const search::SearchSpace& space) {
  nlohmann::json fixed = nlohmann::json::object();
  for (const auto& [name, dist] : space) {
    const auto p = trial.params.find(name);
    if (p == trial.params.end())
      return std::unexpected(fmt::format(
          "trial #{} has no value for parameter '{}' (was the study file changed after it ran?)",
          trial.number, name));
    const auto d = trial.distributions.find(name);
    const auto external =
        search::to_external(d != trial.distributions.end() ? d->second : dist, p->second);
    // The runner converts back with the study file's distribution: make sure that works now.
    if (auto back = search::to_internal(dist, external); !back)
      return std::unexpected(fmt::format("trial #{}: parameter '{}': {} (the study file changed)",
                                         trial.number, name, back.error()));
    fixed[name] = search::param_value_to_json(external);
  }
  return fixed;
}

}  // namespace tune::tuner
