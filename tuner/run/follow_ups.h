// What follows a trial's end, as free functions over the storage, the cache and the study: the
// re-runs it gets (incumbent_repeats, a re-run for load) and what a completed re-run changes
// (its original's believed value), and waiting for a quiet machine before a load re-run. The
// rules of re-runs are tuner/judge/reruns.h. One runner, one thread (the storage's rule).
#pragma once

#include <optional>
#include <ostream>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"
#include "tuner/storage/study_cache.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// After re-run `rerun` completed and was stored as PRUNED: stores the original's search value
// (once) and its believed value, and marks it for the cache's next sync.
Result<void> believe_reruns(Storage& storage, StudyCache& cache, const search::FrozenTrial& rerun);

// incumbent_repeats: when the best COMPLETE search trial by believed value (summary.h's
// best_trial) has no re-run yet, enqueues `repeats` re-runs of it as WAITING trials, so they are
// the next trials the runner takes. Returns the number enqueued (0 when the best has some).
// `best` keeps the best trial and the re-runs from the cache's change log (O(changes) a call).
Result<int> enqueue_incumbent_reruns(Storage& storage, StudyCache& cache, BestTracker& best,
                                     const search::SearchSpace& space, int repeats);

// Re-runs enqueued for load per trial: if the machine is busy again each time, the trial stays
// marked rather than the study re-running it for ever.
inline constexpr int k_max_load_reruns = 2;

// A trial measured under load (load_check.h): the re-run of its setting that will stand for it
// (rerun_cause "load"), unless one is on its way, its original did not complete, or it had
// k_max_load_reruns already.
Result<void> enqueue_load_rerun(Storage& storage, StudyCache& cache,
                                const search::SearchSpace& space, const search::FrozenTrial& trial);

// What one run has spent waiting for quiet, and whether it said so (once per run).
struct QuietWaits {
  double waited_s = 0;
  bool said = false;
};

// Before the next trial, when it is a load re-run: waits until the CPUs its original was judged
// on are quiet, within what is left of `load.wait_s` (and `time_left_s`, the study's
// --time-limit), saying so on `out`.
void wait_for_quiet(std::ostream& out, const StudyCache& cache, const LoadSpec& load,
                    std::optional<double> time_left_s, QuietWaits& waits);

}  // namespace tune::tuner
