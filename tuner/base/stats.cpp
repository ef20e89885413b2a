#include "tuner/base/stats.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace tune::tuner {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<std::pair<double, double>> bootstrap_ratio_ci(const std::vector<double>& numerator,
                                                            const std::vector<double>& denominator,
                                                            int samples, std::uint64_t seed) {
  if (numerator.size() < 3 || denominator.size() < 3 || samples < 100) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(samples));
  std::vector<double> a(numerator.size()), b(denominator.size());
  std::uniform_int_distribution<std::size_t> pick_a(0, numerator.size() - 1);
  std::uniform_int_distribution<std::size_t> pick_b(0, denominator.size() - 1);
  for (int s = 0; s < samples; ++s) {
    for (auto& x : a) x = numerator[pick_a(rng)];
    for (auto& x : b) x = denominator[pick_b(rng)];
    const double den = median(b);
    if (den == 0) continue;
    ratios.push_back(median(a) / den);
  }
  if (ratios.size() < 100) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(std::floor(q * static_cast<double>(ratios.size() - 1)));
    return ratios[i];
  };
  return std::pair{at(0.025), at(0.975)};
}

}  // namespace tune::tuner
