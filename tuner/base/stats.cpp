#include "tuner/base/stats.h"

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

// The continued fraction of I_x(a, b) by the modified Lentz method; converges fast for
// x < (a + 1) / (a + b + 2), which the caller arranges by symmetry.
double beta_fraction(double a, double b, double x) {
  constexpr double k_tiny = 1e-300, k_eps = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::abs(d) < k_tiny) d = k_tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::abs(d) < k_tiny) d = k_tiny;
    c = 1 + aa / c;
    if (std::abs(c) < k_tiny) c = k_tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::abs(d) < k_tiny) d = k_tiny;
    c = 1 + aa / c;
    if (std::abs(c) < k_tiny) c = k_tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1) < k_eps) break;
  }
  return h;
}

// The regularized upper incomplete gamma Q(a, x): a series below a + 1, a continued fraction
// above (as the incomplete beta, the usual split).
double upper_gamma(double a, double x) {
  if (x <= 0) return 1;
  const double log_front = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::abs(term) < std::abs(sum) * 1e-15) break;
    }
    return std::clamp(1 - sum * std::exp(log_front), 0.0, 1.0);
  }
  constexpr double k_tiny = 1e-300;
  double b = x + 1 - a, c = 1 / k_tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < k_tiny) d = k_tiny;
    c = b + an / c;
    if (std::abs(c) < k_tiny) c = k_tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1) < 1e-15) break;
  }
  return std::clamp(std::exp(log_front) * h, 0.0, 1.0);
}

// P(T <= t) for Student's t with df degrees of freedom (infinite: the standard normal).
double student_t_cdf(double t, double df) {
  if (std::isinf(df)) return 0.5 * std::erfc(-t / std::sqrt(2.0));
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t >= 0 ? 1 - tail : tail;
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_fraction(b, a, 1 - x) / b;
}

double student_t_quantile(double p, double df) {
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  // Bisection on the CDF: monotone, and 200 halvings of [0, 1e6] reach double precision.
  double lo = 0, hi = 1e6;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double f_upper_tail(double f, double df1, double df2) {
  if (!(f > 0)) return 1;
  if (std::isinf(f)) return 0;
  if (std::isinf(df2)) return upper_gamma(df1 / 2, df1 * f / 2);
  return incomplete_beta(df2 / 2, df1 / 2, df2 / (df2 + df1 * f));
}

}  // namespace tune::tuner
