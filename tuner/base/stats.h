// The statistics behind the report's speedup and noise lines: the median of a sample, a
// percentile-bootstrap confidence interval for a ratio of medians, and the few distributions the
// noise model (tuner/judge/noise.h) tests with: Student's t (a difference beyond the noise) and
// Fisher's F, or chi-square when the noise is taken as known (settings told apart). Pure
// functions; the bootstrap draws from its own seeded generator, so the same inputs and seed give
// the same interval everywhere. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace tune::tuner {

// Median of a non-empty sample (the mean of the middle two for an even count).
double median(std::vector<double> values);

// The value below which a fraction `q` (0..1) of a non-empty sample lies, interpolated linearly
// between order statistics (numpy's default percentile).
double quantile(std::vector<double> values, double q);

// The 95% percentile-bootstrap interval of median(numerator) / median(denominator): `samples`
// resamples of each side with replacement. None when either side has fewer than 3 values, when
// samples < 100, or when fewer than 100 resamples give a finite ratio (a zero median).
std::optional<std::pair<double, double>> bootstrap_ratio_ci(const std::vector<double>& numerator,
                                                            const std::vector<double>& denominator,
                                                            int samples, std::uint64_t seed);

// The regularized incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1].
double incomplete_beta(double a, double b, double x);

// The quantile of Student's t distribution with `df` degrees of freedom (df > 0; infinity: the
// standard normal) at probability p in (0, 1): student_t_quantile(0.975, 5) = 2.5706.
double student_t_quantile(double p, double df);

// P(F > f) for Fisher's F distribution with (df1, df2) degrees of freedom; df2 infinite is
// chi-square(df1) / df1, the test statistic's law when the noise is known rather than estimated.
double f_upper_tail(double f, double df1, double df2);

}  // namespace tune::tuner
