#include "search/parzen_estimator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <variant>

namespace tune::search::detail {
namespace {

constexpr double k_eps = 1e-12;
constexpr double k_sigma0_magnitude = 0.2;
constexpr double k_log_sqrt_2pi = 0.91893853320467274178;  // log(sqrt(2 pi))
constexpr double k_inv_sqrt_2pi = 0.39894228040143267794;
constexpr double k_inv_sqrt2 = 0.70710678118654752440;
constexpr double k_inf = std::numeric_limits<double>::infinity();

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
  if (l >= 0.0) return 0.5 * (el - eu);
  if (u <= 0.0) return 0.5 * (eu - el);
  return 1.0 - 0.5 * el - 0.5 * eu;
}

// Mass of a standard normal over [z - hh, z + hh]: a Taylor series in the width for narrow
// intervals (one exp instead of two erfc), the CDF difference for wide ones.
inline double interval_mass(double z, double hh) {
  const double h = 2.0 * hh;
  if (h <= 0.5) {
    const double z2 = z * z;
    const double h2 = h * h;
    const double series =
        1.0 + h2 * (z2 - 1.0) / 24.0 + h2 * h2 * (z2 * z2 - 6.0 * z2 + 3.0) / 1920.0;
    return h * k_inv_sqrt_2pi * fast_exp(-0.5 * z2) * series;
  }
  return gauss_mass_fast(z - hh, z + hh);
}

double log_sum_exp(const double* v, std::size_t n) {
  double max = -k_inf;
  for (std::size_t i = 0; i < n; ++i) max = std::max(max, v[i]);
  if (!std::isfinite(max)) return max;
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += fast_exp(v[i] - max);
  return std::log(sum) + max;
}

// Inverse CDF of N(0,1) truncated to [a, b] at quantile u (Optuna's _truncnorm.ppf), computed on
// the side where the probabilities stay far from 1.
double truncnorm_ppf(double u, double a, double b) {
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

}  // namespace

double fast_exp(double x) {
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
  std::int64_t kbits, mbits;
  std::memcpy(&kbits, &kd, sizeof kd);
  std::memcpy(&mbits, &k_magic, sizeof k_magic);
  const std::int64_t e = (kbits - mbits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &e, sizeof scale);
  return p * scale;
}

void default_weights(std::size_t n, std::vector<double>& out) {
  out.assign(n, 1.0);
  if (n < 25) return;
  // numpy.linspace(1/n, 1, n - 25): start + i * step, the last point exactly 1.
  const std::size_t num = n - 25;
  const double start = 1.0 / static_cast<double>(n);
  if (num == 1) {
    out[0] = start;
  } else if (num > 1) {
    const double step = (1.0 - start) / static_cast<double>(num - 1);
    for (std::size_t i = 0; i < num; ++i) out[i] = start + static_cast<double>(i) * step;
    out[num - 1] = 1.0;
  }
}

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

ParzenEstimator::ParzenEstimator(std::span<const Distribution* const> space,
                                 std::span<const std::span<const double>> observations,
                                 const ParzenParameters& parameters) {
  const std::size_t n = observations.empty() ? 0 : observations[0].size();
  const bool consider_prior = parameters.consider_prior || n == 0;
  const std::size_t n_comp = n + (consider_prior ? 1 : 0);

  default_weights(n, m_weights);
  if (consider_prior) m_weights.push_back(parameters.prior_weight);
  const double total = std::accumulate(m_weights.begin(), m_weights.end(), 0.0);
  m_log_weights.resize(n_comp);
  m_cum_weights.resize(n_comp);
  double cum = 0.0;
  for (std::size_t k = 0; k < n_comp; ++k) {
    m_weights[k] /= total;
    m_log_weights[k] = std::log(m_weights[k]);
    cum += m_weights[k];
    m_cum_weights[k] = cum;
  }

  const double sigma0 =
      k_sigma0_magnitude * std::pow(static_cast<double>(std::max<std::size_t>(n, 1)),
                                    -1.0 / (static_cast<double>(space.size()) + 4.0));

  m_params.resize(space.size());
  for (std::size_t pi = 0; pi < space.size(); ++pi) {
    Param& p = m_params[pi];
    p.dist = space[pi];
    const auto obs = observations[pi];
    if (const auto* c = std::get_if<CategoricalDistribution>(p.dist)) {
      p.kind = Kind::categorical;
      p.n_choices = c->choices.size();
      const double value = consider_prior ? parameters.prior_weight / static_cast<double>(n + 1)
                                          : parameters.prior_weight / static_cast<double>(n);
      const double c_count = static_cast<double>(p.n_choices);
      p.observed.resize(n_comp, -1);
      p.p_hit.resize(n_comp);
      p.p_miss.resize(n_comp);
      for (std::size_t k = 0; k < n_comp; ++k) {
        if (k < n) {
          p.observed[k] =
              std::clamp(static_cast<int>(obs[k]), 0, static_cast<int>(p.n_choices) - 1);
          const double row = c_count * value + 1.0;
          p.p_hit[k] = (value + 1.0) / row;
          p.p_miss[k] = value / row;
        } else {
          p.p_hit[k] = p.p_miss[k] = 1.0 / c_count;
        }
      }
      continue;
    }
    if (const auto* f = std::get_if<FloatDistribution>(p.dist)) {
      if (f->log) {
        p.log = true;
        p.low = std::log(f->low);
        p.high = std::log(f->high);
      } else if (f->step) {
        p.kind = Kind::discrete;
        p.q = *f->step;
        p.low = f->low - 0.5 * p.q;
        p.high = f->high + 0.5 * p.q;
      } else {
        p.low = f->low;
        p.high = f->high;
      }
    } else {
      const auto& d = std::get<IntDistribution>(*p.dist);
      if (d.log) {
        p.log = true;
        p.low = std::log(static_cast<double>(d.low) - 0.5);
        p.high = std::log(static_cast<double>(d.high) + 0.5);
      } else {
        p.kind = Kind::discrete;
        p.q = static_cast<double>(d.step);
        p.low = static_cast<double>(d.low) - 0.5 * p.q;
        p.high = static_cast<double>(d.high) + 0.5 * p.q;
      }
    }
    const double range = p.high - p.low;
    p.mus.resize(n_comp);
    for (std::size_t k = 0; k < n; ++k) {
      p.mus[k] = std::clamp(transform(p, obs[k]), p.low, p.high);
    }
    if (consider_prior) p.mus[n] = 0.5 * (p.low + p.high);
    p.sigmas.resize(n_comp);
    if (parameters.multivariate) {
      std::fill(p.sigmas.begin(), p.sigmas.end(), sigma0 * range);
    } else {
      // Bandwidth = the larger gap to a sorted neighbour (the range ends count as neighbours).
      std::vector<std::size_t> order(n_comp);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t x, std::size_t y) { return p.mus[x] < p.mus[y]; });
      const std::size_t m = n_comp;
      auto sorted = [&](std::size_t i) {  // with endpoints: 0 = low, m + 1 = high
        if (i == 0) return p.low;
        if (i == m + 1) return p.high;
        return p.mus[order[i - 1]];
      };
      for (std::size_t i = 1; i <= m; ++i) {
        p.sigmas[order[i - 1]] = std::max(sorted(i) - sorted(i - 1), sorted(i + 1) - sorted(i));
      }
      if (!parameters.consider_endpoints && m + 2 >= 4) {
        p.sigmas[order[0]] = sorted(2) - sorted(1);
        p.sigmas[order[m - 1]] = sorted(m) - sorted(m - 1);
      }
    }
    const double max_sigma = range;
    const double min_sigma = parameters.consider_magic_clip
                                 ? range / std::min(100.0, 1.0 + static_cast<double>(n_comp))
                                 : k_eps;
    for (auto& s : p.sigmas) s = std::clamp(s, min_sigma, max_sigma);
    if (consider_prior) p.sigmas[n] = range;

    p.inv_sigmas.resize(n_comp);
    p.log_norm.resize(n_comp);
    p.norm.resize(n_comp);
    if (p.kind == Kind::discrete) p.half_h.resize(n_comp);
    for (std::size_t k = 0; k < n_comp; ++k) {
      const double inv = 1.0 / p.sigmas[k];
      p.inv_sigmas[k] = inv;
      const double a = (p.low - p.mus[k]) * inv;
      const double b = (p.high - p.mus[k]) * inv;
      // a <= 0 <= b since every mean lies in the range: the mass is at least ~0.34.
      const double z_mass = gauss_mass_fast(a, b);
      const double log_z = std::log(z_mass);
      if (p.kind == Kind::discrete) {
        p.half_h[k] = 0.5 * p.q * inv;
        p.log_norm[k] = -log_z;
      } else {
        p.log_norm[k] = -log_z - std::log(p.sigmas[k]) - k_log_sqrt_2pi;
      }
      p.norm[k] = m_weights[k] * std::exp(p.log_norm[k]);
    }
  }
}

double ParzenEstimator::transform(const Param& p, double internal) const {
  return p.log ? std::log(internal) : internal;
}

double ParzenEstimator::untransform(const Param& p, double x) const {
  if (const auto* f = std::get_if<FloatDistribution>(p.dist)) {
    if (f->log) return std::clamp(std::exp(x), f->low, f->high);
    if (f->step) {
      const double v = std::nearbyint((x - f->low) / *f->step) * *f->step + f->low;
      return std::clamp(v, f->low, f->high);
    }
    return std::clamp(x, f->low, f->high);
  }
  const auto& d = std::get<IntDistribution>(*p.dist);
  const auto low = static_cast<double>(d.low), high = static_cast<double>(d.high);
  if (d.log) return std::clamp(std::nearbyint(std::exp(x)), low, high);
  const auto step = static_cast<double>(d.step);
  return std::clamp(std::nearbyint((x - low) / step) * step + low, low, high);
}

void ParzenEstimator::sample(Rng& rng, std::size_t size,
                             std::vector<std::vector<double>>& out) const {
  // Same order of draws as Optuna: the components first, then each parameter in turn.
  std::vector<std::size_t> active(size);
  for (auto& a : active) {
    const double u = rng.uniform() * m_cum_weights.back();
    a = static_cast<std::size_t>(std::upper_bound(m_cum_weights.begin(), m_cum_weights.end(), u) -
                                 m_cum_weights.begin());
    a = std::min(a, m_cum_weights.size() - 1);
  }
  out.resize(m_params.size());
  for (std::size_t pi = 0; pi < m_params.size(); ++pi) {
    const Param& p = m_params[pi];
    out[pi].resize(size);
    for (std::size_t j = 0; j < size; ++j) {
      const std::size_t k = active[j];
      const double u = rng.uniform();
      if (p.kind == Kind::categorical) {
        // The number of cumulative probabilities below u, as Optuna's categorical draw.
        double cum = 0.0;
        std::size_t c = 0;
        for (; c < p.n_choices; ++c) {
          cum += static_cast<int>(c) == p.observed[k] ? p.p_hit[k] : p.p_miss[k];
          if (!(cum < u)) break;
        }
        out[pi][j] = static_cast<double>(std::min(c, p.n_choices - 1));
      } else {
        const double mu = p.mus[k], s = p.sigmas[k];
        const double z = truncnorm_ppf(u, (p.low - mu) / s, (p.high - mu) / s);
        out[pi][j] = untransform(p, mu + s * z);
      }
    }
  }
}

void ParzenEstimator::add_component_log_pdf(const Param& p, double x, double* acc) const {
  const std::size_t n = m_weights.size();
  switch (p.kind) {
    case Kind::categorical: {
      const int c = static_cast<int>(x);
      for (std::size_t k = 0; k < n; ++k) {
        acc[k] += std::log(p.observed[k] == c ? p.p_hit[k] : p.p_miss[k]);
      }
      break;
    }
    case Kind::continuous: {
      const double* mu = p.mus.data();
      const double* inv = p.inv_sigmas.data();
      const double* ln = p.log_norm.data();
      for (std::size_t k = 0; k < n; ++k) {
        const double z = (x - mu[k]) * inv[k];
        acc[k] += ln[k] - 0.5 * z * z;
      }
      break;
    }
    case Kind::discrete: {
      for (std::size_t k = 0; k < n; ++k) {
        const double z = (x - p.mus[k]) * p.inv_sigmas[k];
        const double mass = interval_mass(z, p.half_h[k]);
        acc[k] +=
            p.log_norm[k] +
            (mass > 1e-300 ? std::log(mass) : log_gauss_mass(z - p.half_h[k], z + p.half_h[k]));
      }
      break;
    }
  }
}

double ParzenEstimator::single_numeric_log_pdf(const Param& p, double x,
                                               std::vector<double>& buffer) const {
  // Linear-space sum (one pass, no log per kernel); the prior kernel keeps it from
  // underflowing, and the log-space path below covers the rest.
  const std::size_t n = m_weights.size();
  const double* mu = p.mus.data();
  const double* inv = p.inv_sigmas.data();
  const double* norm = p.norm.data();
  double sum = 0.0;
  if (p.kind == Kind::continuous) {
    double s0 = 0.0, s1 = 0.0;
    std::size_t k = 0;
    for (; k + 1 < n; k += 2) {
      const double z0 = (x - mu[k]) * inv[k];
      const double z1 = (x - mu[k + 1]) * inv[k + 1];
      s0 += norm[k] * fast_exp(-0.5 * z0 * z0);
      s1 += norm[k + 1] * fast_exp(-0.5 * z1 * z1);
    }
    for (; k < n; ++k) {
      const double z = (x - mu[k]) * inv[k];
      s0 += norm[k] * fast_exp(-0.5 * z * z);
    }
    sum = s0 + s1;
  } else {
    const double* hh = p.half_h.data();
    for (std::size_t k = 0; k < n; ++k) {
      sum += norm[k] * interval_mass((x - mu[k]) * inv[k], hh[k]);
    }
  }
  if (sum > 1e-280 && std::isfinite(sum)) return std::log(sum);
  buffer.assign(m_log_weights.begin(), m_log_weights.end());
  add_component_log_pdf(p, x, buffer.data());
  return log_sum_exp(buffer.data(), n);
}

void ParzenEstimator::log_pdf(const std::vector<std::vector<double>>& samples,
                              std::vector<double>& out) const {
  const std::size_t size = samples.empty() ? 0 : samples[0].size();
  out.resize(size);
  std::vector<double> buffer;
  if (m_params.size() == 1) {
    const Param& p = m_params[0];
    if (p.kind == Kind::categorical) {
      // Mixture mass of every choice at once: O(components + choices).
      std::vector<double> mass(p.n_choices, 0.0);
      double miss_total = 0.0;
      for (std::size_t k = 0; k < m_weights.size(); ++k) {
        miss_total += m_weights[k] * p.p_miss[k];
        if (p.observed[k] >= 0) {
          mass[static_cast<std::size_t>(p.observed[k])] +=
              m_weights[k] * (p.p_hit[k] - p.p_miss[k]);
        }
      }
      for (auto& m : mass) m = std::log(m + miss_total);
      for (std::size_t j = 0; j < size; ++j) {
        out[j] = mass[static_cast<std::size_t>(samples[0][j])];
      }
      return;
    }
    for (std::size_t j = 0; j < size; ++j) {
      // Equal candidates (common after rounding to a grid) share one evaluation.
      std::size_t same = j;
      for (std::size_t i = 0; i < j; ++i) {
        if (samples[0][i] == samples[0][j]) {
          same = i;
          break;
        }
      }
      out[j] =
          same < j ? out[same] : single_numeric_log_pdf(p, transform(p, samples[0][j]), buffer);
    }
    return;
  }
  for (std::size_t j = 0; j < size; ++j) {
    buffer.assign(m_log_weights.begin(), m_log_weights.end());
    for (std::size_t pi = 0; pi < m_params.size(); ++pi) {
      add_component_log_pdf(m_params[pi], transform(m_params[pi], samples[pi][j]), buffer.data());
    }
    out[j] = log_sum_exp(buffer.data(), buffer.size());
  }
}

}  // namespace tune::search::detail
