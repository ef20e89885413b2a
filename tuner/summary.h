// Short study summaries: the end-of-run block, `tune best` and `tune trials`.
// The full report (formats, importance, plots) is report.h; this is the plain text a terminal
// user sees after every run. Pure functions over a StudyView.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"

namespace tune::tuner {

struct StateCounts {
  int complete = 0, pruned = 0, fail = 0, running = 0, waiting = 0;
  int total() const { return complete + pruned + fail + running + waiting; }
};

StateCounts count_states(const search::StudyView& study);
// The best COMPLETE trial (feasible ones first, as Optuna's constrained studies do), leaving out
// `tune confirm` re-runs (system attr "confirm_of").
const search::FrozenTrial* best_trial(const search::StudyView& study);
// A multi-objective study's best trials: the Pareto front (search/pareto.h) of its COMPLETE
// trials, `tune confirm` re-runs left out and, when any trial is feasible, only feasible ones
// (as best_trial); number order. Without constraints or re-runs, Optuna's best_trials.
std::vector<const search::FrozenTrial*> front_trials(const search::StudyView& study);
// The end of a trial's progress line: "  | best #N = V", "  | front #1 #4 #7", or "".
std::string best_so_far(const search::StudyView& study);

// "workers=0 omp=1 bind=core" with external values (floats to 6 significant digits), in the
// trial's parameter order.
std::string format_params(const search::FrozenTrial& trial);
std::string format_value(double value);
std::string format_values(const std::vector<double>& values);  // "0.5, 12.3"
// "minimize elapsed_time" per objective, for headers: `names` are the objectives' keys.
std::string describe_objectives(const search::StudyView& study,
                                const std::vector<std::string>& names = {});

// `objective_names` name a multi-objective study's objectives (study_spec.h objective_names);
// without them they are "objective N".
void print_summary(std::ostream& out, const std::string& study_name, const search::StudyView& study,
                   const std::vector<std::string>& objective_names = {});
void print_best(std::ostream& out, const search::StudyView& study,
                const std::vector<std::string>& objective_names = {});
void print_trials(std::ostream& out, const search::StudyView& study);

}  // namespace tune::tuner
