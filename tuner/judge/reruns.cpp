#include "tuner/judge/reruns.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

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

std::vector<double> rerun_values_of(const search::StudyView& study, int number) {
  std::vector<double> values;
  for (const auto& t : study.trials()) {
    if (rerun_of(t) != number || !trusted_run(t)) continue;  // measured under load: not counted
    if (auto v = rerun_value(t)) values.push_back(*v);
  }
  return values;
}

std::optional<SettingValue> setting_value(const search::StudyView& study,
                                          const std::map<std::string, double>& params) {
  std::map<int, std::vector<double>> reruns;  // original's number -> its re-runs' values
  for (const auto& t : study.trials()) {
    const auto of = rerun_of(t);
    if (!of) continue;
    if (const auto v = rerun_value(t); v && std::isfinite(*v)) reruns[*of].push_back(*v);
  }
  SettingValue s;
  std::vector<double> runs;
  for (const auto& t : study.trials()) {
    if (t.state != TrialState::complete || !t.value || is_rerun(t) || t.params != params) continue;
    const auto own = search_value(t);
    if (!own || !std::isfinite(*own)) continue;
    if (const auto it = reruns.find(t.number); it != reruns.end()) {
      runs.insert(runs.end(), it->second.begin(), it->second.end());
      s.reruns += static_cast<int>(it->second.size());
    } else {
      runs.push_back(*own);
    }
    s.trials.push_back(t.number);
  }
  if (runs.empty()) return std::nullopt;
  s.value = median(runs);
  s.runs = static_cast<int>(runs.size());
  std::sort(s.trials.begin(), s.trials.end());
  return s;
}

Result<ConfirmPlan> plan_confirm(const search::StudyView& study, int top, int repeats) {
  if (repeats < 1) return std::unexpected("--repeats: must be at least 1");
  if (top < 0) return std::unexpected("--top: must be 0 or more");
  ConfirmPlan plan;
  const FrozenTrial* baseline = find_baseline(study);
  if (baseline == nullptr) {
    plan.note = "the study enqueued no baseline trial; only the top trials are re-run";
  } else if (baseline->state == TrialState::fail) {
    plan.retry_baseline = baseline->number;
    plan.note = fmt::format("the baseline trial #{} did not complete; it is run once more first",
                            baseline->number);
    baseline = nullptr;
  } else if (!baseline->is_finished() || baseline->params.empty()) {
    plan.note =
        fmt::format("the baseline trial #{} has not run yet; it is left out", baseline->number);
    baseline = nullptr;
  } else {
    plan.originals.push_back(baseline->number);
  }
  // The best rule baseline beside the winner: the speedup over the rule is the claim a user
  // acts on, so both sides are re-measured.
  const auto ranked = ranked_trials(study);
  const FrozenTrial* rule = best_rule_trial(ranked);
  if (rule != nullptr && (baseline == nullptr || rule->number != baseline->number))
    plan.originals.push_back(rule->number);
  int taken = 0;
  for (const FrozenTrial* t : ranked) {
    if (taken >= top) break;
    if (baseline != nullptr && t->number == baseline->number) continue;
    if (rule != nullptr && t->number == rule->number) continue;
    plan.originals.push_back(t->number);
    ++taken;
  }
  if (plan.originals.empty() && !plan.retry_baseline)
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
