// The random sampler: every parameter independently and uniformly (log-uniformly for log
// ranges) in its domain, as Optuna's RandomSampler. TPE uses one for its startup trials.
// Seeded, a parameter's value is a function of (seed, trial number, parameter name): resumed
// studies and concurrent workers, whose trials have new numbers, draw new points, while the
// same study run again from scratch draws the same ones (see TrialStreams in rng.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "search/rng.h"
#include "search/sampler.h"

namespace tune::search {

// One draw from `dist` (internal value), on its step grid and within its bounds.
double sample_uniform(Rng& rng, const Distribution& dist);

std::unique_ptr<Sampler> make_random_sampler(std::optional<std::uint64_t> seed);

}  // namespace tune::search
