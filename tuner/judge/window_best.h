// The best trial a window objective prunes against (study/window_settings.h WindowBest), from
// what the study stored of it. Stateless; thread-safe.
#pragma once

#include <optional>

#include "search/trial.h"
#include "tuner/study/window_settings.h"

namespace tune::tuner {

// The best to prune against, from `best`, the study's best trial (ranking.h: best_trial, or the
// runner's BestTracker, which keeps it without a pass over the history): the range of the
// intervals of every window it was measured in (its own run's and its re-runs'), its value
// included; its value alone when it has no window; nullopt when there is no best yet.
std::optional<WindowBest> window_best(const search::StudyView& study,
                                      const search::FrozenTrial* best);

}  // namespace tune::tuner
