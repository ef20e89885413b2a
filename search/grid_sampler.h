// The grid sampler (Optuna's GridSampler): every combination of the listed values, each run once,
// in a random order that is a function of the seed alone (the same in every worker and every
// resume). Trial n takes the first point from position n of that order on that no trial has run
// or is running, so a resumed study carries on with new points and concurrent workers, whose
// trials have different numbers, start from different points even before they see each other's
// RUNNING trials. The point is recorded in the trial's system attr "grid_id". When every point has
// run the sampler reports exhausted() and the study stops.
#pragma once

#include <expected>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "search/sampler.h"

namespace tune::search {

// config: {"type": "grid", "seed": N, "search_space": {"name": [values...]}}. Without
// search_space the grid is derived from the study's space: categorical choices, every int on
// its step, every float on its step; a continuous float is an error that names it.
std::expected<std::unique_ptr<Sampler>, std::string> make_grid_sampler(const nlohmann::json& config,
                                                                       const SearchSpace& space);

}  // namespace tune::search
