// The one place that knows every sampler: the study file's `sampler:` section (as JSON) -> a
// Sampler. The interface (sampler.h) names none of its implementations; a new sampler is added
// here and to the shared suite (tests/search/sampler_suite_test.cpp). Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <expected>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "search/sampler.h"
#include "search/trial.h"

namespace tune::search {

// Builds a sampler from the study file's `sampler:` section given as JSON, e.g.
// {"type": "tpe", "seed": 7, "n_startup_trials": 10}. Types: "gp" (the default, also for a
// null or typeless config), "tpe", "random", "grid". For a study of n_objectives > 1 the
// default is "tpe" (multi-objective TPE) and "gp", single-objective only, is an error.
// Unknown types or options give an error naming the key.
std::expected<std::unique_ptr<Sampler>, std::string> make_sampler(const nlohmann::json& config,
                                                                  const SearchSpace& space,
                                                                  std::size_t n_objectives = 1);

}  // namespace tune::search
