// `tune confirm`: re-measures the baseline and the top trials of a study, enqueued round-robin
// with their original's parameters fixed, then run by the ordinary runner, pruner off.
// Not thread-safe (one runner, one thread), like the runner itself.
// Design: docs/design-notes.md#tunercliconfirmh
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
