// Successive halving (ASHA) and Hyperband pruners, Optuna 3.1's decisions.
//
// Optuna records a trial's value at each rung it completes as a system attr
// ("completed_rung_K"). The Pruner interface only reads the study, so the rungs are derived from
// the intermediate values instead: a trial completed rung K with the value it reported at its
// first step >= the rung's promotion step. This is what Optuna stores when prune() runs after
// every report, needs no writes, and gives the same answer in every tune process sharing the
// study. A pruner keeps only its configuration and the lazily estimated resources.
#include "search/pruners_sh.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace tune::search {
namespace {

struct ShOptions {
  std::optional<std::int64_t> min_resource;  // none = "auto"
  std::int64_t reduction_factor = 4;
  std::int64_t min_early_stopping_rate = 0;
  std::int64_t bootstrap_count = 0;
};

std::optional<std::int64_t> last_step(const FrozenTrial& t) {
  if (t.intermediate_values.empty()) return std::nullopt;
  return t.intermediate_values.rbegin()->first;
}

// Step at which rung `rung` is judged: min_resource * rf^(mesr + rung), saturating.
std::int64_t promotion_step(std::int64_t min_resource, std::int64_t rf, std::int64_t exponent) {
  std::int64_t step = min_resource;
  for (std::int64_t i = 0; i < exponent; ++i) {
    if (step > std::numeric_limits<std::int64_t>::max() / rf) {
      return std::numeric_limits<std::int64_t>::max();
    }
    step *= rf;
  }
  return step;
}

// The value trial t recorded for a rung judged at `promotion`: its report at the first step
// >= promotion. NaN reports prune before recording in Optuna, so they record nothing.
std::optional<double> rung_value(const FrozenTrial& t, std::int64_t promotion) {
  auto it = t.intermediate_values.lower_bound(promotion);
  if (it == t.intermediate_values.end() || std::isnan(it->second)) return std::nullopt;
  return it->second;
}

bool promotable(double value, std::vector<double>& competing, std::int64_t rf,
                Direction direction) {
  auto idx = static_cast<std::int64_t>(competing.size()) / rf - 1;
  if (idx == -1) idx = 0;
  std::sort(competing.begin(), competing.end());
  if (direction == Direction::maximize) {
    return value >= competing[competing.size() - 1 - static_cast<std::size_t>(idx)];
  }
  return value <= competing[static_cast<std::size_t>(idx)];
}

// Optuna's _estimate_min_resource: 1% of the longest COMPLETE trial, at least 1.
std::optional<std::int64_t> estimate_min_resource(const StudyView& study) {
  std::optional<std::int64_t> longest;
  for (const auto& t : study.trials()) {
    if (t.state != TrialState::complete) continue;
    if (auto s = last_step(t)) longest = std::max(longest.value_or(*s), *s);
  }
  if (!longest) return std::nullopt;
  return std::max<std::int64_t>(*longest / 100, 1);
}

// The successive-halving decision among the trials `in_bracket` accepts.
template <class Filter>
bool successive_halving_prune(const ShOptions& o, std::int64_t min_resource, const StudyView& study,
                              const FrozenTrial& trial, Filter&& in_bracket) {
  const auto step = last_step(trial);
  if (!step) return false;
  const double value = trial.intermediate_values.rbegin()->second;
  // Rungs completed at earlier reports: those judged at or before the previous step.
  std::optional<std::int64_t> previous;
  if (trial.intermediate_values.size() > 1) {
    previous = std::prev(trial.intermediate_values.end(), 2)->first;
  }
  std::int64_t rung = 0;
  auto promotion = [&](std::int64_t r) {
    return promotion_step(min_resource, o.reduction_factor, o.min_early_stopping_rate + r);
  };
  while (previous && promotion(rung) <= *previous) ++rung;

  std::vector<double> competing;
  while (true) {
    const std::int64_t promo = promotion(rung);
    if (*step < promo) return false;
    if (std::isnan(value)) return true;
    competing.clear();
    for (const auto& t : study.trials()) {
      if (t.number == trial.number || !in_bracket(t)) continue;
      if (auto v = rung_value(t, promo)) competing.push_back(*v);
    }
    competing.push_back(value);
    if (static_cast<std::int64_t>(competing.size()) <= o.bootstrap_count) return true;
    if (!promotable(value, competing, o.reduction_factor, study.direction())) return true;
    ++rung;
  }
}

class SuccessiveHalvingPruner final : public Pruner {
 public:
  explicit SuccessiveHalvingPruner(ShOptions options) : m_options(options) {}
  bool prune(const StudyView& study, const FrozenTrial& trial) override {
    if (!m_options.min_resource) {
      m_options.min_resource = estimate_min_resource(study);
      if (!m_options.min_resource) return false;
    }
    return successive_halving_prune(m_options, *m_options.min_resource, study, trial,
                                    [](const FrozenTrial&) { return true; });
  }

 private:
  ShOptions m_options;
};

// zlib's CRC-32 (what Python's binascii.crc32 computes), for Optuna's bracket assignment.
std::uint32_t crc32(const std::string& text) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1U) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFU;
  for (unsigned char ch : text) crc = table[(crc ^ ch) & 0xFFU] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFU;
}

struct HyperbandOptions {
  std::int64_t min_resource = 1;
  std::optional<std::int64_t> max_resource;  // none = "auto"
  std::int64_t reduction_factor = 3;
  std::int64_t bootstrap_count = 0;
  std::string study_name;  // brackets hash "<study_name>_<trial number>", as Optuna
};

class HyperbandPruner final : public Pruner {
 public:
  explicit HyperbandPruner(HyperbandOptions options) : m_options(std::move(options)) {}

  bool prune(const StudyView& study, const FrozenTrial& trial) override {
    if (m_budgets.empty()) {
      initialise(study);
      if (m_budgets.empty()) return false;
    }
    const std::size_t bracket = bracket_of(trial.number);
    ShOptions sh;
    sh.min_resource = m_options.min_resource;
    sh.reduction_factor = m_options.reduction_factor;
    sh.min_early_stopping_rate = static_cast<std::int64_t>(bracket);
    sh.bootstrap_count = m_options.bootstrap_count;
    return successive_halving_prune(
        sh, m_options.min_resource, study, trial,
        [&](const FrozenTrial& t) { return bracket_of(t.number) == bracket; });
  }

 private:
  void initialise(const StudyView& study) {
    if (!m_options.max_resource) {
      std::optional<std::int64_t> longest;
      for (const auto& t : study.trials()) {
        if (t.state != TrialState::complete) continue;
        if (auto s = last_step(t)) longest = std::max(longest.value_or(*s), *s);
      }
      if (!longest) return;
      m_options.max_resource = *longest + 1;
    }
    const double ratio =
        static_cast<double>(*m_options.max_resource) / static_cast<double>(m_options.min_resource);
    const auto n_brackets =
        static_cast<std::int64_t>(std::floor(
            std::log(ratio) / std::log(static_cast<double>(m_options.reduction_factor)))) +
        1;
    m_total = 0;
    for (std::int64_t b = 0; b < std::max<std::int64_t>(n_brackets, 1); ++b) {
      const std::int64_t s = n_brackets - 1 - b;
      const double budget = std::ceil(
          static_cast<double>(n_brackets) *
          std::pow(static_cast<double>(m_options.reduction_factor), static_cast<double>(s)) /
          static_cast<double>(s + 1));
      m_budgets.push_back(static_cast<std::int64_t>(std::max(budget, 1.0)));
      m_total += m_budgets.back();
    }
  }

  std::size_t bracket_of(int number) const {
    auto n = static_cast<std::int64_t>(crc32(fmt::format("{}_{}", m_options.study_name, number)) %
                                       static_cast<std::uint64_t>(m_total));
    for (std::size_t b = 0; b < m_budgets.size(); ++b) {
      n -= m_budgets[b];
      if (n < 0) return b;
    }
    return m_budgets.size() - 1;
  }

  HyperbandOptions m_options;
  std::vector<std::int64_t> m_budgets;
  std::int64_t m_total = 0;
};

std::expected<std::int64_t, std::string> read_int(const std::string& key, const nlohmann::json& v,
                                                  std::int64_t min) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < min) {
    return std::unexpected(fmt::format("pruner.{}: must be an integer >= {}", key, min));
  }
  return v.get<std::int64_t>();
}

}  // namespace

std::expected<std::unique_ptr<Pruner>, std::string> make_successive_halving_pruner(
    const nlohmann::json& config) {
  ShOptions o;
  if (!config.is_null() && !config.is_object()) {
    return std::unexpected("pruner: must be a mapping such as {type: successive_halving}");
  }
  for (const auto& [key, value] : config.items()) {
    std::expected<std::int64_t, std::string> n = 0;
    if (key == "type") continue;
    if (key == "min_resource") {
      if (value.is_string() && value.get<std::string>() == "auto") continue;
      n = read_int(key, value, 1);
      if (n) o.min_resource = *n;
    } else if (key == "reduction_factor") {
      if ((n = read_int(key, value, 2))) o.reduction_factor = *n;
    } else if (key == "min_early_stopping_rate") {
      if ((n = read_int(key, value, 0))) o.min_early_stopping_rate = *n;
    } else if (key == "bootstrap_count") {
      if ((n = read_int(key, value, 0))) o.bootstrap_count = *n;
    } else {
      return std::unexpected(fmt::format(
          "pruner.{}: unknown option for the successive_halving pruner (known: min_resource, "
          "reduction_factor, min_early_stopping_rate, bootstrap_count)",
          key));
    }
    if (!n) {
      return std::unexpected(key == "min_resource"
                                 ? "pruner.min_resource: must be an integer >= 1 or \"auto\""
                                 : n.error());
    }
  }
  if (o.bootstrap_count > 0 && !o.min_resource) {
    return std::unexpected(
        "pruner.bootstrap_count: needs an explicit min_resource (not \"auto\"), as in Optuna");
  }
  return std::make_unique<SuccessiveHalvingPruner>(o);
}

std::expected<std::unique_ptr<Pruner>, std::string> make_hyperband_pruner(
    const nlohmann::json& config) {
  HyperbandOptions o;
  if (!config.is_null() && !config.is_object()) {
    return std::unexpected("pruner: must be a mapping such as {type: hyperband}");
  }
  for (const auto& [key, value] : config.items()) {
    std::expected<std::int64_t, std::string> n = 0;
    if (key == "type") continue;
    if (key == "min_resource") {
      if ((n = read_int(key, value, 1))) o.min_resource = *n;
    } else if (key == "max_resource") {
      if (value.is_string() && value.get<std::string>() == "auto") continue;
      n = read_int(key, value, 1);
      if (n)
        o.max_resource = *n;
      else
        n = std::unexpected("pruner.max_resource: must be an integer >= 1 or \"auto\"");
    } else if (key == "reduction_factor") {
      if ((n = read_int(key, value, 2))) o.reduction_factor = *n;
    } else if (key == "bootstrap_count") {
      if ((n = read_int(key, value, 0))) o.bootstrap_count = *n;
    } else if (key == "study_name") {
      if (!value.is_string()) return std::unexpected("pruner.study_name: must be a string");
      o.study_name = value.get<std::string>();
    } else {
      return std::unexpected(
          fmt::format("pruner.{}: unknown option for the hyperband pruner (known: min_resource, "
                      "max_resource, reduction_factor, bootstrap_count)",
                      key));
    }
    if (!n) return std::unexpected(n.error());
  }
  if (o.bootstrap_count > 0 && !o.max_resource) {
    return std::unexpected(
        "pruner.bootstrap_count: needs an explicit max_resource (not \"auto\"), as in Optuna");
  }
  if (o.max_resource && *o.max_resource < o.min_resource) {
    return std::unexpected("pruner.max_resource: must be >= min_resource");
  }
  return std::make_unique<HyperbandPruner>(std::move(o));
}

}  // namespace tune::search
