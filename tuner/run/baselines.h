// The baselines a study starts with (its `enqueue:` entries and its rules' settings), written
// with the study itself, and their re-runs: a baseline or rule trial that did not complete (cut
// by --time-limit, Ctrl-C, a dead tune, or a failure) is run again at the study's next `tune`,
// once per attempt, until one completes or two fail alike (judge/attempts.h). Stateless
// functions; not thread-safe with respect to the storage and cache they are given.
#pragma once

#include <string>
#include <vector>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/storage/storage.h"
#include "tuner/storage/study_cache.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// The WAITING trials a new study is created with (StudySeed::waiting_trials, numbered 0, 1, ...
// in this order), and the lines to print once it was: each rule trial's texts, then the notes of
// the rules that set nothing here.
struct BaselineSeed {
  std::vector<nlohmann::json> trials;
  std::vector<std::string> lines;
};
BaselineSeed baseline_seed(const StudySpec& spec);

// Enqueues a re-run of `attempt` (a baseline or rule trial that did not complete), unless one
// follows it already (another worker, `tune confirm`); its number, or nullopt when there was one.
Result<std::optional<int>> enqueue_retry(Storage& storage, std::int64_t study_id,
                                         const search::FrozenTrial& attempt);

// The study's next run: a re-run of each baseline or rule trial whose last attempt failed, not
// for good; the lines saying so, and naming each that failed for good.
Result<std::vector<std::string>> retry_unfinished_baselines(Storage& storage, StudyCache& cache);

}  // namespace tune::tuner
