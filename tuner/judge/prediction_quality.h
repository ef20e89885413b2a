// How right the probes' prediction of "oversubscribed" was: the confusion matrix, precision and
// recall over the trials with both a prediction and an observed verdict. Pure; thread-safe.
// Design: docs/design-notes.md#tunerjudgeprediction_qualityh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/trial.h"
#include "tuner/judge/verdict_cost.h"

namespace tune::tuner {

struct PredictionQuality {
  int trials = 0;  // with both a prediction and an observed verdict
  int true_positive = 0, false_positive = 0, false_negative = 0, true_negative = 0;
  std::optional<double> precision;  // none when nothing was predicted oversubscribed
  std::optional<double> recall;     // none when nothing was observed oversubscribed
  // The same trials judged by setting: each trial's "at risk" (probes::Prediction::at_risk)
  // against whether any run of the study with its threads and cpusets (probes::layout_signature;
  // its parameters where there is none, as with several nodes) was observed oversubscribed. A
  // program that is oversubscribed in some runs of one setting and not in others (hpcc's unbound
  // BLAS threads) cannot be predicted run by run; by setting it can. Trials whose prediction
  // has no `at_risk` (stored before it existed) are left out.
  int risk_trials = 0;
  int risk_true_positive = 0, risk_false_positive = 0, risk_false_negative = 0;
  std::optional<double> risk_precision, risk_recall;
  // Calibration of the predicted chance `risk` against each run's observed verdict: the mean
  // squared difference (Brier score; 0 is perfect), and the same for the yes/no prediction
  // (`oversubscribed` as a chance of 1 or 0: its share of wrong runs), which `risk` should beat.
  std::optional<double> brier, brier_yes_no;
};

// Whether a trial's observed verdict and duty cycles say something of its settings: it ran to its
// end (complete), or until the pruner stopped it (pruned; re-runs are stored so too), or until its
// time limit (an oversubscribed run is often the one that times out). A trial that failed
// otherwise (a wrong path in its command, a crash at start) ran a second of start-up, and its
// "ok" would count against the prediction and teach the next ones.
bool verdict_counts(const search::FrozenTrial& trial);

// What the probes said of one trial's CPUs: its observed verdict (system attr probe_verdict) when
// it has one, else the prediction made before launch (probe_prediction), as the report's probe
// column says it too.
struct CpuVerdict {
  std::optional<bool> oversubscribed;  // none: no probes looked at the trial
  bool observed = false;               // from the verdict, not the prediction
  // The worst cpuset's runnable threads per PU (observed: the sustained median; predicted: the
  // counted load), when the verdict or prediction carries it.
  std::optional<double> load_per_pu;
};
CpuVerdict cpu_verdict(const search::FrozenTrial& trial);

// A short marker for a live line: "OVERSUB 2.5x" (observed; 2.5 runnable threads per PU),
// "predicted OVERSUB 2.1x" (no verdict yet, or none measured), without the figure when unknown;
// "" when the CPUs were not oversubscribed or nothing is known.
std::string oversubscribed_mark(const CpuVerdict& verdict);

// Over the trials whose verdict counts.
PredictionQuality prediction_quality(const std::vector<search::FrozenTrial>& trials);

// The observed verdicts judged by the job's own figure (judge/verdict_cost.h). A trial was slowed
// by contention when its fastest comparable trial (the same placement and parameters but for
// smaller pools) beats it beyond the noise (judge/noise.h), or, while the noise is unknown, by
// `k_slowed_without_noise` or more. A trial without a comparable trial is not scored: another
// trial faster for another reason (its allocator, its binding) says nothing of its queue.
// Flagged: observed oversubscribed. Precision: of the flagged, how many were slowed; recall: of
// the slowed, how many were flagged. The worst contradictions are named: a trial flagged whose
// comparable trials were not faster beyond the noise, or one rated "ok" `k_contradiction_ratio`
// times slower than its comparable trial.
inline constexpr double k_slowed_without_noise = 1.10;
inline constexpr double k_contradiction_ratio = 1.5;

struct FigureQuality {
  int trials = 0;    // scored: a counted verdict, a value and a comparable trial
  int unscored = 0;  // a counted verdict and a value, but no comparable trial
  int true_positive = 0, false_positive = 0, false_negative = 0, true_negative = 0;
  std::optional<double> precision;  // none when nothing was flagged
  std::optional<double> recall;     // none when nothing was slowed
  bool noise_known = false;         // slowed = beyond the noise (else the fixed margin)
  // The same trials judged by the verdict's claim that the queue cost the job: flagged and costly
  // (its CPU time showed spin-waiting or preemption beyond time slicing, probes/queue_cost.h).
  int costly_true_positive = 0, costly_false_positive = 0, costly_false_negative = 0,
      costly_true_negative = 0;
  std::optional<double> costly_precision, costly_recall;
  struct Contradiction {
    int trial = -1, best = -1;  // trial numbers: the trial, its fastest comparable trial
    double ratio = 1;           // how many times better the comparable trial is
    bool flagged = false;       // flagged though its comparable trials were not slowed
  };
  std::vector<Contradiction> contradictions;  // the worst first, at most 3
};
FigureQuality figure_quality(const search::StudyView& study);
// The same from the study's verdict_costs(), for a caller that has them already.
FigureQuality figure_quality(const std::map<int, VerdictCost>& costs);

// "verdicts against the job's own figure, 12 of 20 trials scored (those with a comparable trial,
// the same but for smaller pools): precision 100% (7 of 7), recall 88% (7 of 8) (slowed: a
// comparable trial better beyond the noise); the verdict that it cost (spin-waiting or preemption
// seen): precision 100% (6 of 6), recall 75% (6 of 8)", then each contradiction: "; #5 flagged, its
// comparable trial #7 not faster beyond the noise (1.02x)" / "; #11 rated ok, 2.1x slower than #5";
// "verdicts against the job's own figure: none of 2 trials scored (no comparable trial, the same
// but for smaller pools)"; "" when no trial has both a verdict and a value.
std::string figure_quality_text(const FigureQuality& q);
nlohmann::json figure_quality_json(const FigureQuality& q);

// "the prediction against the probes' own verdicts (not the job's figure), 48 trials: precision
// 95% (19 of 20), recall 90% (19 of 21)" (precision: of the trials predicted oversubscribed;
// recall: of those observed so), then, when the two ways differ, "; by setting (at risk vs
// oversubscribed in some run): precision 100% (8 of 8), recall 100% (8 of 8)"; "" when no trial has
// both.
std::string prediction_quality_text(const PredictionQuality& q);

// {"trials", "true_positive", "false_positive", "false_negative", "true_negative", "precision",
// "recall", "by_setting": {"trials", "true_positive", "false_positive", "false_negative",
// "precision", "recall", "brier", "brier_yes_no"}} (null where undefined).
nlohmann::json prediction_quality_json(const PredictionQuality& q);

}  // namespace tune::tuner
