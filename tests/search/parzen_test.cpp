// The Parzen estimator's maths: the fast kernels against libm, densities that integrate to one,
// draws inside the domain.
#include <cmath>
#include <span>

#include <gtest/gtest.h>

#include "search/parzen_estimator.h"

namespace tune::search::detail {
namespace {

TEST(ParzenMath, FastExpMatchesLibm) {
  for (double x = -700.0; x <= 700.0; x += 0.37) {
    EXPECT_NEAR(fast_exp(x) / std::exp(x), 1.0, 1e-14) << x;
  }
  EXPECT_EQ(fast_exp(0.0), 1.0);
}

TEST(ParzenMath, NdtriInvertsNdtr) {
  for (double x : {-30.0, -8.0, -3.0, -1.0, -1e-3, 0.0, 0.5, 2.0, 5.0}) {
    EXPECT_NEAR(ndtri(ndtr(x)), x, 1e-9 * std::max(1.0, std::abs(x))) << x;
  }
}

TEST(ParzenMath, LogGaussMassInBothTails) {
  EXPECT_NEAR(log_gauss_mass(-1.0, 1.0), std::log(0.6826894921370859), 1e-12);
  EXPECT_NEAR(log_gauss_mass(-40.0, -39.0), log_ndtr(-39.0), 1e-6);
  EXPECT_NEAR(log_gauss_mass(39.0, 40.0), log_ndtr(-39.0), 1e-6);
  EXPECT_TRUE(std::isfinite(log_gauss_mass(-50.0, -49.9)));
}

TEST(ParzenMath, DefaultWeightsRampOldObservations) {
  std::vector<double> w;
  default_weights(10, w);
  EXPECT_EQ(w, std::vector<double>(10, 1.0));
  default_weights(30, w);
  ASSERT_EQ(w.size(), 30U);
  EXPECT_DOUBLE_EQ(w[0], 1.0 / 30.0);
  EXPECT_DOUBLE_EQ(w[4], 1.0);
  EXPECT_LT(w[1], w[2]);
  EXPECT_EQ(w[29], 1.0);
}

double integrate(const ParzenEstimator& pe, double low, double high, int n) {
  std::vector<std::vector<double>> xs(1);
  for (int i = 0; i < n; ++i) xs[0].push_back(low + (high - low) * (i + 0.5) / n);
  std::vector<double> lp;
  pe.log_pdf(xs, lp);
  double sum = 0.0;
  for (double v : lp) sum += std::exp(v);
  return sum * (high - low) / n;
}

TEST(ParzenEstimator, ContinuousDensityIntegratesToOne) {
  const Distribution d = FloatDistribution{-2.0, 3.0, false, std::nullopt};
  const Distribution* space[] = {&d};
  const std::vector<double> obs = {-1.9, 0.0, 0.1, 2.5, 2.99, 1.0};
  const std::span<const double> cols[] = {obs};
  for (bool multivariate : {false, true}) {
    ParzenParameters params;
    params.multivariate = multivariate;
    params.normalized_kernels = true;
    const ParzenEstimator pe(space, cols, params);
    EXPECT_NEAR(integrate(pe, -2.0, 3.0, 20000), 1.0, 1e-4) << multivariate;
  }
}

TEST(ParzenEstimator, DiscreteAndCategoricalMassesSumToOne) {
  const Distribution d = IntDistribution{0, 20, false, 2};
  const Distribution c =
      CategoricalDistribution{{std::int64_t{1}, std::int64_t{2}, std::int64_t{3}}};
  const Distribution* space[] = {&d, &c};
  const std::vector<double> ints = {0, 2, 2, 4, 18, 20, 10};
  const std::vector<double> cats = {0, 0, 1, 2, 2, 2, 1};
  const std::span<const double> cols[] = {ints, cats};
  ParzenParameters params;
  params.multivariate = true;
  const ParzenEstimator joint(space, cols, params);
  std::vector<std::vector<double>> xs(2);
  for (int v = 0; v <= 20; v += 2) {
    for (int k = 0; k < 3; ++k) {
      xs[0].push_back(v);
      xs[1].push_back(k);
    }
  }
  std::vector<double> lp;
  joint.log_pdf(xs, lp);
  double total = 0.0;
  for (double v : lp) total += std::exp(v);
  EXPECT_NEAR(total, 1.0, 1e-6);

  // Univariate: one parameter at a time.
  for (std::size_t p = 0; p < 2; ++p) {
    const Distribution* one[] = {space[p]};
    const std::span<const double> col[] = {cols[p]};
    const ParzenEstimator pe(one, col, ParzenParameters{});
    std::vector<std::vector<double>> v(1);
    if (p == 0)
      for (int x = 0; x <= 20; x += 2) v[0].push_back(x);
    else
      v[0] = {0, 1, 2};
    pe.log_pdf(v, lp);
    double sum = 0.0;
    for (double x : lp) sum += std::exp(x);
    EXPECT_NEAR(sum, 1.0, 1e-6) << p;
  }
}

TEST(ParzenEstimator, DrawsStayInTheDomain) {
  const Distribution f = FloatDistribution{1e-3, 10.0, true, std::nullopt};
  const Distribution i = IntDistribution{1, 1000, true, 1};
  const Distribution s = FloatDistribution{0.0, 1.0, false, 0.1};
  const Distribution* space[] = {&f, &i, &s};
  const std::vector<double> a = {1e-3, 10.0, 0.5}, b = {1, 1000, 30}, c = {0.0, 1.0, 0.3};
  const std::span<const double> cols[] = {a, b, c};
  const ParzenEstimator pe(space, cols, ParzenParameters{});
  Rng rng(1);
  std::vector<std::vector<double>> out;
  pe.sample(rng, 2000, out);
  for (std::size_t j = 0; j < 2000; ++j) {
    EXPECT_TRUE(contains(f, out[0][j])) << out[0][j];
    EXPECT_TRUE(contains(i, out[1][j])) << out[1][j];
    EXPECT_TRUE(contains(s, out[2][j])) << out[2][j];
  }
}

}  // namespace
}  // namespace tune::search::detail
