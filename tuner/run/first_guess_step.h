// The runner's first-guess step (issues 39 and 48): the guess (judge/first_guess.h) enqueued from
// the baseline measured on a quiet machine, else from its quiet re-run, else none, said why.
// Free functions over the storage, the cache and the ended trial; not thread-safe with respect to
// them.
// Design: docs/design-notes.md#tunerrunfirst_guess_steph
#pragma once

#include <ostream>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/storage/storage.h"
#include "tuner/storage/study_cache.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// After `ran` ended: works out and enqueues the first guess when `ran` is the baseline or a load
// re-run of it and the study has none yet (study user attr k_attr_study_first_guess records the
// outcome once). Prints a line to `out` unless `quiet` (the waiting and the "none" lines always).
Result<void> first_guess_step(std::ostream& out, Storage& storage, StudyCache& cache,
                              const StudySpec& spec, const search::FrozenTrial& ran, bool quiet);

}  // namespace tune::tuner
