// A trial's end as it is stored: one pure function from what its run left (exit, readings,
// times, the attributes its end added) to its outcome and the record written in one transaction
// (tuner/run/pending_result.h). Plain values and a stateless function; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/trial.h"
#include "tuner/launch/launcher.h"
#include "tuner/measure/trial_outcome.h"

namespace tune::tuner {

struct FinalRecord {
  search::TrialState state = search::TrialState::fail;
  std::vector<double> values;                              // none, one, or one per objective
  nlohmann::json user_attrs = nlohmann::json::object();    // wall_time, exit_code, ...
  nlohmann::json system_attrs = nlohmann::json::object();  // fail_reason, constraints, ...
  std::map<std::int64_t, double> intermediate_values;      // what the log showed (all of it)
  bool rerun = false;  // a completed re-run (judge/reruns.h): believe_reruns after storing
  bool with_intermediate = false;  // store intermediate_values with it (some may be missing)
  bool stored = false;             // set once its state reached the database
};

// What one run of a trial left behind, as the runner gathered it.
struct TrialRun {
  bool launched = false;  // false: the probes ruled it out, or its inputs were not there
  LaunchResult launch;
  std::optional<TrialOutcome> unrun;  // how a trial that was not launched ended
  OutcomeContext context;             // classify_outcome's (trial_outcome.h)
  RunReadings readings;               // what the run left in its files
  // The probes' constraint of a trial that ran (<= 0), stored like a skipped trial's.
  std::optional<double> run_constraint;
  // A storage write made while the trial ran failed (the database unreachable past retry_for):
  // the record carries everything those writes would have stored.
  std::string storage_error;
  nlohmann::json end_attrs = nlohmann::json::object();  // system attrs of the trial's end
  nlohmann::json window_attrs;  // objective window: the user attr k_attr_window
  int window_points = 0;        // the points its window saw (0: no window measured it)
};

// How a trial ended, and the record that stores it.
struct TrialEnd {
  TrialOutcome outcome;
  FinalRecord record;
};

// The end of `trial` (its intermediate values as they stand) after `run`: its outcome
// (classify_outcome, or `unrun`), its state and values (a completed re-run stored as PRUNED
// with its value in rerun_value, judge/reruns.h; a loser its window stopped PRUNED with its
// estimate as its last intermediate value, as Optuna stores a pruned trial), the user attrs a
// user reads (wall time, exit code, signal, the window), the system attrs tune reads
// (containment, output cut, constraints, fail reason, the end's attrs).
TrialEnd end_of_trial(const search::FrozenTrial& trial, const TrialRun& run);

}  // namespace tune::tuner
