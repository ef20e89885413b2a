// No floating-point traps are ever enabled here, so the compiler may turn the conditional
// selects of the kernel loops into vector blends (GCC refuses while it must keep traps exact).
// Results are unchanged: this only drops the assumption that a trap handler could observe them.
#pragma GCC optimize("no-trapping-math")

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
constexpr double k_inf = std::numeric_limits<double>::infinity();

}  // namespace

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

ParzenEstimator::ParzenEstimator(std::span<const Distribution* const> space,
                                 std::span<const std::span<const double>> observations,
                                 const ParzenParameters& parameters,
                                 std::span<const double> weights)
    : m_normalized(parameters.normalized_kernels) {
  const std::size_t n = observations.empty() ? 0 : observations[0].size();
  const bool consider_prior = parameters.consider_prior || n == 0;
  std::size_t n_comp = n + (consider_prior ? 1 : 0);

  if (weights.size() == n && n > 0) {
    m_weights.assign(weights.begin(), weights.end());
  } else {
    default_weights(n, m_weights);
  }
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
    std::vector<std::size_t> order;
    if (parameters.multivariate) {
      std::fill(p.sigmas.begin(), p.sigmas.end(), sigma0 * range);
    } else {
      // Bandwidth = the larger gap to a sorted neighbour (the range ends count as neighbours).
      // (centre, index) pairs sorted: the order of a stable sort by centre, without a
      // comparison that reads the centres through the indices (twice as fast at 50,000).
      std::vector<std::pair<double, std::size_t>> keyed(n_comp);
      for (std::size_t k = 0; k < n_comp; ++k) keyed[k] = {p.mus[k], k};
      std::sort(keyed.begin(), keyed.end());
      order.resize(n_comp);
      for (std::size_t k = 0; k < n_comp; ++k) order[k] = keyed[k].second;
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

    if (space.size() == 1 && !order.empty()) {
      // Kernels with the same centre and bandwidth are one kernel with the summed weight: exact,
      // and on integer or stepped ranges a thousand observations fold into a few dozen kernels.
      std::vector<double> mus, sigmas, weights;
      for (std::size_t i = 0; i < order.size(); ++i) {
        const std::size_t k = order[i];
        if (!mus.empty() && mus.back() == p.mus[k] && sigmas.back() == p.sigmas[k]) {
          weights.back() += m_weights[k];
          continue;
        }
        mus.push_back(p.mus[k]);
        sigmas.push_back(p.sigmas[k]);
        weights.push_back(m_weights[k]);
      }
      p.mus = std::move(mus);
      p.sigmas = std::move(sigmas);
      m_weights = std::move(weights);
      n_comp = m_weights.size();
      m_log_weights.resize(n_comp);
      m_cum_weights.resize(n_comp);
      double c = 0.0;
      for (std::size_t k = 0; k < n_comp; ++k) {
        m_log_weights[k] = std::log(m_weights[k]);
        m_cum_weights[k] = (c += m_weights[k]);
      }
    }

    set_kernels(p, parameters.normalized_kernels, space.size() > 1);
  }

  // One discrete parameter: order the components narrow (q <= sigma / 2) before wide, so each
  // group is evaluated by its own branch-free loop. A mixture does not depend on the order of its
  // components; sampling uses the same permuted weights.
  if (m_params.size() == 1 && m_params[0].kind == Kind::discrete) {
    Param& p = m_params[0];
    std::vector<std::size_t> order(n_comp);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto mid = std::stable_partition(order.begin(), order.end(),
                                           [&](std::size_t k) { return p.half_h[k] <= 0.25; });
    p.n_narrow = static_cast<std::size_t>(mid - order.begin());
    auto permute = [&](std::vector<double>& v) {
      std::vector<double> out(v.size());
      for (std::size_t i = 0; i < order.size(); ++i) out[i] = v[order[i]];
      v = std::move(out);
    };
    for (auto* v :
         {&p.mus, &p.sigmas, &p.inv_sigmas, &p.norm, &p.half_h, &m_weights, &m_log_weights}) {
      permute(*v);
    }
    double c = 0.0;
    for (std::size_t k = 0; k < n_comp; ++k) m_cum_weights[k] = (c += m_weights[k]);
  }

  m_base.assign(m_weights.begin(), m_weights.end());
  for (const Param& p : m_params) {
    if (p.kind == Kind::categorical) continue;
    for (std::size_t k = 0; k < n_comp; ++k) m_base[k] *= p.norm[k];
  }
}

// Bandwidth-dependent constants of every component of a numeric parameter (1/sigma, the
// half-width of a grid cell in sigmas, the normaliser); with several parameters, computed once
// per distinct discrete kernel.
void ParzenEstimator::set_kernels(Param& p, bool normalized, bool several_params) const {
  const std::size_t n_comp = p.mus.size();
  p.inv_sigmas.resize(n_comp);
  p.norm.resize(n_comp);
  if (p.kind == Kind::discrete) p.half_h.resize(n_comp);
  auto kernel = [&](double mu, double sigma, double& inv, double& half_h, double& norm) {
    inv = 1.0 / sigma;
    const double a = (p.low - mu) * inv;
    const double b = (p.high - mu) * inv;
    // a <= 0 <= b since every mean lies in the range, so Z >= ~0.34; a tail beyond 8.3
    // sigma holds less than 1e-16 and is skipped.
    const double z_mass = (a < -8.3 && b > 8.3) ? 1.0 : gauss_mass_fast(a, b);
    if (p.kind == Kind::discrete) {
      half_h = 0.5 * p.q * inv;
      norm = 1.0 / z_mass;
    } else {
      half_h = 0.0;
      norm = (normalized ? inv : 1.0) * k_inv_sqrt_2pi / z_mass;
    }
  };
  if (several_params && p.kind == Kind::discrete) merge_identical_kernels(p);
  if (!p.kernel_of.empty()) {
    const std::size_t n_kernels = p.kernel_mu.size();
    p.kernel_inv.resize(n_kernels);
    p.kernel_half_h.resize(n_kernels);
    std::vector<double> kernel_norm(n_kernels);
    for (std::size_t g = 0; g < n_kernels; ++g) {
      kernel(p.kernel_mu[g], p.kernel_sigma[g], p.kernel_inv[g], p.kernel_half_h[g],
             kernel_norm[g]);
    }
    for (std::size_t k = 0; k < n_comp; ++k) {
      const std::uint32_t g = p.kernel_of[k];
      p.inv_sigmas[k] = p.kernel_inv[g];
      p.half_h[k] = p.kernel_half_h[g];
      p.norm[k] = kernel_norm[g];
    }
    return;
  }
  double half_h = 0.0;
  for (std::size_t k = 0; k < n_comp; ++k) {
    kernel(p.mus[k], p.sigmas[k], p.inv_sigmas[k], p.kind == Kind::discrete ? p.half_h[k] : half_h,
           p.norm[k]);
  }
}

// Groups components by (centre, bandwidth): sorted (keys stored with the index, so the sort
// compares contiguous values), then numbered run by run.
void ParzenEstimator::merge_identical_kernels(Param& p) const {
  struct Key {
    double mu, sigma;
    std::uint32_t k;
  };
  const std::size_t n = p.mus.size();
  std::vector<Key> keys(n);
  for (std::size_t k = 0; k < n; ++k)
    keys[k] = {p.mus[k], p.sigmas[k], static_cast<std::uint32_t>(k)};
  std::sort(keys.begin(), keys.end(), [](const Key& x, const Key& y) {
    return x.mu < y.mu || (x.mu == y.mu && x.sigma < y.sigma);
  });
  p.kernel_of.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 0 || keys[i].mu != p.kernel_mu.back() || keys[i].sigma != p.kernel_sigma.back()) {
      p.kernel_mu.push_back(keys[i].mu);
      p.kernel_sigma.push_back(keys[i].sigma);
    }
    p.kernel_of[keys[i].k] = static_cast<std::uint32_t>(p.kernel_mu.size() - 1);
  }
  if (2 * p.kernel_mu.size() > n) {  // too few repeats to pay for the indirection
    p.kernel_of.clear();
    p.kernel_mu.clear();
    p.kernel_sigma.clear();
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

// Several parameters: one discrete parameter's kernels at x, added into E (exponents) and M
// (factors); merged kernels are evaluated once each, then gathered -- the same numbers.
void ParzenEstimator::add_discrete(const Param& p, double x, double* E, double* M) const {
  const std::size_t n = p.mus.size();
  if (p.kernel_of.empty()) {
    for (std::size_t k = 0; k < n; ++k) {
      double e_k, m_k;
      discrete_factor(x, p.mus[k], p.inv_sigmas[k], p.half_h[k], e_k, m_k);
      E[k] += e_k;
      M[k] *= m_k;
    }
    return;
  }
  thread_local std::vector<double> kernel_e, kernel_m;
  const std::size_t n_kernels = p.kernel_mu.size();
  kernel_e.resize(n_kernels);
  kernel_m.resize(n_kernels);
  for (std::size_t g = 0; g < n_kernels; ++g) {
    discrete_factor(x, p.kernel_mu[g], p.kernel_inv[g], p.kernel_half_h[g], kernel_e[g],
                    kernel_m[g]);
  }
  const std::uint32_t* of = p.kernel_of.data();
  for (std::size_t k = 0; k < n; ++k) {
    E[k] += kernel_e[of[k]];
    M[k] *= kernel_m[of[k]];
  }
}

double ParzenEstimator::joint_log_pdf(const double* x, std::vector<double>& e,
                                      std::vector<double>& m) const {
  // Every component k contributes base_k * M_k * exp(E_k): Gaussian exponents add up in E, the
  // other factors (interval masses, category probabilities) multiply into M. Plain loops over
  // components without branches, so they vectorise.
  const std::size_t n = m_weights.size();
  if (m_params.size() == 1 && m_params[0].kind == Kind::continuous) {
    // One continuous parameter (TPE's independent sampling): the exponents written straight
    // into E and the factors read from m_base, where the general loops below first fill E with
    // zeros and copy m_base into M. The same terms, summed in the same order: the same bits.
    e.resize(n);
    double* E = e.data();
    const double xv = x[0];
    const double* mu = m_params[0].mus.data();
    const double* inv = m_params[0].inv_sigmas.data();
    const double* base = m_base.data();
    for (std::size_t k = 0; k < n; ++k) {
      const double z = (xv - mu[k]) * inv[k];
      E[k] = 0.0 - 0.5 * z * z;
    }
    return log_sum(E, base, n, x);
  }
  e.assign(n, 0.0);
  m.assign(m_base.begin(), m_base.end());
  double* E = e.data();
  double* M = m.data();
  for (std::size_t pi = 0; pi < m_params.size(); ++pi) {
    const Param& p = m_params[pi];
    const double xv = x[pi];
    const double* mu = p.mus.data();
    const double* inv = p.inv_sigmas.data();
    switch (p.kind) {
      case Kind::continuous:
        for (std::size_t k = 0; k < n; ++k) {
          const double z = (xv - mu[k]) * inv[k];
          E[k] -= 0.5 * z * z;
        }
        break;
      case Kind::categorical: {
        const int c = static_cast<int>(xv);
        const int* obs = p.observed.data();
        const double* hit = p.p_hit.data();
        const double* miss = p.p_miss.data();
        for (std::size_t k = 0; k < n; ++k) M[k] *= obs[k] == c ? hit[k] : miss[k];
        break;
      }
      case Kind::discrete: {
        const double* hh = p.half_h.data();
        if (m_params.size() == 1) {
          for (std::size_t k = 0; k < p.n_narrow; ++k) {
            const double z = (xv - mu[k]) * inv[k];
            E[k] -= 0.5 * z * z;
            M[k] *= narrow_series(z, 2.0 * hh[k]);
          }
          for (std::size_t k = p.n_narrow; k < n; ++k) {
            const double z = (xv - mu[k]) * inv[k];
            M[k] *= gauss_mass_fast(z - hh[k], z + hh[k]);
          }
        } else {
          add_discrete(p, xv, E, M);
        }
        break;
      }
    }
  }
  return log_sum(E, M, n, x);
}

// log sum_k M_k exp(E_k), E overwritten; exact_log_pdf(x) where every term underflows.
double ParzenEstimator::log_sum(double* E, const double* M, std::size_t n, const double* x) const {
  double max = -k_inf;
  for (std::size_t k = 0; k < n; ++k) max = E[k] > max ? E[k] : max;
  for (std::size_t k = 0; k < n; ++k) E[k] = M[k] * fast_exp(E[k] - max);
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t k = 0;
  for (; k + 3 < n; k += 4) {
    s0 += E[k];
    s1 += E[k + 1];
    s2 += E[k + 2];
    s3 += E[k + 3];
  }
  for (; k < n; ++k) s0 += E[k];
  const double sum = (s0 + s1) + (s2 + s3);
  if (sum > 1e-290 && std::isfinite(sum) && std::isfinite(max)) return std::log(sum) + max;
  return exact_log_pdf(x);
}

double ParzenEstimator::exact_log_pdf(const double* x) const {
  // Log space throughout (Optuna's formulation): slow, for points where every kernel's linear
  // value underflows.
  const std::size_t n = m_weights.size();
  std::vector<double> acc(m_log_weights);
  for (std::size_t pi = 0; pi < m_params.size(); ++pi) {
    const Param& p = m_params[pi];
    for (std::size_t k = 0; k < n; ++k) {
      if (p.kind == Kind::categorical) {
        acc[k] += std::log(p.observed[k] == static_cast<int>(x[pi]) ? p.p_hit[k] : p.p_miss[k]);
        continue;
      }
      const double z = (x[pi] - p.mus[k]) * p.inv_sigmas[k];
      const double a = (p.low - p.mus[k]) * p.inv_sigmas[k];
      const double b = (p.high - p.mus[k]) * p.inv_sigmas[k];
      if (p.kind == Kind::continuous) {
        acc[k] += -0.5 * z * z - k_log_sqrt_2pi - log_gauss_mass(a, b) -
                  (m_normalized ? std::log(p.sigmas[k]) : 0.0);
      } else {
        acc[k] += log_gauss_mass(std::max(z - p.half_h[k], a), std::min(z + p.half_h[k], b)) -
                  log_gauss_mass(a, b);
      }
    }
  }
  return log_sum_exp(acc);
}

void ParzenEstimator::log_pdf(const std::vector<std::vector<double>>& samples,
                              std::vector<double>& out) const {
  const std::size_t size = samples.empty() ? 0 : samples[0].size();
  const std::size_t n_params = m_params.size();
  out.resize(size);
  if (n_params == 1 && m_params[0].kind == Kind::categorical) {
    // Mixture mass of every choice at once: O(components + choices).
    const Param& p = m_params[0];
    std::vector<double> mass(p.n_choices, 0.0);
    double miss_total = 0.0;
    for (std::size_t k = 0; k < m_weights.size(); ++k) {
      miss_total += m_weights[k] * p.p_miss[k];
      if (p.observed[k] >= 0) {
        mass[static_cast<std::size_t>(p.observed[k])] += m_weights[k] * (p.p_hit[k] - p.p_miss[k]);
      }
    }
    for (auto& v : mass) v = std::log(v + miss_total);
    for (std::size_t j = 0; j < size; ++j) out[j] = mass[static_cast<std::size_t>(samples[0][j])];
    return;
  }
  std::vector<double> e, m, x(n_params);
  for (std::size_t j = 0; j < size; ++j) {
    // Equal candidates (common after rounding to a grid) share one evaluation.
    std::size_t same = j;
    for (std::size_t i = 0; i < j && same == j; ++i) {
      bool equal = true;
      for (std::size_t pi = 0; pi < n_params && equal; ++pi)
        equal = samples[pi][i] == samples[pi][j];
      if (equal) same = i;
    }
    if (same < j) {
      out[j] = out[same];
      continue;
    }
    for (std::size_t pi = 0; pi < n_params; ++pi) x[pi] = transform(m_params[pi], samples[pi][j]);
    out[j] = joint_log_pdf(x.data(), e, m);
  }
}

}  // namespace tune::search::detail
