// make_pruner, and the none / median / percentile pruners (Optuna 3.1's NopPruner,
// MedianPruner and PercentilePruner, same options and the same decisions).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "search/pruner.h"
#include "search/pruners_sh.h"

namespace tune::search {
namespace {

class NopPruner final : public Pruner {
 public:
  bool prune(const StudyView&, const FrozenTrial&) override { return false; }
};

struct PercentileOptions {
  double percentile = 50.0;
  int n_startup_trials = 5;
  std::int64_t n_warmup_steps = 0;
  std::int64_t interval_steps = 1;
  int n_min_trials = 1;
};

// Linear interpolation between closest ranks (numpy's default percentile).
double percentile_of(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

class PercentilePruner final : public Pruner {
 public:
  explicit PercentilePruner(PercentileOptions options) : m_options(options) {}

  bool prune(const StudyView& study, const FrozenTrial& trial) override {
    if (trial.intermediate_values.empty()) return false;
    const std::int64_t step = trial.intermediate_values.rbegin()->first;
    if (step < m_options.n_warmup_steps) return false;
    if (!first_in_interval(trial, step)) return false;

    int n_complete = 0, n_reported = 0;  // a NaN report counts towards n_min_trials (Optuna)
    std::vector<double> at_step;
    for (const auto& t : study.trials()) {
      if (t.state != TrialState::complete) continue;
      ++n_complete;
      if (auto it = t.intermediate_values.find(step); it != t.intermediate_values.end()) {
        ++n_reported;
        if (!std::isnan(it->second)) at_step.push_back(it->second);
      }
    }
    if (n_complete == 0 || n_complete < m_options.n_startup_trials) return false;

    const bool minimize = study.direction() == Direction::minimize;
    double best = minimize ? std::numeric_limits<double>::infinity()
                           : -std::numeric_limits<double>::infinity();
    bool any = false;
    for (const auto& [s, v] : trial.intermediate_values) {
      if (std::isnan(v)) continue;
      any = true;
      best = minimize ? std::min(best, v) : std::max(best, v);
    }
    if (!any) return true;  // only NaN so far: nothing to keep it alive for (Optuna prunes too)
    if (n_reported < m_options.n_min_trials || at_step.empty()) return false;
    const double q = minimize ? m_options.percentile : 100.0 - m_options.percentile;
    const double threshold = percentile_of(std::move(at_step), q);
    return minimize ? best > threshold : best < threshold;
  }

 private:
  // Prune only at the first report in each interval after warm-up (Optuna's
  // _is_first_in_interval_step), so a trial reporting often is not judged more often.
  bool first_in_interval(const FrozenTrial& trial, std::int64_t step) const {
    const std::int64_t nearest =
        (step - m_options.n_warmup_steps) / m_options.interval_steps * m_options.interval_steps +
        m_options.n_warmup_steps;
    std::int64_t second_last = -1;
    if (trial.intermediate_values.size() > 1)
      second_last = std::prev(trial.intermediate_values.end(), 2)->first;
    return second_last < nearest;
  }

  PercentileOptions m_options;
};

std::expected<std::unique_ptr<Pruner>, std::string> make_percentile_pruner(
    const nlohmann::json& config, bool median) {
  PercentileOptions o;
  bool has_percentile = false;
  auto integer = [&](const std::string& key, const nlohmann::json& v, std::int64_t min,
                     std::int64_t& out) -> std::expected<void, std::string> {
    if (!v.is_number_integer() || v.get<std::int64_t>() < min) {
      return std::unexpected(fmt::format("pruner.{}: must be an integer >= {}", key, min));
    }
    out = v.get<std::int64_t>();
    return {};
  };
  for (const auto& [key, value] : config.items()) {
    std::int64_t n = 0;
    std::expected<void, std::string> ok;
    if (key == "type") {
      continue;
    } else if (key == "percentile" && !median) {
      if (!value.is_number() || value.get<double>() < 0.0 || value.get<double>() > 100.0) {
        return std::unexpected("pruner.percentile: must be a number in [0, 100]");
      }
      o.percentile = value.get<double>();
      has_percentile = true;
    } else if (key == "n_startup_trials") {
      if (ok = integer(key, value, 0, n); ok) o.n_startup_trials = static_cast<int>(n);
    } else if (key == "n_warmup_steps") {
      if (ok = integer(key, value, 0, n); ok) o.n_warmup_steps = n;
    } else if (key == "interval_steps") {
      if (ok = integer(key, value, 1, n); ok) o.interval_steps = n;
    } else if (key == "n_min_trials") {
      if (ok = integer(key, value, 1, n); ok) o.n_min_trials = static_cast<int>(n);
    } else {
      return std::unexpected(
          fmt::format("pruner.{}: unknown option for the {} pruner (known: {}n_startup_trials, "
                      "n_warmup_steps, interval_steps, n_min_trials)",
                      key, median ? "median" : "percentile", median ? "" : "percentile, "));
    }
    if (!ok) return std::unexpected(ok.error());
  }
  if (!median && !has_percentile) {
    return std::unexpected("pruner.percentile: required for the percentile pruner (0..100)");
  }
  return std::make_unique<PercentilePruner>(o);
}

}  // namespace

std::expected<std::unique_ptr<Pruner>, std::string> make_pruner(const nlohmann::json& config) {
  if (config.is_null() || (config.is_object() && config.empty())) {
    return std::make_unique<NopPruner>();
  }
  if (!config.is_object())
    return std::unexpected("pruner: must be a mapping such as {type: median}");
  std::string type = "none";
  if (auto it = config.find("type"); it != config.end()) {
    if (!it->is_string()) return std::unexpected("pruner.type: must be a string");
    type = it->get<std::string>();
  }
  if (type == "none" || type == "nop") {
    for (const auto& [key, value] : config.items()) {
      if (key != "type")
        return std::unexpected(fmt::format("pruner.{}: the 'none' pruner takes no options", key));
    }
    return std::make_unique<NopPruner>();
  }
  if (type == "median") return make_percentile_pruner(config, true);
  if (type == "percentile") return make_percentile_pruner(config, false);
  if (type == "successive_halving") return make_successive_halving_pruner(config);
  if (type == "hyperband") return make_hyperband_pruner(config);
  return std::unexpected(fmt::format(
      "pruner.type: unknown pruner '{}' (known: none, median, percentile, successive_halving, "
      "hyperband)",
      type));
}

}  // namespace tune::search
