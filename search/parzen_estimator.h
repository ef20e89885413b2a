// The Parzen estimator behind TPE (Optuna 3.1's _ParzenEstimator), private to search/.
//
// One estimator is a weighted mixture over observations plus an optional prior component: for
// every numeric parameter a Gaussian truncated to the parameter's (transformed) range, for every
// categorical one a smoothed one-hot row. Univariate mode gives each numeric kernel the distance
// to its sorted neighbours as bandwidth; multivariate mode uses Scott's rule for all kernels.
// Values cross this interface as Optuna's internal representation (category index, raw number);
// log ranges are handled inside. Built per suggestion from the caller's data, not thread-safe.
//
// Where this differs from Optuna 3.1 on purpose:
//  - the continuous log-density subtracts log(sigma) (Optuna 3.1's _truncnorm.logpdf omits the
//    scale term, which under-weights narrow kernels; later Optuna releases fixed it);
//  - the maths runs in plain double loops without allocation per sample, and interval masses of
//    discrete kernels use a series for narrow kernels instead of two erf calls.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "search/distribution.h"
#include "search/rng.h"

namespace tune::search::detail {

struct ParzenParameters {
  bool consider_prior = true;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  bool multivariate = false;
};

// Optuna's default_weights(n): 1 for the newest 25 observations, a linear ramp from 1/n for
// older ones.
void default_weights(std::size_t n, std::vector<double>& out);

// Standard normal CDF and its logarithm (accurate in both tails) and the inverse CDF.
double ndtr(double x);
double log_ndtr(double x);
double ndtri(double p);
// log(Phi(b) - Phi(a)) for a <= b, accurate in the tails (Optuna's _log_gauss_mass).
double log_gauss_mass(double a, double b);
// exp(x) by range reduction and a polynomial: no libm call, so loops over it vectorise; relative
// error below 1e-14 for x in [-708, 709], clamped outside.
double fast_exp(double x);

class ParzenEstimator {
 public:
  // observations[p][i] is parameter p's internal value in observation i (chronological order,
  // oldest first), all within space[p]. Every span has the same length.
  ParzenEstimator(std::span<const Distribution* const> space,
                  std::span<const std::span<const double>> observations,
                  const ParzenParameters& parameters);

  // `size` joint draws; out[p][j] is parameter p of draw j, internal representation.
  void sample(Rng& rng, std::size_t size, std::vector<std::vector<double>>& out) const;

  // log density (mass for discrete parameters) of each joint sample; samples[p][j] as sample().
  void log_pdf(const std::vector<std::vector<double>>& samples, std::vector<double>& out) const;

  std::size_t n_components() const { return m_weights.size(); }

 private:
  enum class Kind { continuous, discrete, categorical };
  struct Param {
    const Distribution* dist = nullptr;
    Kind kind = Kind::continuous;
    bool log = false;
    double low = 0.0, high = 0.0, q = 0.0;  // transformed bounds, grid step (discrete)
    std::vector<double> mus, sigmas, inv_sigmas;
    std::vector<double> log_norm;  // -log(sigma Z sqrt(2pi)) (continuous), -log Z (discrete)
    std::vector<double> norm;      // exp(log_norm)
    std::vector<double> half_h;    // discrete: q / (2 sigma)
    // categorical
    std::size_t n_choices = 0;
    std::vector<int> observed;  // choice index per component, -1 for the prior row
    std::vector<double> p_hit, p_miss;
  };

  double transform(const Param& p, double internal) const;
  double untransform(const Param& p, double x) const;
  // Per-component log-density of one parameter at value x (transformed), added into acc.
  void add_component_log_pdf(const Param& p, double x, double* acc) const;
  double single_numeric_log_pdf(const Param& p, double x, std::vector<double>& buffer) const;

  std::vector<Param> m_params;
  std::vector<double> m_weights;  // normalised, observations then prior
  std::vector<double> m_log_weights;
  std::vector<double> m_cum_weights;  // for component choice
};

}  // namespace tune::search::detail
