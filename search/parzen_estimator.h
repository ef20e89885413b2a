// The Parzen estimator behind TPE (Optuna 3.1's _ParzenEstimator), private to search/: a
// weighted mixture of truncated Gaussians and smoothed one-hot rows over the observations.
// Built per suggestion from the caller's data; not thread-safe.
// Design: docs/design-notes.md#searchparzen_estimatorh
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "search/distribution.h"
#include "search/normal_math.h"
#include "search/rng.h"

namespace tune::search::detail {

struct ParzenParameters {
  bool consider_prior = true;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  bool multivariate = false;
  bool normalized_kernels = false;  // divide each continuous kernel by its sigma (see above)
};

// Optuna's default_weights(n): 1 for the newest 25 observations, a linear ramp from 1/n for
// older ones.
void default_weights(std::size_t n, std::vector<double>& out);

class ParzenEstimator {
 public:
  // observations[p][i] is parameter p's internal value in observation i (chronological order,
  // oldest first), all within space[p]. Every span has the same length. `weights`, when given,
  // is one weight per observation in place of default_weights (multi-objective TPE weighs the
  // good trials by their hypervolume contribution).
  ParzenEstimator(std::span<const Distribution* const> space,
                  std::span<const std::span<const double>> observations,
                  const ParzenParameters& parameters, std::span<const double> weights = {});

  // `size` joint draws; out[p][j] is parameter p of draw j, internal representation.
  void sample(Rng& rng, std::size_t size, std::vector<std::vector<double>>& out) const;

  // log density (mass for discrete parameters) of each joint sample; samples[p][j] as sample().
  void log_pdf(const std::vector<std::vector<double>>& samples, std::vector<double>& out) const;

 private:
  enum class Kind { continuous, discrete, categorical };
  struct Param {
    const Distribution* dist = nullptr;
    Kind kind = Kind::continuous;
    bool log = false;
    double low = 0.0, high = 0.0, q = 0.0;  // transformed bounds, grid step (discrete)
    std::vector<double> mus, sigmas, inv_sigmas;
    std::vector<double> norm;    // 1 / (sigma Z sqrt(2pi)) (continuous), 1 / Z (discrete)
    std::vector<double> half_h;  // discrete: q / (2 sigma)
    std::size_t n_narrow = 0;    // one discrete parameter: components [0, n_narrow) are narrow
    // Several parameters, discrete: components with the same centre and bandwidth (in
    // multivariate mode all but the prior share one bandwidth, and integer ranges repeat
    // centres) have the same factor, computed once per distinct kernel; empty when too few repeat.
    std::vector<std::uint32_t> kernel_of;  // per component
    std::vector<double> kernel_mu, kernel_sigma, kernel_inv, kernel_half_h;
    // categorical
    std::size_t n_choices = 0;
    std::vector<int> observed;  // choice index per component, -1 for the prior row
    std::vector<double> p_hit, p_miss;
  };

  double transform(const Param& p, double internal) const;
  double untransform(const Param& p, double x) const;
  // log density of one joint point (transformed values), by the fast linear-space kernel sums
  // with the exact log-space path as fallback when everything underflows.
  double joint_log_pdf(const double* x, std::vector<double>& e, std::vector<double>& m) const;
  double log_sum(double* E, const double* M, std::size_t n, const double* x) const;
  double exact_log_pdf(const double* x) const;
  void merge_identical_kernels(Param& p) const;
  void set_kernels(Param& p, bool normalized, bool several_params) const;
  void add_discrete(const Param& p, double x, double* E, double* M) const;

  std::vector<Param> m_params;
  std::vector<double> m_weights;  // normalised, observations then prior
  std::vector<double> m_log_weights;
  std::vector<double> m_cum_weights;  // for component choice
  std::vector<double> m_base;         // weight times every parameter's normaliser, per component
  bool m_normalized = false;          // ParzenParameters::normalized_kernels
};

}  // namespace tune::search::detail
