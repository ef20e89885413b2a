#include "search/normal_math.h"

#include <numbers>

namespace tune::search::detail {

constexpr double k_inf = std::numeric_limits<double>::infinity();

double ndtr(double a) {
  const double x = a * k_inv_sqrt2;
  if (x < -k_inv_sqrt2) return 0.5 * std::erfc(-x);
  if (x < k_inv_sqrt2) return 0.5 + 0.5 * std::erf(x);
  return 1.0 - 0.5 * std::erfc(x);
}

double log_ndtr(double a) {
  if (a > 6.0) return -ndtr(-a);
  if (a > -20.0) return std::log(ndtr(a));
  // Asymptotic series of log Phi(a) for a -> -inf.
  const double log_lhs = -0.5 * a * a - std::log(-a) - k_log_sqrt_2pi;
  double last_total = 0.0, rhs = 1.0, numerator = 1.0, denom_factor = 1.0;
  const double denom_cons = 1.0 / (a * a);
  double sign = 1.0;
  for (int i = 1; std::abs(last_total - rhs) > std::numeric_limits<double>::epsilon() && i < 100;
       ++i) {
    last_total = rhs;
    sign = -sign;
    denom_factor *= denom_cons;
    numerator *= 2.0 * i - 1.0;
    rhs += sign * numerator * denom_factor;
  }
  return log_lhs + std::log(rhs);
}

double ndtri(double p) {
  if (p <= 0.0) return -k_inf;
  if (p >= 1.0) return k_inf;
  if (p > 0.5) return -ndtri(1.0 - p);
  // Abramowitz & Stegun 26.2.23 (error < 4.5e-4), then Halley steps on the exact CDF.
  const double t = std::sqrt(-2.0 * std::log(p));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int i = 0; i < 3; ++i) {
    const double e = 0.5 * std::erfc(-x * k_inv_sqrt2) - p;
    const double u = e * std::sqrt(2.0 * std::numbers::pi) * std::exp(0.5 * x * x);
    x -= u / (1.0 + 0.5 * x * u);
  }
  return x;
}

double log_gauss_mass(double a, double b) {
  auto left = [](double lo, double hi) {
    const double lb = log_ndtr(hi), la = log_ndtr(lo);
    return lb + std::log1p(-std::exp(la - lb));
  };
  if (b <= 0.0) return left(a, b);
  if (a > 0.0) return left(-b, -a);
  return std::log1p(-ndtr(a) - ndtr(-b));
}

}  // namespace tune::search::detail
