// Short study summaries: the line after each trial, the end-of-run block, `tune best` and `tune
// trials`, the best picked by the ranking rules (tuner/judge/ranking.h). Pure functions over a
// StudyView; what they print has passed terminal_text (tuner/base/text.h).
// Design: docs/design-notes.md#tunerjudgesummaryh
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"
#include "tuner/base/number_format.h"  // format_short, format_duration, ...: used with these

namespace tune::tuner {

// Trials by state; re-runs (tuner/judge/reruns.h) are counted apart, whatever their state, as every
// report counts them.
struct StateCounts {
  int complete = 0, pruned = 0, fail = 0, running = 0, waiting = 0, reruns = 0;
  int total() const { return complete + pruned + fail + running + waiting + reruns; }
};

StateCounts count_states(const search::StudyView& study);
// How `tune trials` and every report name a trial's state: Optuna's word (COMPLETE, PRUNED, FAIL,
// RUNNING, WAITING), except RERUN for a completed re-run (stored PRUNED without a value).
std::string state_word(const search::FrozenTrial& trial);

// Live output (the line after each trial, the end-of-run block) fits this many columns.
inline constexpr std::size_t k_live_width = 120;

// The unit of an objective or logged metric where tune knows it: "s" for wall_time and the
// bundled trainer's elapsed_time, "samples/s" for its samples_per_sec; "" for any other.
std::string unit_of(const std::string& name);
// "elapsed_time 1.235 s", "accuracy 0.8512": the name, the value to 4 significant digits, the
// unit where known.
std::string format_measure(const std::string& name, double value);

// The end of a trial's progress line: "best #N 1.235 s" (value with its unit), "front #1 #4 #7"
// (at most 6 numbers, then "+N"), or "". `names` are the objectives' (study_file.h
// objective_names); without them the value stands alone.
std::string best_so_far(const search::StudyView& study, const std::vector<std::string>& names = {});

// What the line printed after a trial says, besides the trial's number, parameters and probes.
struct TrialProgress {
  int done = 0, total = 0;  // trials this run has finished, of the --trials it was asked
  // How the trial ended, as the runner classified it (a re-run is stored PRUNED; this says what
  // it was).
  search::TrialState state = search::TrialState::complete;
  std::optional<double> value;          // one objective
  std::vector<double> values;           // several objectives (value is then unset)
  std::optional<double> wall_s;         // launch to exit, when it was launched
  std::optional<double> half_width;     // objective window: its interval, relative to the value
  std::string reason;                   // why it failed or was pruned; "" = none
  std::optional<double> eta_s;          // none after the last trial
  std::vector<std::string> objectives;  // names (study_file.h objective_names); may be empty
  // The study's best trial (nullptr: none yet) when the caller keeps it (BestTracker, ranking.h);
  // unset, progress_line() looks for it with a pass over the study.
  std::optional<const search::FrozenTrial*> best;
};

// One line (no newline) of at most `width` columns: "[3/12] #2 COMPLETE elapsed_time 1.235 s
// (wall 4.56 s) OVERSUB 2.5x | best #1 1.201 s | eta 1m02s | workers=2 bucket_mb=0.8846 ..."
// ("new best" when the trial is the best so far).
// The reason is cut first to leave room for a few parameters; the parameters fill the rest and
// end in "..." when cut (`tune trials` and the report show them whole).
std::string progress_line(const search::FrozenTrial& trial, const search::StudyView& study,
                          const TrialProgress& progress, std::size_t width = k_live_width);

// "workers=0 omp=1 bind=core" with external values (floats to 4 significant digits), in the
// trial's parameter order.
std::string format_params(const search::FrozenTrial& trial);
// Each parameter as "name=value", as format_params joins them.
std::vector<std::string> param_words(const search::FrozenTrial& trial);
// A parameter value as parameter lists print it: floats to 4 significant digits, the rest as
// search::param_value_to_string.
std::string format_param_value(const search::ParamValue& value);
// "minimize elapsed_time" per objective, for headers: `names` are the objectives' keys.
std::string describe_objectives(const search::StudyView& study,
                                const std::vector<std::string>& names = {});

// How precise the summary's numbers are: `tune best` prints the objective values exactly; the
// end-of-run block prints them as the live lines do, and fits k_live_width. Parameters are
// printed to 4 significant digits in both (exported scripts keep them exact).
enum class SummaryDigits { exact, live };

// The counts, the best trial (print_best), then how noisy one run is and whether the best's
// lead over the baseline and the runner-up is beyond it (tuner/judge/noise.h noise_lines, wrapped
// at k_live_width), so that the summary never crowns a winner without saying how sure it is.
// `objective_names` name a multi-objective study's objectives (study_file.h objective_names);
// without them they are "objective N".
void print_summary(std::ostream& out, const std::string& study_name, const search::StudyView& study,
                   const std::vector<std::string>& objective_names = {},
                   SummaryDigits digits = SummaryDigits::exact);
// How noisy one run is and whether the best's leads are beyond it (tuner/judge/noise.h
// noise_lines), in lines of k_live_width: "noise: ..." then one indented line per sentence;
// nothing for a multi-objective study or one with no completed trial. `tune confirm` prints it
// after its re-runs.
void print_noise(std::ostream& out, const search::StudyView& study);
void print_best(std::ostream& out, const search::StudyView& study,
                const std::vector<std::string>& objective_names = {},
                SummaryDigits digits = SummaryDigits::exact);
void print_trials(std::ostream& out, const search::StudyView& study);

}  // namespace tune::tuner
