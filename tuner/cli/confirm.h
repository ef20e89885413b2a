// `tune confirm`: re-measures the baseline and the top trials of a study, because a winner
// picked on one noisy run is a common trap. The re-runs are enqueued as WAITING trials with the
// original's parameters fixed (Optuna's enqueue_trial) and the system attrs "confirm_of" (the
// original's number) and "confirm_round", interleaved round-robin (baseline, #a, #b, baseline,
// ...) so that slow drift of the machine hits every candidate alike; then the ordinary runner
// runs them, pruner off, probes on. The report folds them into their originals and uses medians.
// Not thread-safe (one runner, one thread), like the runner itself.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/judge/reruns.h"
#include "tuner/run/runner.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

struct ConfirmOptions {
  int repeats = 5;               // re-runs of each trial
  int top = 3;                   // best search trials re-run besides the baseline
  std::string storage_override;  // --storage; empty = the study file's
  bool quiet = false;            // no line per trial
};

// Plans, enqueues and runs the re-runs of an existing study; prints one line per trial and a
// closing summary to `out`.
Result<RunTotals> run_confirm(StudySpec spec, const ConfirmOptions& options, std::ostream& out);

}  // namespace tune::tuner
