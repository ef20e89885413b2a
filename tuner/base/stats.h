// The statistics behind the report's speedup line: the median of a sample and a percentile-
// bootstrap confidence interval for a ratio of medians. Pure functions; the bootstrap draws from
// its own seeded generator, so the same inputs and seed give the same interval everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace tune::tuner {

// Median of a non-empty sample (the mean of the middle two for an even count).
double median(std::vector<double> values);

// The 95% percentile-bootstrap interval of median(numerator) / median(denominator): `samples`
// resamples of each side with replacement. None when either side has fewer than 3 values, when
// samples < 100, or when fewer than 100 resamples give a finite ratio (a zero median).
std::optional<std::pair<double, double>> bootstrap_ratio_ci(const std::vector<double>& numerator,
                                                            const std::vector<double>& denominator,
                                                            int samples, std::uint64_t seed);

}  // namespace tune::tuner
