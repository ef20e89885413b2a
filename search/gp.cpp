// Gaussian-process regression for the GP sampler: the kernel, the marginal-likelihood fit and the
// posterior. Matrices are small (the sampler caps the training set), so plain loops over
// row-major vectors do: a fit at 100 points costs a few milliseconds.
#include "search/gp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "search/normal_math.h"

namespace tune::search::detail {
namespace {

constexpr double k_sqrt5 = 2.2360679774997896964;
constexpr double k_min_noise = 1e-6;  // Optuna's floor: keeps K well conditioned

// Solves L z = b in place (L lower, row-major n x n).
void forward_solve(const std::vector<double>& l, std::size_t n, double* b) {
  for (std::size_t i = 0; i < n; ++i) {
    const double* row = &l[i * n];
    double s = b[i];
    for (std::size_t k = 0; k < i; ++k) s -= row[k] * b[k];
    b[i] = s / row[i];
  }
}

// Solves L^T z = b in place.
void backward_solve(const std::vector<double>& l, std::size_t n, double* b) {
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
    b[i] = s / l[i * n + i];
  }
}

// (L L^T)^-1 from the factor into `inv`: invert L column by column, then multiply. The inverse
// of L is kept transposed in `linv_t` (row j holds column j of L^-1) so both loops run over
// contiguous memory. Both are resized, not reallocated, when a caller passes them again.
void inverse_from_cholesky(const std::vector<double>& l, std::size_t n,
                           std::vector<double>& linv_t, std::vector<double>& inv) {
  linv_t.assign(n * n, 0.0);
  // Two columns at a time: column j+1's sums are column j's without its first term, so one pass
  // over each row serves both, and the two independent sums keep the FPU busy. Each sum still
  // adds its terms in the same order as one column at a time would, so the result is bit for
  // bit the same.
  std::size_t j = 0;
  for (; j + 1 < n; j += 2) {
    double* c0 = &linv_t[j * n];
    double* c1 = &linv_t[(j + 1) * n];
    c0[j] = 1.0 / l[j * n + j];
    c1[j + 1] = 1.0 / l[(j + 1) * n + j + 1];
    c0[j + 1] = (0.0 - l[(j + 1) * n + j] * c0[j]) / l[(j + 1) * n + j + 1];
    for (std::size_t i = j + 2; i < n; ++i) {
      const double* row = &l[i * n];
      double s0 = 0.0 - row[j] * c0[j], s1 = 0.0;
      for (std::size_t k = j + 1; k < i; ++k) {
        s0 -= row[k] * c0[k];
        s1 -= row[k] * c1[k];
      }
      c0[i] = s0 / row[i];
      c1[i] = s1 / row[i];
    }
  }
  if (j < n) linv_t[j * n + j] = 1.0 / l[j * n + j];  // the last column of an odd n
  // inv[a][b] = sum over k >= a of L^-1[k][a] L^-1[k][b], four b at a time (independent sums,
  // each in the one-at-a-time order).
  inv.resize(n * n);
  for (std::size_t a = 0; a < n; ++a) {
    const double* ra = &linv_t[a * n];
    std::size_t b = 0;
    for (; b + 3 <= a; b += 4) {
      const double *r0 = &linv_t[b * n], *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
      for (std::size_t k = a; k < n; ++k) {
        s0 += ra[k] * r0[k];
        s1 += ra[k] * r1[k];
        s2 += ra[k] * r2[k];
        s3 += ra[k] * r3[k];
      }
      inv[a * n + b] = inv[b * n + a] = s0;
      inv[a * n + b + 1] = inv[(b + 1) * n + a] = s1;
      inv[a * n + b + 2] = inv[(b + 2) * n + a] = s2;
      inv[a * n + b + 3] = inv[(b + 3) * n + a] = s3;
    }
    for (; b <= a; ++b) {
      const double* rb = &linv_t[b * n];
      double s = 0.0;
      for (std::size_t k = a; k < n; ++k) s += ra[k] * rb[k];
      inv[a * n + b] = inv[b * n + a] = s;
    }
  }
}

// The L-BFGS step direction -H g by the two-loop recursion over the stored pairs.
void lbfgs_direction(const std::vector<double>& g, const std::vector<std::vector<double>>& s_hist,
                     const std::vector<std::vector<double>>& y_hist,
                     const std::vector<double>& rho_hist, std::vector<double>& dir) {
  const std::size_t dim = g.size();
  dir = g;
  std::vector<double> alphas(s_hist.size());
  for (std::size_t m = s_hist.size(); m-- > 0;) {
    double a = 0.0;
    for (std::size_t i = 0; i < dim; ++i) a += s_hist[m][i] * dir[i];
    a *= rho_hist[m];
    alphas[m] = a;
    for (std::size_t i = 0; i < dim; ++i) dir[i] -= a * y_hist[m][i];
  }
  double gamma = 1.0;
  if (!s_hist.empty()) {
    double sy = 0.0, yy = 0.0;
    for (std::size_t i = 0; i < dim; ++i) {
      sy += s_hist.back()[i] * y_hist.back()[i];
      yy += y_hist.back()[i] * y_hist.back()[i];
    }
    gamma = sy / yy;
  }
  for (double& v : dir) v *= gamma;
  for (std::size_t m = 0; m < s_hist.size(); ++m) {
    double b = 0.0;
    for (std::size_t i = 0; i < dim; ++i) b += y_hist[m][i] * dir[i];
    b *= rho_hist[m];
    for (std::size_t i = 0; i < dim; ++i) dir[i] += s_hist[m][i] * (alphas[m] - b);
  }
  for (double& v : dir) v = -v;
}

// Negative log marginal likelihood plus negative log prior, and its gradient, over
// theta = (log w_1..log w_d, log scale, log(noise - min noise)). Pairwise per-dimension distances
// are computed once per fit, and the n x n work matrices allocated once: a fit evaluates it up to
// a few hundred times, and fresh buffers of 50-250 KB each time cost more in page faults and heap
// trimming than the arithmetic (measured: a fifth of a trivial trial's time). One thread at a time.
class Evidence {
 public:
  explicit Evidence(const GpData& data) : m_data(data), m_n(data.size()), m_d(data.d) {
    m_pair.resize(m_n * (m_n - 1) / 2 * m_d);
    std::size_t p = 0;
    for (std::size_t a = 0; a < m_n; ++a) {
      for (std::size_t b = 0; b < a; ++b) {
        for (std::size_t j = 0; j < m_d; ++j, ++p) {
          const double diff = data.x[a * m_d + j] - data.x[b * m_d + j];
          m_pair[p] = data.categorical[j] ? (diff != 0.0 ? 1.0 : 0.0) : diff * diff;
        }
      }
    }
  }

  double operator()(std::span<const double> theta, std::span<double> grad) const {
    const std::size_t n = m_n, d = m_d;
    std::vector<double> w(d);
    for (std::size_t j = 0; j < d; ++j) w[j] = std::exp(theta[j]);
    const double scale = std::exp(theta[d]);
    const double noise_free = std::exp(theta[d + 1]);
    const double noise = k_min_noise + noise_free;
    std::vector<double>& k = m_k;
    std::vector<double>& dk = m_dk;
    k.resize(n * n);
    dk.resize(n * (n - 1) / 2);
    std::size_t p = 0, q = 0;
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = 0; b < a; ++b, ++q) {
        double r2 = 0.0;
        for (std::size_t j = 0; j < d; ++j) r2 += w[j] * m_pair[p + j];
        p += d;
        // matern52(r2) and matern52_grad(r2), sharing their root and exponential.
        const double r = std::sqrt(std::max(r2, 0.0));
        const double e = fast_exp(-k_sqrt5 * r);
        k[a * n + b] = k[b * n + a] = scale * ((1.0 + k_sqrt5 * r + 5.0 / 3.0 * r2) * e);
        dk[q] = scale * (-5.0 / 6.0 * (1.0 + k_sqrt5 * r) * e);
      }
      k[a * n + a] = scale + noise;
    }
    std::vector<double>& kernel = m_kernel;
    kernel = k;
    if (!cholesky(k, n)) return std::numeric_limits<double>::infinity();
    std::vector<double>& alpha = m_alpha;
    alpha = m_data.y;
    forward_solve(k, n, alpha.data());
    double value = 0.0;
    for (std::size_t i = 0; i < n; ++i) value += 0.5 * alpha[i] * alpha[i] + std::log(k[i * n + i]);
    value += 0.5 * static_cast<double>(n) * std::log(2.0 * std::numbers::pi);
    backward_solve(k, n, alpha.data());
    // dNLL/dtheta = -0.5 tr((alpha alpha^T - K^-1) dK/dtheta).
    inverse_from_cholesky(k, n, m_linv_t, m_inv);
    const std::vector<double>& inv = m_inv;
    std::fill(grad.begin(), grad.end(), 0.0);
    p = 0;
    q = 0;
    double g_scale = 0.0, g_noise = 0.0;
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = 0; b < a; ++b, ++q) {
        const double wab = alpha[a] * alpha[b] - inv[a * n + b];
        const double c = -wab * dk[q];  // both triangles: -0.5 * 2
        for (std::size_t j = 0; j < d; ++j) grad[j] += c * w[j] * m_pair[p + j];
        p += d;
        g_scale -= wab * kernel[a * n + b];
      }
      const double waa = alpha[a] * alpha[a] - inv[a * n + a];
      g_scale -= 0.5 * waa * scale;
      g_noise -= 0.5 * waa * noise_free;
    }
    // Optuna 4's priors: -(0.1/w + 0.1 w) per lengthscale, Gamma(2, 1) on the scale,
    // Gamma(1.1, 30) on the noise variance.
    for (std::size_t j = 0; j < d; ++j) {
      value += 0.1 / w[j] + 0.1 * w[j];
      grad[j] += -0.1 / w[j] + 0.1 * w[j];
    }
    value -= std::log(scale) - scale;
    g_scale -= 1.0 - scale;
    value -= 0.1 * std::log(noise) - 30.0 * noise;
    g_noise -= (0.1 / noise - 30.0) * noise_free;
    grad[d] = g_scale;
    grad[d + 1] = g_noise;
    return value;
  }

 private:
  const GpData& m_data;
  std::size_t m_n, m_d;
  std::vector<double> m_pair;  // per pair (a > b), per dimension: d_j(x_a, x_b)
  // Work matrices, reused from one evaluation to the next.
  mutable std::vector<double> m_k, m_dk, m_kernel, m_alpha, m_linv_t, m_inv;
};

}  // namespace

// fast_exp (normal_math.h): the kernel is evaluated ~10^5 times per suggestion.
double matern52(double r2) {
  const double r = std::sqrt(std::max(r2, 0.0));
  return (1.0 + k_sqrt5 * r + 5.0 / 3.0 * r2) * fast_exp(-k_sqrt5 * r);
}

double matern52_grad(double r2) {
  const double r = std::sqrt(std::max(r2, 0.0));
  return -5.0 / 6.0 * (1.0 + k_sqrt5 * r) * fast_exp(-k_sqrt5 * r);
}

bool cholesky(std::vector<double>& a, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    double* row_j = &a[j * n];
    double s = row_j[j];
    for (std::size_t k = 0; k < j; ++k) s -= row_j[k] * row_j[k];
    if (!(s > 0.0)) return false;
    const double diag = std::sqrt(s);
    row_j[j] = diag;
    // Four rows at a time: independent sums, each in the one-row-at-a-time order (bit for bit
    // the same factor), so the FPU need not wait on one sum's chain.
    std::size_t i = j + 1;
    for (; i + 4 <= n; i += 4) {
      double *r0 = &a[i * n], *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
      double t0 = r0[j], t1 = r1[j], t2 = r2[j], t3 = r3[j];
      for (std::size_t k = 0; k < j; ++k) {
        t0 -= r0[k] * row_j[k];
        t1 -= r1[k] * row_j[k];
        t2 -= r2[k] * row_j[k];
        t3 -= r3[k] * row_j[k];
      }
      r0[j] = t0 / diag;
      r1[j] = t1 / diag;
      r2[j] = t2 / diag;
      r3[j] = t3 / diag;
    }
    for (; i < n; ++i) {
      double* row_i = &a[i * n];
      double t = row_i[j];
      for (std::size_t k = 0; k < j; ++k) t -= row_i[k] * row_j[k];
      row_i[j] = t / diag;
    }
    for (std::size_t k = j + 1; k < n; ++k) row_j[k] = 0.0;
  }
  return true;
}

double minimize_lbfgs(const std::function<double(std::span<const double>, std::span<double>)>& f,
                      std::vector<double>& x, int max_iterations) {
  const std::size_t dim = x.size();
  constexpr std::size_t k_memory = 8;
  auto eval = [&](const std::vector<double>& at, std::vector<double>& g) {
    const double v = f(at, g);
    return std::isfinite(v) ? v : std::numeric_limits<double>::infinity();
  };
  std::vector<double> g(dim), g_new(dim), x_new(dim), dir(dim);
  double value = eval(x, g);
  if (!std::isfinite(value)) return value;
  std::vector<std::vector<double>> s_hist, y_hist;
  std::vector<double> rho_hist;
  for (int it = 0; it < max_iterations; ++it) {
    lbfgs_direction(g, s_hist, y_hist, rho_hist, dir);
    double slope = 0.0;
    for (std::size_t i = 0; i < dim; ++i) slope += g[i] * dir[i];
    if (!(slope < 0.0)) {  // not a descent direction: restart from steepest descent
      s_hist.clear();
      y_hist.clear();
      rho_hist.clear();
      for (std::size_t i = 0; i < dim; ++i) dir[i] = -g[i];
      slope = 0.0;
      for (std::size_t i = 0; i < dim; ++i) slope -= g[i] * g[i];
      if (!(slope < 0.0)) break;
    }
    // Backtracking (Armijo); the first step of steepest descent is kept small.
    double step = s_hist.empty() ? std::min(1.0, 1.0 / std::sqrt(-slope)) : 1.0;
    double value_new = std::numeric_limits<double>::infinity();
    for (int ls = 0; ls < 30; ++ls) {
      for (std::size_t i = 0; i < dim; ++i) x_new[i] = x[i] + step * dir[i];
      value_new = eval(x_new, g_new);
      if (value_new <= value + 1e-4 * step * slope) break;
      step *= 0.5;
    }
    if (!(value_new < value)) break;
    std::vector<double> s(dim), y(dim);
    double sy = 0.0;
    for (std::size_t i = 0; i < dim; ++i) {
      s[i] = x_new[i] - x[i];
      y[i] = g_new[i] - g[i];
      sy += s[i] * y[i];
    }
    const double improvement = value - value_new;
    x.swap(x_new);
    g.swap(g_new);
    value = value_new;
    if (sy > 1e-12) {
      if (s_hist.size() == k_memory) {
        s_hist.erase(s_hist.begin());
        y_hist.erase(y_hist.begin());
        rho_hist.erase(rho_hist.begin());
      }
      s_hist.push_back(std::move(s));
      y_hist.push_back(std::move(y));
      rho_hist.push_back(1.0 / sy);
    }
    double gnorm = 0.0;
    for (double v : g) gnorm = std::max(gnorm, std::abs(v));
    if (gnorm < 1e-5 || improvement < 1e-9 * (1.0 + std::abs(value))) break;
  }
  return value;
}

GaussianProcess::GaussianProcess(GpData data) : m_data(std::move(data)), m_isl(m_data.d, 1.0) {
  const std::size_t n = m_data.size(), d = m_data.d;
  if (n == 0) return;
  // Optuna's start: unit lengthscales and scale, noise 1e-2 of the standardised variance.
  std::vector<double> theta(d + 2, 0.0);
  theta[d + 1] = std::log(1e-2);
  if (n >= 2) {
    const Evidence evidence(m_data);
    minimize_lbfgs(evidence, theta, 60);
  }
  for (std::size_t j = 0; j < d; ++j) m_isl[j] = std::exp(theta[j]);
  m_scale = std::exp(theta[d]);
  m_noise = k_min_noise + std::exp(theta[d + 1]);
  // A fit that left K numerically singular gets more noise until it factorises.
  while (!factorise() && m_noise < 1.0) m_noise *= 10.0;
}

double GaussianProcess::distance2(const double* a, const double* b) const {
  double r2 = 0.0;
  for (std::size_t j = 0; j < m_data.d; ++j) {
    const double diff = a[j] - b[j];
    r2 += m_isl[j] * (m_data.categorical[j] ? (diff != 0.0 ? 1.0 : 0.0) : diff * diff);
  }
  return r2;
}

bool GaussianProcess::factorise() {
  const std::size_t n = m_data.size(), d = m_data.d;
  m_chol.assign(n * n, 0.0);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      m_chol[a * n + b] = m_scale * matern52(distance2(&m_data.x[a * d], &m_data.x[b * d]));
    }
    m_chol[a * n + a] = m_scale + m_noise;
  }
  if (!cholesky(m_chol, n)) return false;
  m_alpha = m_data.y;
  forward_solve(m_chol, n, m_alpha.data());
  backward_solve(m_chol, n, m_alpha.data());
  return true;
}

void GaussianProcess::predict(std::span<const double> point, double& mean, double& variance) const {
  predict_many(point, std::span<double>(&mean, 1), std::span<double>(&variance, 1));
}

void GaussianProcess::predict_many(std::span<const double> points, std::span<double> mean,
                                   std::span<double> variance) const {
  const std::size_t n = m_data.size(), d = m_data.d;
  const std::size_t m = mean.size();  // points holds m x d values
  if (n == 0 || m_alpha.size() != n) {
    for (std::size_t p = 0; p < m; ++p) {
      mean[p] = 0.0;
      variance[p] = m_scale;
    }
    return;
  }
  constexpr std::size_t k_lanes = 4;
  // kstar of lane l at row i in kstar[i * k_lanes + l]: the lanes' solves run side by side.
  thread_local std::vector<double> kstar;
  kstar.assign(n * k_lanes, 0.0);
  for (std::size_t first = 0; first < m; first += k_lanes) {
    const std::size_t lanes = std::min(k_lanes, m - first);
    double sum[k_lanes] = {0.0, 0.0, 0.0, 0.0};
    for (std::size_t l = 0; l < lanes; ++l) {
      const double* point = points.data() + (first + l) * d;
      for (std::size_t i = 0; i < n; ++i) {
        const double k = m_scale * matern52(distance2(point, &m_data.x[i * d]));
        kstar[i * k_lanes + l] = k;
        sum[l] += k * m_alpha[i];
      }
    }
    // forward_solve on every lane: lane l's sums in the one-point order.
    for (std::size_t i = 0; i < n; ++i) {
      const double* row = &m_chol[i * n];
      double s[k_lanes];
      for (std::size_t l = 0; l < k_lanes; ++l) s[l] = kstar[i * k_lanes + l];
      for (std::size_t k = 0; k < i; ++k)
        for (std::size_t l = 0; l < k_lanes; ++l) s[l] -= row[k] * kstar[k * k_lanes + l];
      for (std::size_t l = 0; l < k_lanes; ++l) kstar[i * k_lanes + l] = s[l] / row[i];
    }
    for (std::size_t l = 0; l < lanes; ++l) {
      double explained = 0.0;
      for (std::size_t i = 0; i < n; ++i) explained += kstar[i * k_lanes + l] * kstar[i * k_lanes + l];
      mean[first + l] = sum[l];
      variance[first + l] = std::max(m_scale - explained, 1e-12);
    }
  }
}

}  // namespace tune::search::detail
