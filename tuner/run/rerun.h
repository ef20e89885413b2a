// Re-runs as the runner stores them: the original's believed value once a re-run completed, and
// the re-runs of a new best enqueued (`incumbent_repeats:`). The rules (which trial a re-run
// measures, its value, which trials `tune confirm` re-runs) are tuner/judge/reruns.h. Stateless
// functions; not thread-safe with respect to the storage and cache they are given (one runner,
// one thread).
#pragma once

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"
#include "tuner/storage/study_cache.h"

namespace tune::tuner {

// After re-run `rerun` completed with `measured` and was stored as PRUNED: stores the original's
// search value (once) and its believed value, and marks it for the cache's next sync.
Result<void> believe_reruns(Storage& storage, StudyCache& cache, const search::FrozenTrial& rerun);

// incumbent_repeats: when the best COMPLETE search trial by believed value (summary.h's
// best_trial) has no re-run yet, enqueues `repeats` re-runs of it as WAITING trials, so they are
// the next trials the runner takes. Returns the number enqueued (0 when the best has some).
// `best` keeps the best trial and the re-runs from the cache's change log (O(changes) a call).
Result<int> enqueue_incumbent_reruns(Storage& storage, StudyCache& cache, BestTracker& best,
                                     const search::SearchSpace& space, int repeats);

}  // namespace tune::tuner
