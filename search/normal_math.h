// Normal-distribution maths for the Parzen estimator and the GP, private to search/: the CDF,
// its logarithm and inverse, interval masses accurate in the tails, and fast branch-free
// variants for the kernel loops (fast_exp, erfc_fast_pos, gauss_mass_fast, narrow_series).
// Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tune::search::detail {

inline constexpr double k_log_sqrt_2pi = 0.91893853320467274178;  // log(sqrt(2 pi))
inline constexpr double k_inv_sqrt_2pi = 0.39894228040143267794;
inline constexpr double k_inv_sqrt2 = 0.70710678118654752440;

// Standard normal CDF and its logarithm (accurate in both tails) and the inverse CDF.
double ndtr(double x);
double log_ndtr(double x);
double ndtri(double p);
// log(Phi(b) - Phi(a)) for a <= b, accurate in the tails (Optuna's _log_gauss_mass).
double log_gauss_mass(double a, double b);
// exp(x) by range reduction and a polynomial: no libm call and no branch, so loops over it
// vectorise; relative error below 1e-14 for x in [-708, 709], clamped outside.
inline double fast_exp(double x) {
  x = x < -708.0 ? -708.0 : x;
  x = x > 709.0 ? 709.0 : x;
  constexpr double k_magic = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  const double kd = x * 1.4426950408889634074 + k_magic;
  const double n = kd - k_magic;
  const double r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  // exp(r) for |r| <= ln2/2 by Taylor to degree 12 (truncation error < 1e-16).
  double p = 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^n assembled in the exponent bits; the low bits of kd hold n + 2^51.
  const auto e = (std::bit_cast<std::int64_t>(kd) - std::bit_cast<std::int64_t>(k_magic) + 1023)
                 << 52;
  return p * std::bit_cast<double>(e);
}

// erfc(x) for x >= 0 with relative error below 1.2e-7 (the Chebyshev fit of Numerical Recipes'
// erfcc), branch-free so loops over it vectorise. Used where the result is summed with others,
// never where a tail probability alone decides.
inline double erfc_fast_pos(double z) {
  const double t = 1.0 / (1.0 + 0.5 * z);
  const double poly =
      -z * z - 1.26551223 +
      t * (1.00002368 +
           t * (0.37409196 +
                t * (0.09678418 +
                     t * (-0.18628806 +
                          t * (0.27886807 +
                               t * (-1.13520398 +
                                    t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * fast_exp(poly);
}

// Phi(u) - Phi(l) for l <= u, from the tail that keeps precision.
inline double gauss_mass_fast(double l, double u) {
  const double el = erfc_fast_pos(std::abs(l) * k_inv_sqrt2);
  const double eu = erfc_fast_pos(std::abs(u) * k_inv_sqrt2);
  const double right = 0.5 * (el - eu), left = 0.5 * (eu - el), centre = 1.0 - 0.5 * (el + eu);
  return l >= 0.0 ? right : (u <= 0.0 ? left : centre);
}

// The series factor of a narrow interval's mass: mass = h phi(z) (1 + h^2 He2(z)/24 +
// h^4 He4(z)/1920), exact to O(h^6) -- one exp instead of two erfc.
inline double narrow_series(double z, double h) {
  const double z2 = z * z, h2 = h * h;
  return h * k_inv_sqrt_2pi *
         (1.0 + h2 * (z2 - 1.0) / 24.0 + h2 * h2 * (z2 * z2 - 6.0 * z2 + 3.0) / 1920.0);
}

// A discrete kernel's contribution at x, split as in joint_log_pdf: an exponent (narrow kernels,
// by the series) and a factor (the series' polynomial, or the interval mass of a wide kernel).
inline void discrete_factor(double x, double mu, double inv, double half_h, double& e, double& m) {
  const double z = (x - mu) * inv;
  const bool narrow = half_h <= 0.25;
  const double series = narrow_series(z, 2.0 * half_h);
  const double wide = gauss_mass_fast(z - half_h, z + half_h);
  e = narrow ? -0.5 * z * z : 0.0;
  m = narrow ? series : wide;
}

inline double log_sum_exp(const std::vector<double>& v) {
  double max = -std::numeric_limits<double>::infinity();
  for (double x : v) max = std::max(max, x);
  if (!std::isfinite(max)) return max;
  double sum = 0.0;
  for (double x : v) sum += std::exp(x - max);
  return std::log(sum) + max;
}

// Inverse CDF of N(0,1) truncated to [a, b] at quantile u (Optuna's _truncnorm.ppf), computed on
// the side where the probabilities stay far from 1.
inline double truncnorm_ppf(double u, double a, double b) {
  if (!(a < b)) return a;
  if (u <= 0.0) return a;
  if (u >= 1.0) return b;
  const double phi_a = ndtr(a), phi_b = ndtr(b);
  const double left = phi_a + u * (phi_b - phi_a);
  const double right = ndtr(-b) + (1.0 - u) * (ndtr(-a) - ndtr(-b));
  // left + right = 1: invert whichever is smaller, where doubles keep their precision.
  double x = left <= right ? ndtri(left) : -ndtri(right);
  if (!std::isfinite(x)) x = left <= 0.5 ? a : b;
  return std::clamp(x, a, b);
}

}  // namespace tune::search::detail
