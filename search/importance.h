// Parameter importance: an fANOVA-style evaluator (Optuna's default FanovaImportanceEvaluator):
// a random forest fitted to (params -> objective) of the COMPLETE trials, then each parameter's
// share of the variance of the forest's marginal predictions. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <utility>
#include <vector>

#include "search/trial.h"

namespace tune::search {

struct ImportanceOptions {
  int n_trees = 64;        // forest size, as Optuna's default
  int max_depth = 64;      // per tree
  std::uint64_t seed = 0;  // bootstrap and split sampling
};

// Each parameter of `space` with its importance share (non-negative, summing to 1 when any
// parameter varies), sorted by share, largest first. Trials that are not COMPLETE, or lack a
// parameter of `space`, are ignored. Error when fewer than 2 usable trials remain.
std::expected<std::vector<std::pair<std::string, double>>, std::string> fanova_importance(
    const std::vector<FrozenTrial>& trials, const SearchSpace& space,
    const ImportanceOptions& options = {});

}  // namespace tune::search
