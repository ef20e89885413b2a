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
      "predicted vs observed oversubscription, {} trial{}: precision {}, recall {}", q.trials,
      q.trials == 1 ? "" : "s",
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
