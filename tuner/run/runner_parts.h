// The steps of one trial as StudyRunner takes them (runner.h): what a trial runs with once
// sampled (trial_setup.cpp), how it ended (trial_execution.cpp), and the periods and caps they
// share. Private to the runner's files: nothing outside tuner/run/ includes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "tuner/launch/launch_kind.h"
#include "tuner/launch/launcher.h"
#include "tuner/measure/trial_record.h"
#include "tuner/run/load_check.h"
#include "tuner/run/runner.h"
#include "tuner/storage/storage_error.h"
#include "tuner/study/templates.h"

namespace tune::tuner {

using Clock = std::chrono::steady_clock;

// Bytes kept of each of a trial's stdout and stderr: the first and the last half (tune-keeper).
inline constexpr std::size_t k_trial_output_cap = 16u << 20;
// The watcher's period: heartbeats and the log followed for pruning; a window's progress.
inline constexpr double k_follow_tick_s = 0.5;
inline constexpr double k_window_tick_s = 0.05;

// What a trial runs with, once sampled.
struct StudyRunner::Prepared {
  LaunchRequest request;
  std::string log_path;
  TemplateValues values;    // the trial's placeholders, for objectives read from files
  std::string stage_error;  // `files:` could not be staged: the trial FAILs with this, unrun
  bool study_deadline_bites = false;      // the study's --time-limit set the trial's limit
  std::optional<double> skip_constraint;  // the probes predict oversubscription: not run
  // The probes' constraint of a trial that runs (<= 0). Stored with it like a skipped trial's:
  // constrained TPE ranks trials without constraint values after every trial with them, so
  // without it the skipped (infeasible) trials would rank above the feasible ones that ran.
  std::optional<double> run_constraint;
  std::string trial_dir;    // the trial's folder (its result is kept there when unstorable)
  LaunchKindPtr launch_kind;  // what stops the trial's leftovers (LaunchKind::end_trial)
  std::string setup_error;  // the trial cannot run: its folder could not be made (why, where)
};

// How a trial ended: what its run left behind (trial_record.h), and whether the trial is still
// this worker's.
struct StudyRunner::Ran : TrialRun {
  // The trial is no longer this worker's (another worker finished it, or its row is gone), in
  // the storage's words: nothing of this run is stored.
  std::optional<StorageError> lost;
  LoadJudgement load;  // the CPU time other work used while it ran (load_check.h)
  TrialEnd end;        // how it ended, and its record (end_of_trial), unless lost
};

}  // namespace tune::tuner
