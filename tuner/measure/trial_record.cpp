#include "tuner/measure/trial_record.h"

#include <algorithm>

#include "tuner/base/trial_attrs.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

TrialEnd end_of_trial(const FrozenTrial& trial, const TrialRun& ran) {
  const LaunchResult& res = ran.launch;
  TrialEnd end;
  TrialOutcome& outcome = end.outcome;
  outcome = ran.unrun ? *ran.unrun : classify_outcome(res, ran.context, ran.readings);
  if (ran.run_constraint) outcome.constraints.push_back(*ran.run_constraint);
  FinalRecord& record = end.record;
  auto& user = record.user_attrs;
  auto& system = record.system_attrs;
  if (ran.launched) user[k_attr_wall_time] = res.wall_s;
  if (ran.launched && res.cleanup_s > 0) user[k_attr_cleanup_time] = res.cleanup_s;
  if (res.started) {
    user[k_attr_exit_code] = res.signal ? nlohmann::json() : nlohmann::json(res.exit_code);
    if (res.signal) user[k_attr_signal] = res.signal;
    system[k_attr_containment] = res.containment;
    // The trial wrote more than the cap: its files hold the head and tail only.
    if (!res.output_cut.empty()) system[k_attr_output_cut] = res.output_cut;
  }
  if (!outcome.constraints.empty()) system[k_attr_constraints] = outcome.constraints;
  if (!outcome.reason.empty()) system[k_attr_fail_reason] = outcome.reason;
  if (outcome.cut_short) system[k_attr_cut_short] = true;
  for (const auto& [key, value] : ran.end_attrs.items()) system[key] = value;
  if (!ran.window_attrs.is_null()) user[k_attr_window] = ran.window_attrs;
  record.state = outcome.state;
  if (!outcome.values.empty()) {
    record.values = outcome.values;
  } else if (outcome.value) {
    record.values = {*outcome.value};
  }
  // A completed re-run is stored as PRUNED with no value and its measurement in the user attr
  // rerun_value, so that Optuna never ranks a lucky repeat (judge/reruns.h).
  if (rerun_of(trial) && outcome.state == TrialState::complete && outcome.value) {
    user[k_attr_rerun_value] = *outcome.value;
    record.rerun = true;
    record.state = TrialState::pruned;
    if (outcome.values.empty()) record.values.clear();
  }
  record.intermediate_values = trial.intermediate_values;
  // A loser stopped by its window: its estimate as its last intermediate value.
  const bool window_estimate =
      ran.window_points > 0 && outcome.state == TrialState::pruned && outcome.value;
  if (window_estimate) record.intermediate_values[ran.window_points] = *outcome.value;
  // Writes failed during the run, so some of these may be missing: all are stored with the end.
  record.with_intermediate = !ran.storage_error.empty() || window_estimate;
  return end;
}

}  // namespace tune::tuner
