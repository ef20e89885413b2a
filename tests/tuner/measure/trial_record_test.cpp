// end_of_trial: what a run left behind -> its outcome and the record stored, as one pure function
// (no process, no file, no database): a completed trial's value and the attrs a user reads; a
// completed re-run stored as PRUNED with its measurement apart, so Optuna never ranks a lucky
// repeat; a crash's signal; the probes' constraints and a failure's reason; a window's loser with
// its estimate as its last intermediate value; and the intermediate values carried whole when
// writes failed while the trial ran.
#include <gtest/gtest.h>

#include "tuner/base/trial_attrs.h"
#include "tuner/measure/trial_record.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;
using search::TrialState;

TrialRun completed_run(double value, double wall_s) {
  TrialRun run;
  run.launched = true;
  run.launch.started = true;
  run.launch.exit_code = 0;
  run.launch.wall_s = wall_s;
  run.launch.containment = "keeper";
  ObjectiveReading reading;
  reading.value = value;
  run.readings.objective = reading;
  return run;
}

FinalRecord final_record(const FrozenTrial& trial, const TrialRun& run) {
  return end_of_trial(trial, run).record;
}

TEST(TrialRecord, ACompletedTrialKeepsItsValueAndWhatTheLaunchShowed) {
  FrozenTrial trial;
  trial.intermediate_values = {{1, 0.5}, {2, 0.75}};
  const auto record = final_record(trial, completed_run(12.5, 3.25));
  EXPECT_EQ(record.state, TrialState::complete);
  EXPECT_EQ(record.values, std::vector<double>{12.5});
  EXPECT_EQ(record.user_attrs.at(k_attr_wall_time), 3.25);
  EXPECT_EQ(record.user_attrs.at(k_attr_exit_code), 0);
  EXPECT_FALSE(record.user_attrs.contains(k_attr_signal));
  EXPECT_EQ(record.system_attrs.at(k_attr_containment), "keeper");
  EXPECT_FALSE(record.system_attrs.contains(k_attr_fail_reason));
  EXPECT_EQ(record.intermediate_values, trial.intermediate_values);
  EXPECT_FALSE(record.rerun);
  EXPECT_FALSE(record.with_intermediate);
}

// The sweep of what a job left behind is stored apart from its wall time (issue 37).
TEST(TrialRecord, TheTimeSpentStoppingLeftoversIsStoredApart) {
  auto run = completed_run(12.5, 0.25);
  EXPECT_FALSE(final_record(FrozenTrial{}, run).user_attrs.contains(k_attr_cleanup_time));
  run.launch.cleanup_s = 3.0;
  const auto record = final_record(FrozenTrial{}, run);
  EXPECT_EQ(record.user_attrs.at(k_attr_wall_time), 0.25);
  EXPECT_EQ(record.user_attrs.at(k_attr_cleanup_time), 3.0);
}

TEST(TrialRecord, ACompletedRerunIsStoredPrunedWithItsMeasurementApart) {
  FrozenTrial rerun;
  rerun.system_attrs[k_attr_rerun_of] = 4;
  const auto record = final_record(rerun, completed_run(9.0, 1.0));
  EXPECT_EQ(record.state, TrialState::pruned);
  EXPECT_TRUE(record.values.empty());
  EXPECT_EQ(record.user_attrs.at(k_attr_rerun_value), 9.0);
  EXPECT_TRUE(record.rerun);
}

TEST(TrialRecord, AFailedRerunIsStoredAsItEnded) {
  FrozenTrial rerun;
  rerun.system_attrs[k_attr_rerun_of] = 4;
  TrialRun run = completed_run(0, 1.0);
  run.launch.exit_code = 3;
  const auto record = final_record(rerun, run);
  EXPECT_EQ(record.state, TrialState::fail);
  EXPECT_FALSE(record.user_attrs.contains(k_attr_rerun_value));
  EXPECT_FALSE(record.rerun);
  EXPECT_EQ(record.system_attrs.at(k_attr_fail_reason), "exit code 3");
}

TEST(TrialRecord, ACrashRecordsItsSignalAndNoExitCode) {
  TrialRun run = completed_run(0, 0.5);
  run.launch.signal = 11;
  run.run_constraint = -1.0;
  run.end_attrs["probe_verdict"] = "ok";
  const auto record = final_record(FrozenTrial{}, run);
  EXPECT_EQ(record.state, TrialState::fail);
  EXPECT_TRUE(record.values.empty());
  EXPECT_TRUE(record.user_attrs.at(k_attr_exit_code).is_null());
  EXPECT_EQ(record.user_attrs.at(k_attr_signal), 11);
  EXPECT_EQ(record.system_attrs.at(k_attr_constraints), std::vector<double>{-1.0});
  EXPECT_EQ(record.system_attrs.at("probe_verdict"), "ok");
  EXPECT_EQ(record.system_attrs.at(k_attr_fail_reason), "killed by SIGSEGV");
}

TEST(TrialRecord, ATrialRuledOutBeforeItsLaunchHasNoLaunchAttrs) {
  TrialRun run;  // the probes predicted oversubscription: never launched
  run.unrun = skipped_outcome(2.0);
  const auto record = final_record(FrozenTrial{}, run);
  EXPECT_EQ(record.state, TrialState::pruned);
  EXPECT_FALSE(record.user_attrs.contains(k_attr_wall_time));
  EXPECT_FALSE(record.user_attrs.contains(k_attr_exit_code));
  EXPECT_FALSE(record.system_attrs.contains(k_attr_containment));
  EXPECT_EQ(record.system_attrs.at(k_attr_constraints), std::vector<double>{2.0});
}

TEST(TrialRecord, FailedWritesDuringTheRunCarryTheIntermediateValuesWithTheEnd) {
  TrialRun run = completed_run(1.0, 1.0);
  run.storage_error = "database is locked";
  EXPECT_TRUE(final_record(FrozenTrial{}, run).with_intermediate);
  TrialRun window = completed_run(1.0, 1.0);
  window.window_attrs = {{"half_width", 0.1}};
  window.window_points = 40;
  auto record = final_record(FrozenTrial{}, window);  // completed by its window: curve as it is
  EXPECT_FALSE(record.with_intermediate);
  EXPECT_EQ(record.user_attrs.at(k_attr_window).at("half_width"), 0.1);
  // A loser its window stopped: PRUNED, its estimate its last intermediate value (Optuna's pair).
  window.launch.stopped = StopReason::watcher;
  window.context.window = WindowDecision{TrialState::pruned, 0.75, "pruned: below the best"};
  FrozenTrial trial;
  trial.intermediate_values = {{10, 0.5}};
  const auto end = end_of_trial(trial, window);
  EXPECT_EQ(end.outcome.state, TrialState::pruned);
  EXPECT_EQ(end.record.state, TrialState::pruned);
  EXPECT_EQ(end.record.values, std::vector<double>{0.75});
  EXPECT_EQ(end.record.intermediate_values,
            (std::map<std::int64_t, double>{{10, 0.5}, {40, 0.75}}));
  EXPECT_TRUE(end.record.with_intermediate);
}

TEST(TrialRecord, SeveralObjectivesKeepEveryValue) {
  TrialRun run = completed_run(1.0, 1.0);
  run.readings.objective->value().values = {1.0, 0.25};
  EXPECT_EQ(final_record(FrozenTrial{}, run).values, (std::vector<double>{1.0, 0.25}));
}

}  // namespace
}  // namespace tune::tuner
