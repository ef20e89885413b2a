// Short study summaries: the end-of-run block, `tune best` and `tune trials`.
// The full report (formats, importance, plots) is report.h; this is the plain text a terminal
// user sees after every run. Pure functions over a StudyView.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

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

// "workers=0 omp=1 bind=core" with external values (floats to 6 significant digits), in the
// trial's parameter order.
std::string format_params(const search::FrozenTrial& trial);
std::string format_value(double value);

void print_summary(std::ostream& out, const std::string& study_name,
                   const search::StudyView& study);
void print_best(std::ostream& out, const search::StudyView& study);
void print_trials(std::ostream& out, const search::StudyView& study);

}  // namespace tune::tuner
