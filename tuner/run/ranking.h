// The ranking rules: which trials count, in which order, and which one is best. Every output that
// names a best trial or ranks trials (the live line, `tune best`, `tune trials`, every report
// format, `tune confirm`, `tune export`, incumbent_repeats) asks these functions, so they cannot
// disagree.
//
// A trial is ranked when it is COMPLETE, has a value and is not a re-run (a trial that re-measures
// another one, tuner/run/rerun.h). It is ranked by its believed value: the median of its completed
// re-runs when it has any, else its own run's value. That is the value tune stores on a
// re-measured trial (so python3-optuna's best_trial ranks the same); studies written before
// re-runs were stored that way kept the search run's value, and are ranked by the median all the
// same. Feasible trials come before infeasible ones (as Optuna's constrained studies rank them);
// ties keep number order. Pure functions over a StudyView, linear in its trials (the sort aside);
// thread-safe.
#pragma once

#include <vector>

#include "search/trial.h"

namespace tune::tuner {

// True for a re-run: a trial that re-measures another one (system attr k_attr_rerun_of).
bool is_rerun(const search::FrozenTrial& trial);

// The baseline: the lowest-numbered enqueued trial (system attr "fixed_params") that is not a
// re-run; nullptr when the study enqueued none.
const search::FrozenTrial* find_baseline(const search::StudyView& study);

// The ranked trials (see above), best first.
std::vector<const search::FrozenTrial*> ranked_trials(const search::StudyView& study);

// ranked_trials(study).front(); nullptr when no trial is ranked.
const search::FrozenTrial* best_trial(const search::StudyView& study);

// A multi-objective study's best trials: the Pareto front (search/pareto.h) of its ranked trials'
// values (feasible ones only when any is feasible), number order. Without constraints or re-runs,
// Optuna's best_trials.
std::vector<const search::FrozenTrial*> front_trials(const search::StudyView& study);

}  // namespace tune::tuner
