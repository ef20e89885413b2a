#include "tuner/run/prediction_quality.h"

#include <fmt/format.h>

#include "tuner/base/trial_attrs.h"

namespace tune::tuner {
namespace {

std::optional<bool> flag(const search::FrozenTrial& t, const char* attr, const char* key) {
  const auto it = t.system_attrs.find(attr);
  if (it == t.system_attrs.end() || !it->is_object()) return std::nullopt;
  const auto v = it->find(key);
  if (v == it->end() || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::string share_text(const std::optional<double>& share, int hits, int of, const char* what) {
  if (!share) return fmt::format("n/a (none {})", what);
  return fmt::format("{:.0f}% ({} of {} {})", 100 * *share, hits, of, what);
}

}  // namespace

bool verdict_counts(const search::FrozenTrial& trial) {
  using search::TrialState;
  if (trial.state == TrialState::complete || trial.state == TrialState::pruned) return true;
  if (trial.state != TrialState::fail) return false;
  const auto reason = trial.system_attrs.find(k_attr_fail_reason);
  return reason != trial.system_attrs.end() && reason->is_string() &&
         reason->get<std::string>().starts_with(k_timed_out_reason);
}

PredictionQuality prediction_quality(const std::vector<search::FrozenTrial>& trials) {
  PredictionQuality q;
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
  }
  const int predicted = q.true_positive + q.false_positive;
  const int observed = q.true_positive + q.false_negative;
  if (predicted > 0) q.precision = static_cast<double>(q.true_positive) / predicted;
  if (observed > 0) q.recall = static_cast<double>(q.true_positive) / observed;
  return q;
}

std::string prediction_quality_text(const PredictionQuality& q) {
  if (q.trials == 0) return "";
  return fmt::format(
      "predicted vs observed oversubscription over {} trial{}: precision {}, "
      "recall {}",
      q.trials, q.trials == 1 ? "" : "s",
      share_text(q.precision, q.true_positive, q.true_positive + q.false_positive, "predicted"),
      share_text(q.recall, q.true_positive, q.true_positive + q.false_negative, "observed"));
}

nlohmann::json prediction_quality_json(const PredictionQuality& q) {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"trials", q.trials},
          {"true_positive", q.true_positive},
          {"false_positive", q.false_positive},
          {"false_negative", q.false_negative},
          {"true_negative", q.true_negative},
          {"precision", opt(q.precision)},
          {"recall", opt(q.recall)}};
}

}  // namespace tune::tuner
