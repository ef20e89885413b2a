// The noise model: how far one run of a setting varies in this study, and whether the best's
// lead over the baseline and the runner-up, and the spread of the settings, is beyond it. Every
// output that names a winner asks it. Pure functions over a StudyView; thread-safe.
// Design: docs/design-notes.md#tunerjudgenoiseh
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"

namespace tune::tuner {

enum class NoiseScale { relative, absolute };

// How a lead or the settings' spread compares with the noise.
enum class NoiseVerdict { unknown, within, beyond };
// "unknown", "within", "beyond".
std::string to_string(NoiseVerdict verdict);

// One run's noise, as measured in the study.
struct NoiseEstimate {
  NoiseScale scale = NoiseScale::relative;
  // From repeated settings: one run's pooled standard deviation (on `scale`: log units, about a
  // fraction, when relative), its degrees of freedom (runs minus settings), how many settings
  // were measured more than once, by how many runs in all, and the fewest and most of one.
  std::optional<double> sigma;
  int df = 0;
  int repeated_settings = 0, repeated_runs = 0, fewest_runs = 0, most_runs = 0;
  // From the trials' own intervals: how many runs carry one, and their median standard error.
  int window_runs = 0;
  std::optional<double> window_sigma;

  bool known() const { return sigma.has_value() || window_sigma.has_value(); }
};

// The best trial's lead over another trial (the baseline, the runner-up).
struct NoiseLead {
  int best = -1, other = -1;    // trial numbers
  int n_best = 1, n_other = 1;  // runs behind each side's value (re-runs, else its one run)
  double best_value = 0, other_value = 0;  // each side's believed value (ranking.h)
  // Relative scale: how many times better the best is (other / best when minimizing, best /
  // other when maximizing); the interval bounds are ratios. Absolute scale: no ratio; the
  // interval bounds are differences, better by (positive: the best is better).
  std::optional<double> ratio;
  double difference = 0;
  std::optional<double> low, high;  // 95%; none when the noise is unknown
  std::string method;               // "bootstrap", "noise model", or "" without an interval
  NoiseVerdict verdict = NoiseVerdict::unknown;
};

// The one-way analysis of variance over the distinct settings that completed.
struct SettingsTest {
  int settings = 0;
  double f = 0, df1 = 0, df2 = 0;  // df2 infinite: the noise is taken as known
  double p = 1;
};

struct StudyNoise {
  NoiseEstimate noise;
  int settings = 0;  // distinct settings (parameter values) with a completed run
  // The best's (or options.candidate's) lead; none without a baseline, or when it is the baseline.
  std::optional<NoiseLead> over_baseline;
  std::optional<NoiseLead> over_runner_up;  // the best-ranked trial with other parameters
  // The best-ranked rule baseline (ranking.h best_rule_trial: torchrun's OMP_NUM_THREADS=1...):
  // its number and rules, and the best's (or the candidate's) lead over it; no lead when it is
  // the best itself. best_rule stays -1 when no rule baseline is ranked.
  int best_rule = -1;
  std::vector<std::string> best_rule_names;
  std::optional<NoiseLead> over_best_rule;
  std::optional<SettingsTest> test;  // none when the noise is unknown or < 2 settings
  // beyond: the settings are told apart; within: they are not; unknown: no noise, or nothing to
  // tell apart.
  NoiseVerdict settings_verdict = NoiseVerdict::unknown;
  bool assessed = false;  // false for a multi-objective study, or with no completed trial
};

struct NoiseOptions {
  int bootstrap_samples = 4000;  // for the ratio of medians (>= 3 re-runs each side)
  std::uint64_t seed = 1;        // the bootstrap's: the same study gives the same interval
  // The trial whose lead over the baseline is judged (over_baseline), by the same rule as the
  // best's (`tune export --trial N`); none = the best, whose runner-up is judged too. A trial
  // that is not ranked (ranking.h) gets no lead.
  std::optional<int> candidate = std::nullopt;
};

StudyNoise assess_noise(const search::StudyView& study, const NoiseOptions& options = {});

// Within each group of completed search trials (`group_of`'s key; none: the trial is left out),
// the lead of the group's best (by believed value) over each other member, by trial number; the
// best itself has none. How "slowed" is judged against the job's own figure
// (judge/prediction_quality.h: the best of the same placement, beyond the noise).
std::map<int, NoiseLead> leads_within_groups(
    const search::StudyView& study,
    const std::function<std::optional<std::string>(const search::FrozenTrial&)>& group_of,
    const NoiseOptions& options = {});

// The lead of the first trial of each pair over the second (trial numbers; completed search
// trials), keyed by the pair, as leads_within_groups judges a group's best: how a verdict's cost
// is judged against a comparable trial (judge/verdict_cost.h). A pair with a trial that is not
// collected is left out; the first may turn out the worse (a negative difference).
std::map<std::pair<int, int>, NoiseLead> leads_between(
    const search::StudyView& study, const std::vector<std::pair<int, int>>& pairs,
    const NoiseOptions& options = {});

// The plain words every output prints, one sentence each; the commands they suggest name the
// study file STUDY, as the CLI's own hints do. One run's noise: "one run varies by 4.2% (the
// standard deviation of 3 settings measured 2-5 times, 7 degrees of freedom)", or that it is
// unknown and why.
std::string noise_text(const NoiseEstimate& noise);
// A lead: "1.037x, 95% CI [0.850x, 1.264x] (noise model): within the noise, not shown to be
// better", "... beyond the noise", or "1.037x: not judged against the noise, which is unknown".
std::string lead_text(const NoiseLead& lead);
// The best's lead over the best rule baseline, as noise_lines says it; "" without a rule.
std::string best_rule_line(const StudyNoise& noise);
// The conclusion: whether the settings are told apart, or what to run to find out.
std::string noise_verdict_text(const StudyNoise& noise);
// noise_text; "best #3 vs baseline #0: " + lead_text, and so for the runner-up (one line when
// the baseline is the runner-up: "best #3 vs baseline #0 (also the runner-up): ...") and the
// best rule ("best #3 vs best rule #2 (torchrun): ...; not shown to beat rule torchrun" when the
// lead is not beyond the noise; "the best #2 is rule torchrun's setting" when it is); then the
// conclusion.
std::vector<std::string> noise_lines(const StudyNoise& noise);

}  // namespace tune::tuner
