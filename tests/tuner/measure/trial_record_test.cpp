// final_record: what a run left behind -> the record stored, as a pure function (no process, no
// database): a completed trial's value and the attrs a user reads; a completed re-run stored as
// PRUNED with its measurement apart, so Optuna never ranks a lucky repeat; a crash's signal; the
// probes' constraints and a failure's reason; and the intermediate values carried whole when
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
  run.outcome.state = TrialState::complete;
  run.outcome.value = value;
  return run;
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
  run.outcome.state = TrialState::fail;
  run.outcome.value.reset();
  run.outcome.reason = "exit code 3";
  const auto record = final_record(rerun, run);
  EXPECT_EQ(record.state, TrialState::fail);
  EXPECT_FALSE(record.user_attrs.contains(k_attr_rerun_value));
  EXPECT_FALSE(record.rerun);
  EXPECT_EQ(record.system_attrs.at(k_attr_fail_reason), "exit code 3");
}

TEST(TrialRecord, ACrashRecordsItsSignalAndNoExitCode) {
  TrialRun run = completed_run(0, 0.5);
  run.launch.signal = 11;
  run.outcome.state = TrialState::fail;
  run.outcome.value.reset();
  run.outcome.reason = "killed by SIGSEGV";
  run.outcome.constraints = {-1.0};
  run.end_attrs["probe_verdict"] = "ok";
  const auto record = final_record(FrozenTrial{}, run);
  EXPECT_EQ(record.state, TrialState::fail);
  EXPECT_TRUE(record.values.empty());
  EXPECT_TRUE(record.user_attrs.at(k_attr_exit_code).is_null());
  EXPECT_EQ(record.user_attrs.at(k_attr_signal), 11);
  EXPECT_EQ(record.system_attrs.at(k_attr_constraints), std::vector<double>{-1.0});
  EXPECT_EQ(record.system_attrs.at("probe_verdict"), "ok");
}

TEST(TrialRecord, ATrialRuledOutBeforeItsLaunchHasNoLaunchAttrs) {
  TrialRun run;  // the probes predicted oversubscription: never launched
  run.outcome.state = TrialState::fail;
  run.outcome.constraints = {2.0};
  const auto record = final_record(FrozenTrial{}, run);
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
  window.window_intermediate = true;  // a pruned loser's estimate joined its curve
  window.window_attrs = {{"half_width", 0.1}};
  const auto record = final_record(FrozenTrial{}, window);
  EXPECT_TRUE(record.with_intermediate);
  EXPECT_EQ(record.user_attrs.at(k_attr_window).at("half_width"), 0.1);
}

TEST(TrialRecord, SeveralObjectivesKeepEveryValue) {
  TrialRun run = completed_run(1.0, 1.0);
  run.outcome.values = {1.0, 0.25};
  EXPECT_EQ(final_record(FrozenTrial{}, run).values, (std::vector<double>{1.0, 0.25}));
}

}  // namespace
}  // namespace tune::tuner
