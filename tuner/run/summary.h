// Short study summaries: the end-of-run block, `tune best` and `tune trials`. Which trial is best
// is decided by the ranking rules (tuner/run/ranking.h), the same for every output.
// The full report (formats, importance, plots) is report.h; this is the plain text a terminal
// user sees after every run. Pure functions over a StudyView.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"

namespace tune::tuner {

// Trials by state; re-runs (tuner/run/rerun.h) are counted apart, whatever their state, as every
// report counts them.
struct StateCounts {
  int complete = 0, pruned = 0, fail = 0, running = 0, waiting = 0, reruns = 0;
  int total() const { return complete + pruned + fail + running + waiting + reruns; }
};

StateCounts count_states(const search::StudyView& study);
// How `tune trials` and every report name a trial's state: Optuna's word (COMPLETE, PRUNED, FAIL,
// RUNNING, WAITING), except RERUN for a completed re-run (stored PRUNED without a value).
std::string state_word(const search::FrozenTrial& trial);
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
