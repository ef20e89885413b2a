// Successive halving and Hyperband pruners (Optuna 3.1's SuccessiveHalvingPruner and
// HyperbandPruner), built from the study file's `pruner:` JSON by make_pruner().
#pragma once

#include <expected>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "search/pruner.h"

namespace tune::search {

std::expected<std::unique_ptr<Pruner>, std::string> make_successive_halving_pruner(
    const nlohmann::json& config);
std::expected<std::unique_ptr<Pruner>, std::string> make_hyperband_pruner(
    const nlohmann::json& config);

}  // namespace tune::search
