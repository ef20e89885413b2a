// The Gaussian-process model behind the GP sampler (gp_sampler.h), private to search/: a
// zero-mean GP with Optuna 4's Matern-5/2 kernel, fitted per suggestion (marginal likelihood
// plus Optuna's weak priors).
// Built per suggestion, then only read: predict() from one thread at a time per model.
// Design: docs/design-notes.md#searchgph
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace tune::search::detail {

// Points are rows of a row-major n x d matrix; categorical[j] marks category dimensions.
struct GpData {
  std::size_t d = 0;
  std::vector<bool> categorical;
  std::vector<double> x;  // n * d
  std::vector<double> y;  // n, standardised
  std::size_t size() const { return y.size(); }
};

class GaussianProcess {
 public:
  // Fits the hyperparameters and factorises the kernel matrix. An empty data set gives the
  // prior (mean 0, variance 1 everywhere).
  explicit GaussianProcess(GpData data);

  // Posterior mean and variance (of the latent function, noise excluded) at one point of d
  // values; the variance is at least 1e-12.
  void predict(std::span<const double> point, double& mean, double& variance) const;
  // predict() at each of the m = mean.size() points in `points` (row-major m x d) into mean[i]
  // and variance[i], computed four points at a time (their triangular solves interleaved, which
  // a single point's chain of dependent sums cannot be); each point's sums are added in the same
  // order whatever the batch, so a point's numbers do not depend on its neighbours. predict() is
  // a batch of one.
  void predict_many(std::span<const double> points, std::span<double> mean,
                    std::span<double> variance) const;

  // Fitted hyperparameters, for tests and diagnostics.
  const std::vector<double>& inverse_squared_lengthscales() const { return m_isl; }
  double noise_variance() const { return m_noise; }

 private:
  double distance2(const double* a, const double* b) const;
  bool factorise();

  GpData m_data;
  std::vector<double> m_isl;
  double m_scale = 1.0;
  double m_noise = 1e-2;
  std::vector<double> m_chol;   // lower Cholesky factor of K + noise I, row-major n x n
  std::vector<double> m_alpha;  // (K + noise I)^-1 y
};

// Matern 5/2 of r^2, and its derivative with respect to r^2, for a unit kernel scale.
double matern52(double r2);
double matern52_grad(double r2);

// Lower Cholesky factor of the symmetric n x n matrix a (row-major) in place; false when a is
// not positive definite.
bool cholesky(std::vector<double>& a, std::size_t n);

// Minimises f from x (in place) by L-BFGS with a backtracking line search; f returns the value
// and writes the gradient. Returns the best value found. Non-finite values count as +inf.
double minimize_lbfgs(const std::function<double(std::span<const double>, std::span<double>)>& f,
                      std::vector<double>& x, int max_iterations);

}  // namespace tune::search::detail
