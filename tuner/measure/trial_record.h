// A trial's end as it is stored: one pure function from what its run left behind (the launch's
// result, the outcome its readings gave, the attributes its end added) to the record written in
// one transaction (tuner/run/pending_result.h writes it, or keeps it in the trial's folder when
// the database cannot take it). Plain values and a stateless function; thread-safe.
#pragma once

#include <cstdint>
#include <map>
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
  bool rerun = false;              // a completed re-run (rerun.h): believe_reruns after storing
  bool with_intermediate = false;  // store intermediate_values with it (some may be missing)
  bool stored = false;             // set once its state reached the database
};

// What one run of a trial left behind, as the runner gathered it.
struct TrialRun {
  bool launched = false;  // false: the probes ruled it out, or its inputs were not there
  LaunchResult launch;
  TrialOutcome outcome;  // classify_outcome (trial_outcome.h) over the launch and its readings
  // A storage write made while the trial ran failed (the database unreachable past retry_for):
  // the record carries everything those writes would have stored.
  std::string storage_error;
  nlohmann::json end_attrs = nlohmann::json::object();  // system attrs of the trial's end
  nlohmann::json window_attrs;       // objective window: the user attr k_attr_window
  bool window_intermediate = false;  // a pruned loser's estimate added to its intermediate values
};

// The record of `trial` (its intermediate values as they stand) after `run`: its state and values
// (a completed re-run stored as PRUNED with its value in rerun_value, judge/reruns.h), the user
// attrs a user reads (wall time, exit code, signal, the window), the system attrs tune reads
// (containment, output cut, constraints, fail reason, the end's attrs).
FinalRecord final_record(const search::FrozenTrial& trial, const TrialRun& run);

}  // namespace tune::tuner
