#include "tuner/judge/prediction_quality.h"

#include <map>

#include <fmt/format.h>

#include "probes/verdict_memory.h"

#include "tuner/base/trial_attrs.h"
#include "tuner/judge/verdict_cost.h"

namespace tune::tuner {
namespace {

std::optional<bool> flag(const search::FrozenTrial& t, const char* attr, const char* key) {
  const auto it = t.system_attrs.find(attr);
  if (it == t.system_attrs.end() || !it->is_object()) return std::nullopt;
  const auto v = it->find(key);
  if (v == it->end() || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

// "75% (3 of 4)": the share says what it is of (precision: of the predicted; recall: of the
// observed), so the count does not repeat it and the line fits a terminal.
std::string share_text(const std::optional<double>& share, int hits, int of, const char* what) {
  if (!share) return fmt::format("n/a (none {})", what);
  return fmt::format("{:.0f}% ({} of {})", 100 * *share, hits, of);
}

// The largest `numerator / pu_count` over the objects of `list` (a verdict's sustained loads, a
// prediction's cpusets), or none.
std::optional<double> worst_per_pu(const nlohmann::json* list, const char* numerator) {
  if (list == nullptr || !list->is_array()) return std::nullopt;
  std::optional<double> worst;
  for (const auto& item : *list) {
    if (!item.is_object()) continue;
    const auto n = item.find(numerator), pus = item.find("pu_count");
    if (n == item.end() || pus == item.end() || !n->is_number() || !pus->is_number()) continue;
    const double count = pus->get<double>();
    if (count <= 0) continue;
    const double load = n->get<double>() / count;
    if (!worst || load > *worst) worst = load;
  }
  return worst;
}

const nlohmann::json* object_attr(const search::FrozenTrial& t, const char* attr) {
  const auto it = t.system_attrs.find(attr);
  return it != t.system_attrs.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

CpuVerdict cpu_verdict(const search::FrozenTrial& trial) {
  CpuVerdict v;
  if (const auto observed = flag(trial, k_attr_probe_verdict, "observed_oversubscribed")) {
    v.oversubscribed = observed;
    v.observed = true;
    const auto* verdict = object_attr(trial, k_attr_probe_verdict);
    const auto sustained = verdict->find("sustained");
    if (sustained != verdict->end() && sustained->is_object()) {
      const auto loads = sustained->find("loads");
      v.load_per_pu =
          worst_per_pu(loads != sustained->end() ? &*loads : nullptr, "median_runnable");
    }
    return v;
  }
  if (const auto predicted = flag(trial, k_attr_probe_prediction, "oversubscribed")) {
    v.oversubscribed = predicted;
    const auto* prediction = object_attr(trial, k_attr_probe_prediction);
    const auto cpusets = prediction->find("cpusets");
    v.load_per_pu = worst_per_pu(cpusets != prediction->end() ? &*cpusets : nullptr, "load");
  }
  return v;
}

std::string oversubscribed_mark(const CpuVerdict& v) {
  if (!v.oversubscribed.value_or(false)) return "";
  std::string mark = v.observed ? "OVERSUB" : "predicted OVERSUB";
  if (v.load_per_pu) mark += fmt::format(" {:.2g}x", *v.load_per_pu);
  return mark;
}

bool verdict_counts(const search::FrozenTrial& trial) {
  using search::TrialState;
  if (trial.state == TrialState::complete || trial.state == TrialState::pruned) return true;
  if (trial.state != TrialState::fail) return false;
  const auto reason = trial.system_attrs.find(k_attr_fail_reason);
  return reason != trial.system_attrs.end() && reason->is_string() &&
         reason->get<std::string>().starts_with(k_timed_out_reason);
}

namespace {

std::optional<double> share(int hits, int of) {
  return of > 0 ? std::optional<double>(static_cast<double>(hits) / of) : std::nullopt;
}

// The setting a trial ran, for judging "at risk": its threads and cpusets, else its parameters.
std::string setting_key(const search::FrozenTrial& t) {
  if (const auto* prediction = object_attr(t, k_attr_probe_prediction)) {
    std::string layout = probes::layout_signature(*prediction);
    if (!layout.empty()) return "layout " + layout;
  }
  std::string params = "params";
  for (const auto& [name, value] : t.params) params += fmt::format(" {}={}", name, value);
  return params;
}

// One judged run: its prediction's at_risk and risk, and its observed verdict.
struct RiskRun {
  std::string setting;
  bool at_risk = false;
  double risk = 0;
  bool predicted = false;  // the yes/no prediction
  bool observed = false;
};

void add_risk_quality(const std::vector<RiskRun>& runs, PredictionQuality& q) {
  std::map<std::string, bool> seen_over;  // setting -> observed oversubscribed in some run
  for (const RiskRun& r : runs) seen_over[r.setting] = seen_over[r.setting] || r.observed;
  double squared = 0, wrong = 0;
  for (const RiskRun& r : runs) {
    const bool truth = seen_over[r.setting];
    q.risk_trials += 1;
    if (r.at_risk) (truth ? q.risk_true_positive : q.risk_false_positive) += 1;
    if (!r.at_risk && truth) q.risk_false_negative += 1;
    const double o = r.observed ? 1.0 : 0.0;
    squared += (r.risk - o) * (r.risk - o);
    wrong += r.predicted == r.observed ? 0 : 1;
  }
  q.risk_precision = share(q.risk_true_positive, q.risk_true_positive + q.risk_false_positive);
  q.risk_recall = share(q.risk_true_positive, q.risk_true_positive + q.risk_false_negative);
  if (!runs.empty()) {
    q.brier = squared / runs.size();
    q.brier_yes_no = wrong / runs.size();
  }
}

}  // namespace

PredictionQuality prediction_quality(const std::vector<search::FrozenTrial>& trials) {
  PredictionQuality q;
  std::vector<RiskRun> risk_runs;
  for (const auto& t : trials) {
    if (!verdict_counts(t)) continue;
    const auto predicted = flag(t, k_attr_probe_prediction, "oversubscribed");
    const auto observed = flag(t, k_attr_probe_verdict, "observed_oversubscribed");
    if (!predicted || !observed) continue;
    q.trials += 1;
    if (*predicted)
      (*observed ? q.true_positive : q.false_positive) += 1;
    else
      (*observed ? q.false_negative : q.true_negative) += 1;
    const auto at_risk = flag(t, k_attr_probe_prediction, "at_risk");
    const auto* prediction = object_attr(t, k_attr_probe_prediction);
    const auto risk = prediction->find("risk");
    if (at_risk && risk != prediction->end() && risk->is_number())
      risk_runs.push_back({setting_key(t), *at_risk, risk->get<double>(), *predicted, *observed});
  }
  q.precision = share(q.true_positive, q.true_positive + q.false_positive);
  q.recall = share(q.true_positive, q.true_positive + q.false_negative);
  add_risk_quality(risk_runs, q);
  return q;
}

std::string prediction_quality_text(const PredictionQuality& q) {
  if (q.trials == 0) return "";
  std::string text = fmt::format(
      "the prediction against the probes' own verdicts (not the job's figure), {} trial{}: "
      "precision "
      "{}, recall {}",
      q.trials, q.trials == 1 ? "" : "s",
      share_text(q.precision, q.true_positive, q.true_positive + q.false_positive, "predicted"),
      share_text(q.recall, q.true_positive, q.true_positive + q.false_negative, "observed"));
  const bool same = q.risk_true_positive == q.true_positive &&
                    q.risk_false_positive == q.false_positive &&
                    q.risk_false_negative == q.false_negative && q.risk_trials == q.trials;
  if (q.risk_trials == 0 || same) return text;
  return text + fmt::format(
                    "; by setting (at risk vs oversubscribed in some run): precision {}, recall {}",
                    share_text(q.risk_precision, q.risk_true_positive,
                               q.risk_true_positive + q.risk_false_positive, "at risk"),
                    share_text(q.risk_recall, q.risk_true_positive,
                               q.risk_true_positive + q.risk_false_negative, "oversubscribed"));
}

namespace {

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The confusion matrix's counts, precision and recall, as both JSON objects start.
nlohmann::json confusion_json(int trials, int tp, int fp, int fn, int tn,
                              const std::optional<double>& precision,
                              const std::optional<double>& recall) {
  return {{"trials", trials},
          {"true_positive", tp},
          {"false_positive", fp},
          {"false_negative", fn},
          {"true_negative", tn},
          {"precision", optional_json(precision)},
          {"recall", optional_json(recall)}};
}

}  // namespace

nlohmann::json prediction_quality_json(const PredictionQuality& q) {
  nlohmann::json j = confusion_json(q.trials, q.true_positive, q.false_positive, q.false_negative,
                                    q.true_negative, q.precision, q.recall);
  j["by_setting"] = {{"trials", q.risk_trials},
                     {"true_positive", q.risk_true_positive},
                     {"false_positive", q.risk_false_positive},
                     {"false_negative", q.risk_false_negative},
                     {"precision", optional_json(q.risk_precision)},
                     {"recall", optional_json(q.risk_recall)},
                     {"brier", optional_json(q.brier)},
                     {"brier_yes_no", optional_json(q.brier_yes_no)}};
  return j;
}

FigureQuality figure_quality(const search::StudyView& study) {
  return figure_quality(verdict_costs(study));
}

FigureQuality figure_quality(const std::map<int, VerdictCost>& costs) {
  FigureQuality q;
  for (const auto& [number, cost] : costs) {
    if (cost.against < 0 || !cost.lead) {
      q.unscored += 1;
      continue;
    }
    q.trials += 1;
    q.noise_known = q.noise_known || cost.noise_known;
    const bool flagged = cost.flagged, slowed = cost.slowed;
    if (flagged && slowed) q.true_positive += 1;
    if (flagged && !slowed) q.false_positive += 1;
    if (!flagged && slowed) q.false_negative += 1;
    if (!flagged && !slowed) q.true_negative += 1;
    if (cost.costly)
      (slowed ? q.costly_true_positive : q.costly_false_positive) += 1;
    else
      (slowed ? q.costly_false_negative : q.costly_true_negative) += 1;
    if ((flagged && !slowed) || (!flagged && cost.ratio >= k_contradiction_ratio))
      q.contradictions.push_back({number, cost.against, cost.ratio, flagged});
  }
  q.precision = share(q.true_positive, q.true_positive + q.false_positive);
  q.recall = share(q.true_positive, q.true_positive + q.false_negative);
  q.costly_precision =
      share(q.costly_true_positive, q.costly_true_positive + q.costly_false_positive);
  q.costly_recall = share(q.costly_true_positive, q.costly_true_positive + q.costly_false_negative);
  std::ranges::stable_sort(q.contradictions, [](const auto& a, const auto& b) {
    return (a.flagged ? 0.0 : a.ratio) > (b.flagged ? 0.0 : b.ratio);
  });
  if (q.contradictions.size() > 3) q.contradictions.resize(3);
  return q;
}

std::string figure_quality_text(const FigureQuality& q) {
  const int judged = q.trials + q.unscored;
  if (judged == 0) return "";
  if (q.trials == 0)
    return fmt::format(
        "verdicts against the job's own figure: none of {} trial{} scored (no comparable trial, "
        "the same but for smaller pools)",
        judged, judged == 1 ? "" : "s");
  std::string out = fmt::format(
      "verdicts against the job's own figure, {} of {} trials scored (those with a comparable "
      "trial, the same but for smaller pools): precision {}, recall {} (slowed: a comparable "
      "trial better {})",
      q.trials, judged,
      share_text(q.precision, q.true_positive, q.true_positive + q.false_positive, "flagged"),
      share_text(q.recall, q.true_positive, q.true_positive + q.false_negative, "slowed"),
      q.noise_known ? "beyond the noise"
                    : fmt::format("by {:.0f}% or more, the noise being unknown",
                                  100 * (k_slowed_without_noise - 1)));
  out += fmt::format(
      "; the verdict that it cost (spin-waiting or preemption seen): precision {}, recall {}",
      share_text(q.costly_precision, q.costly_true_positive,
                 q.costly_true_positive + q.costly_false_positive, "judged costly"),
      share_text(q.costly_recall, q.costly_true_positive,
                 q.costly_true_positive + q.costly_false_negative, "slowed"));
  for (const auto& c : q.contradictions) {
    if (c.flagged)
      out += fmt::format(
          "; #{} flagged, its comparable trial #{} not faster beyond the noise ({:.2f}x)", c.trial,
          c.best, c.ratio);
    else
      out += fmt::format("; #{} rated ok, {:.2g}x slower than #{}", c.trial, c.ratio, c.best);
  }
  return out;
}

nlohmann::json figure_quality_json(const FigureQuality& q) {
  nlohmann::json contradictions = nlohmann::json::array();
  for (const auto& c : q.contradictions)
    contradictions.push_back(
        {{"trial", c.trial}, {"best", c.best}, {"ratio", c.ratio}, {"flagged", c.flagged}});
  nlohmann::json j = confusion_json(q.trials, q.true_positive, q.false_positive, q.false_negative,
                                    q.true_negative, q.precision, q.recall);
  j["costly"] = confusion_json(q.trials, q.costly_true_positive, q.costly_false_positive,
                               q.costly_false_negative, q.costly_true_negative, q.costly_precision,
                               q.costly_recall);
  j["unscored"] = q.unscored;
  j["noise_known"] = q.noise_known;
  j["contradictions"] = contradictions;
  return j;
}

}  // namespace tune::tuner
