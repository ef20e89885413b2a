// Re-runs: trials that re-measure another trial's settings (`tune confirm`, `incumbent_repeats:`),
// how they are stored so that python3-optuna ranks what tune ranks, a setting's believed value,
// and `tune confirm`'s plan. Stateless functions; thread-safe.
// Design: docs/design-notes.md#tunerjudgererunsh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"

namespace tune::tuner {

// rerun_of(t), the number of the trial `t` re-measures: base/trial_attrs.h, beside its key.
// A completed re-run's measured value (either storage form); none when it did not complete.
std::optional<double> rerun_value(const search::FrozenTrial& t);
// The value of a trial's own run: search_value when re-measured, else its value.
std::optional<double> search_value(const search::FrozenTrial& t);
// The measured values of the completed re-runs of trial `number`, in number order; those
// measured under load (ranking.h measured_under_load) are left out.
std::vector<double> rerun_values_of(const search::StudyView& study, int number);

// A setting's believed value, as `tune export` names it: the median of the runs behind the
// believed values of every ranked trial (ranking.h) with these parameters: each one's re-runs
// when it has any (its own run, picked for being good, left out), else its own run. These are
// the runs the noise model pools for a setting (noise.h), so a lucky single run of a setting that
// re-runs measured lower is never named for it.
struct SettingValue {
  double value = 0;         // the median
  int runs = 0;             // the runs it is the median of
  int reruns = 0;           // of which re-runs
  std::vector<int> trials;  // the ranked trials of the setting, number order
};
// None when no ranked trial has `params` (or none has a finite value).
std::optional<SettingValue> setting_value(const search::StudyView& study,
                                          const std::map<std::string, double>& params);

// `tune confirm`'s re-runs: which trials (the baseline, then the best), in which order.
struct ConfirmPlan {
  // The baseline first (when there is one), the best rule baseline (ranking.h best_rule_trial)
  // when it is another trial, then the best `top` others, best first.
  std::vector<int> originals;
  std::vector<int> order;  // trial numbers to re-run, round-robin over `originals`
  std::string note;        // e.g. why the baseline is missing
  // A baseline whose last attempt failed (judge/attempts.h): that attempt's number, run again
  // once as a new attempt (a re-run of a failed trial would measure nothing it could stand for).
  std::optional<int> retry_baseline;
};

// Which trials to re-run and in which order. Error when there is nothing to confirm.
Result<ConfirmPlan> plan_confirm(const search::StudyView& study, int top, int repeats);

// The fixed_params of a re-run of `trial`: its external values for every parameter of `space`.
Result<nlohmann::json> fixed_params_of(const search::FrozenTrial& trial,
                                       const search::SearchSpace& space);

}  // namespace tune::tuner
