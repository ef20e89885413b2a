// Multi-objective TPE's good/bad split (Optuna 3.1, MOTPE), private to search/: tpe.cpp calls
// it when the study has more than one objective. Pure functions; no state.
// Design: docs/design-notes.md#searchmotpeh
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "search/pareto.h"

namespace tune::search::detail {

// Splits observations (their losses, one row each, all of one length) into the n_below good and
// the rest, both in chronological (index) order. With violations (one per observation, 0 =
// feasible), feasible trials come first and infeasible ones are ranked by their violation, as in
// the single-objective split.
void split_multi_objective(const Losses& losses, std::size_t n_below,
                           std::span<const double> violations, std::vector<std::size_t>& below,
                           std::vector<std::size_t>& above);

// One weight per index of `below`: its hypervolume contribution among the feasible good trials,
// divided by the largest (plus 1e-12, so none is 0), and 1e-12 for infeasible ones; a lone good
// trial weighs 1.
std::vector<double> below_weights(const Losses& losses, std::span<const std::size_t> below,
                                  std::span<const double> violations);

}  // namespace tune::search::detail
