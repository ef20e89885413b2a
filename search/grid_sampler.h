// The grid sampler (Optuna's GridSampler): every combination of the listed values, each run
// once, in an order fixed by the seed; exhausted() stops the study once every point has run.
// Design: docs/design-notes.md#searchgrid_samplerh
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
