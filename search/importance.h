// Parameter importance: an fANOVA-style evaluator (Optuna's default FanovaImportanceEvaluator):
// a random forest fitted to (params -> objective) of the COMPLETE trials, then each parameter's
// share of the variance of the forest's marginal predictions; and how far to trust each share:
// the spread of the shares of smaller forests, each fit to a bootstrap resample of the trials
// (what another handful of trials could have made of it). Pure functions; thread-safe.
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
  // fanova_importance_with_interval: forests fit to bootstrap resamples of the trials, their
  // trees each, and the central fraction of their shares the interval spans. The default costs
  // 20 x 16 = 320 trees, five times the estimate's own forest.
  int resamples = 20;
  int resample_trees = 16;
  double interval = 0.9;
};

struct ImportanceShare {
  std::string name;
  double share = 0;          // the forest of n_trees on every trial, as fanova_importance's
  double low = 0, high = 0;  // the interval (which always holds `share`); = share without one
};

// Each parameter of `space` with its importance share (non-negative, summing to 1 when any
// parameter varies), sorted by share, largest first. Trials that are not COMPLETE, or lack a
// parameter of `space`, are ignored. Error when fewer than 2 usable trials remain.
// (resamples unused: no interval.)
std::expected<std::vector<std::pair<std::string, double>>, std::string> fanova_importance(
    const std::vector<FrozenTrial>& trials, const SearchSpace& space,
    const ImportanceOptions& options = {});

// The same shares, in the same order, each with its interval: the quantiles (1 - interval) / 2
// and (1 + interval) / 2 of its shares over `resamples` forests, widened to hold the share itself.
std::expected<std::vector<ImportanceShare>, std::string> fanova_importance_with_interval(
    const std::vector<FrozenTrial>& trials, const SearchSpace& space,
    const ImportanceOptions& options = {});

}  // namespace tune::search
