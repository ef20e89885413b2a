#include "tuner/base/stats.h"

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/beta.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace tune::tuner {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(at));
  if (i + 1 >= values.size()) return values.back();
  return values[i] + (at - static_cast<double>(i)) * (values[i + 1] - values[i]);
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

namespace {

namespace bm = boost::math;
// Boost.Math's default policy throws on a domain error (df <= 0, a probability outside (0, 1)),
// which no caller of a pure statistic expects: NaN instead, as the hand-written code gave.
using Quiet = bm::policies::policy<bm::policies::domain_error<bm::policies::ignore_error>,
                                   bm::policies::pole_error<bm::policies::ignore_error>,
                                   bm::policies::overflow_error<bm::policies::ignore_error>,
                                   bm::policies::evaluation_error<bm::policies::ignore_error>,
                                   bm::policies::rounding_error<bm::policies::ignore_error>>;

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  return bm::ibeta(a, b, x, Quiet());
}

double student_t_quantile(double p, double df) {
  if (std::isinf(df)) return bm::quantile(bm::normal_distribution<double, Quiet>(), p);
  return bm::quantile(bm::students_t_distribution<double, Quiet>(df), p);
}

double f_upper_tail(double f, double df1, double df2) {
  if (!(f > 0)) return 1;
  if (std::isinf(f)) return 0;
  if (std::isinf(df2))  // chi-square(df1) / df1
    return bm::cdf(bm::complement(bm::chi_squared_distribution<double, Quiet>(df1), df1 * f));
  return bm::cdf(bm::complement(bm::fisher_f_distribution<double, Quiet>(df1, df2), f));
}

}  // namespace tune::tuner
