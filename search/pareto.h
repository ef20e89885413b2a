// Pareto maths for multi-objective studies: dominance, nondomination ranks, exact hypervolume
// and hypervolume subset selection, all on losses (to_losses). Pure functions; thread-safe.
// Design: docs/design-notes.md#searchparetoh
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "search/trial.h"

namespace tune::search {

using Losses = std::vector<std::vector<double>>;  // [point][objective]

// values with maximised objectives negated. `directions` has one entry per value.
std::vector<double> to_losses(std::span<const double> values,
                              std::span<const Direction> directions);

// a dominates b: no coordinate worse, at least one better (Optuna's _dominates).
bool dominates(std::span<const double> a, std::span<const double> b);

// Nondomination rank of every point: 0 for the points nobody dominates, 1 for those only rank-0
// points dominate, and so on. Peeling stops once `enough` points have a rank (MOTPE needs only
// its n_below best); the rest get numeric_limits<int>::max().
std::vector<int> nondomination_ranks(const Losses& points,
                                     std::size_t enough = std::numeric_limits<std::size_t>::max());

// Volume dominated by `points` and bounded by `reference` (points not strictly better than the
// reference in every coordinate add nothing).
double hypervolume(const Losses& points, std::span<const double> reference);

// Optuna's reference point for a set of losses: per coordinate the worst value, moved 10% further
// out (max(1.1 w, 0.9 w)), and 1e-12 where that is 0.
std::vector<double> reference_point(const Losses& points);

// What each point alone adds to the hypervolume of all of them (hv(all) - hv(all but i)).
std::vector<double> hypervolume_contributions(const Losses& points,
                                              std::span<const double> reference);

// Greedy hypervolume subset selection: `k` indices into `points`, each step taking the point
// that adds the most to what was taken (the first of equals), in the order taken.
std::vector<std::size_t> select_by_hypervolume(const Losses& points, std::size_t k,
                                               std::span<const double> reference);

// A trial's objective values: `values`, or {value} for a single-objective trial, or none.
std::vector<double> objective_values(const FrozenTrial& trial);

// The trials of `trials` that no other of them dominates, in number order. Trials without one
// value per direction are left out.
std::vector<const FrozenTrial*> pareto_front(std::span<const FrozenTrial* const> trials,
                                             std::span<const Direction> directions);

// Optuna's Study.best_trials: the Pareto front of the study's COMPLETE trials (those with a
// value for every objective), in number order.
std::vector<const FrozenTrial*> best_trials(const StudyView& study);

}  // namespace tune::search
