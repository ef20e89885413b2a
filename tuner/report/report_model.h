// The study report's model: ReportData, built once from a study's trials by build_report() (a
// pure function), which every writer (reporter.h) formats and none re-derives. Reads no
// storage; thread-compatible.
// Design: docs/design-notes.md#tunerreportreport_modelh
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/importance.h"
#include "search/trial.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/noise.h"
#include "tuner/judge/prediction_quality.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/summary.h"
#include "tuner/judge/verdict_cost.h"
#include "tuner/launch/program_identity.h"

namespace tune::tuner {

// Bumped whenever a JSON field changes meaning or disappears (additions keep the version).
// 2: a re-run is named one way: "rerun_of" (was "confirm_of"), "rerun_values" (was "repeats"),
// "reruns_failed" and counts.reruns (were "repeats_failed" and counts.confirm_runs).
// 3: the report owns up to noise: speedup.ci95 is also given from the noise of one run (its
// "ci_method" says which), and the speedup of a re-measured trial over one that was not compares
// believed values (the median of re-runs against one run; was both search runs); added "noise",
// speedup.verdict, importance[].low/high, "importance_verdict" and "importance_caveat".
inline constexpr int k_report_schema_version = 3;

struct ReportParam {
  std::string name;
  nlohmann::json value;    // external value (null, bool, number or string)
  // As a person reads it, in every table and list: floats to 4 significant digits ("32", not
  // "31.999999999999986"); `value` keeps the exact number (JSON, exported scripts).
  std::string short_text;
};

struct ReportTrial {
  int number = -1;
  search::TrialState state = search::TrialState::running;
  std::optional<double> value;       // of this run
  std::vector<double> values;        // every objective's, in a multi-objective study (else empty)
  std::vector<double> rerun_values;  // measured values of its COMPLETE re-runs, in run order
  int reruns_failed = 0;             // its re-runs that did not complete
  std::optional<double> median;      // of `rerun_values`, when any
  bool feasible = true;
  bool baseline = false;            // the first enqueued trial
  std::vector<std::string> rules;   // the rules a rule baseline stands for (ranking.h rules_of)
  bool first_guess = false;         // the first guess's trial (tuner/judge/first_guess.h)
  std::optional<int> rerun_of;      // set on a re-run: the original's number
  std::vector<ReportParam> params;  // search-space order
  std::optional<double> wall_s;
  std::optional<double> start_s;  // seconds since the study's first trial started
  std::optional<double> end_s;
  std::string fail_reason;
  std::vector<ProgramIdentity> programs;  // what it ran (user attr "programs"), when stored
  std::string probe;  // probe verdict line (observed, else predicted); "" = none
  // Beside it, where the ranks' CPU time went: "CPU time per library: rank 0: 71% libopenblas,
  // ..." (probes::read_cpu_time), or why it was not sampled; "" = the verdict says nothing of it.
  std::string cpu_time;
  std::optional<bool> oversubscribed;  // observed by the probes (else predicted)
  // What its queueing cost, judged by a comparable trial (judge/verdict_cost.h), where it was
  // judged: the JSON report's per-trial figure (bench/grids records it per grid point).
  std::optional<VerdictCost> cost;
  // CPUs' worth used outside the study while it ran (user attr external_cpu), when measured;
  // whether that was above the study's limit (measured under load: not ranked on its own run).
  std::optional<double> external_cpus;
  bool under_load = false;

  std::string params_text() const;  // "a=1 b=core bucket_mb=0.8846" (short_text)
  // state_word (tuner/judge/summary.h): RERUN for a completed re-run, else Optuna's word.
  std::string state_text() const;
};

struct SpeedupEstimate {
  double ratio = 1.0;  // > 1: the best trial beats the baseline (time ratio for minimize)
  // 95%: the percentile bootstrap of the ratio of medians (3 or more re-runs each side), else
  // from the noise of one run (tuner/judge/noise.h); none when the noise is unknown.
  std::optional<double> ci_low, ci_high;
  std::string ci_method;  // "bootstrap", "noise model", or "" without an interval
  NoiseVerdict verdict = NoiseVerdict::unknown;  // is the ratio beyond the noise?
  int n_best = 1, n_baseline = 1;                // runs behind each side
  std::string basis;                             // e.g. "medians of 5 + 5 re-runs" or "single runs"
  std::string note;  // what the verdict means for the reader, when it is not beyond
};

// A trial measured under load (tuner/run/load_check.h): listed with the load, and what stands
// for it in the ranking.
struct LoadedTrial {
  int number = -1;
  std::optional<int> rerun_of;           // a re-run: left out of its original's believed value
  double external_cpus = 0;              // CPUs' worth used outside the study while it ran
  double limit = 0;                      // the study's limit it was judged by
  std::optional<double> rank_cpu_share;  // mean CPU one of its ranks got (1.0 = a whole CPU)
  std::vector<int> quiet_reruns;  // re-runs measured without load that stand for it, in order
};

// The first guess (tuner/judge/first_guess.h) against what its trial measured: the model's own
// score, so the reader sees how far to trust the next one.
struct GuessSummary {
  int number = -1;                  // its trial
  std::string changed;              // "bind_to=core threads=1" (what differs from the baseline)
  std::optional<double> predicted;  // in the objective's units, when the baseline had a value
  std::optional<double> predicted_factor;  // over the baseline's value (> 1: better)
  std::optional<double> measured;          // its believed value (the median of its re-runs, else
                                           // its run), when it completed
  std::optional<double> measured_factor;   // over the baseline's believed value
  std::vector<std::string> reasoning;
};

struct FailureGroup {
  std::string reason;
  std::vector<int> trials;
};

struct ParamAxis {
  std::string name;
  std::string kind;  // "float", "int" or "categorical"
  bool log = false;
  double low = 0, high = 0;          // numeric kinds
  std::vector<std::string> choices;  // categorical, as printed
};

// What the ranks' libraries said they run (probes/library_report.h): the baseline's (else the
// first trial's that has one), the best's where its kernels differ, and what the study tried.
struct LibrariesSection {
  int trial = -1;                  // the trial `lines` are from
  std::vector<std::string> lines;  // one per library
  std::vector<std::string> notes;  // kernels older than the CPU, two OpenMP runtimes
  int best_trial = -1;
  std::vector<std::string> best_lines;  // the best's, when its kernels differ from `lines`
  std::string kernels_tried;            // which kernels the study's trials ran, or that none other
};

struct ReportData {
  int schema_version = k_report_schema_version;
  std::string study;
  std::string direction;  // "minimize" | "maximize" (several objectives: "minimize a, maximize b")
  std::string objective;  // the objective's log key, when the study file is known
  std::string storage;    // the database, its password masked (redact_storage_url)
  StateCounts counts;     // search trials only; re-runs are counted apart
  int reruns = 0;
  std::optional<ReportTrial> best;
  std::string best_basis;  // how the best was chosen
  // No trial ran on a quiet machine: the best is the best measured under load (ranking.h), and
  // best_basis says so.
  bool best_under_load = false;
  std::optional<ReportTrial> baseline;
  std::optional<SpeedupEstimate> speedup;
  std::string speedup_note;  // why there is no speedup, when there is none
  // The best-ranked rule baseline (tuner/study/rules.h) and the best's speedup over it, or why
  // there is none (n_baseline counts the rule's runs).
  std::optional<ReportTrial> best_rule;
  std::optional<SpeedupEstimate> rule_speedup;
  std::string rule_speedup_note;
  std::vector<ReportTrial> top;     // best first, feasible before infeasible
  std::vector<ReportTrial> trials;  // every trial (re-runs too), number order
  StudyNoise noise;                 // one run's noise, and the leads and settings against it
  std::vector<search::ImportanceShare> importance;  // largest share first, with its interval
  std::string importance_note;  // what it was computed over, or why it is missing
  // Whether the shares rank anything: beyond (the settings differ beyond the noise), within (they
  // do not: the writers show no ranking, only the caveat), unknown (the noise is unknown, or not
  // assessed: shown with the caveat).
  NoiseVerdict importance_verdict = NoiseVerdict::unknown;
  std::string importance_caveat;              // the plain words for it; "" when beyond
  std::vector<FailureGroup> failures;         // most frequent first
  std::vector<LoadedTrial> under_load;        // the trials measured under load, number order
  std::optional<GuessSummary> first_guess;    // when the runner enqueued one
  std::optional<LibrariesSection> libraries;  // when a trial's libraries reported
  PredictionQuality prediction;               // the probes' prediction against observed verdicts
  FigureQuality figure;                       // the observed verdicts against the job's own figure
  std::vector<ParamAxis> axes;                // the search space
  // A multi-objective study (two or more directions) has no single best trial: best, top and
  // speedup stay empty and the writers show the Pareto front instead.
  std::vector<std::string> directions;  // one per objective: "minimize" | "maximize"
  std::vector<std::string> objectives;  // their names: log keys, else "objective N"
  std::vector<ReportTrial> front;       // the Pareto front (judge/ranking.h front_trials), number order
  // And each parameter's importance for each objective, in the order of `objectives`
  // (importance and importance_note above are the first objective's, which the HTML chart draws).
  struct ObjectiveImportance {
    std::vector<search::ImportanceShare> shares;  // largest share first
    std::string note;
  };
  std::vector<ObjectiveImportance> importance_by_objective;

  bool multi_objective() const { return directions.size() > 1; }
  // Whether any search trial (not a re-run) completed with a value: the charts of values have
  // something to draw.
  bool any_completed() const;
  // Whether any trial carries a probe verdict or prediction, or the prediction was scored.
  bool any_probe() const;
};

struct ReportOptions {
  int top_n = 10;                // rows of the top table
  int bootstrap_samples = 4000;  // resamples for the speedup interval
  std::uint64_t seed = 1;        // bootstrap RNG seed: the same study gives the same report
  bool importance = true;        // fANOVA (a forest fit; skip for quick looks)
  // Forests fit to bootstrap resamples of the trials for each share's interval (16 trees each:
  // 20 cost five times the estimate's own forest); 0: no interval.
  int importance_resamples = 20;
};

// The Libraries section of `data` (its baseline and best already set); none when no trial of
// `study` carries what its libraries said (report_libraries.cpp).
std::optional<LibrariesSection> libraries_section(const search::StudyView& study,
                                                  const ReportData& data);

// `space` is the study file's search space; empty = taken from the trials' distributions.
ReportData build_report(const search::StudyView& study, const std::string& study_name,
                        const search::SearchSpace& space, const ReportOptions& options = {});

}  // namespace tune::tuner
