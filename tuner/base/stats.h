// The statistics behind the report's speedup and noise lines: the median, a percentile-bootstrap
// interval for a ratio of medians, and Student's t, Fisher's F and chi-square for the noise model
// (tuner/judge/noise.h). Pure functions; the bootstrap's generator is seeded, so the same inputs
// and seed give the same interval everywhere. Thread-safe.
// Design: docs/design-notes.md#tunerbasestatsh
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
