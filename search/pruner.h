// Pruners decide from intermediate values whether a running trial is hopeless
// (Optuna's BasePruner). The trial passed in is a RUNNING snapshot whose intermediate_values
// hold what it reported so far. Stateless apart from configuration; one thread at a time.
#pragma once

#include <expected>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "search/trial.h"

namespace tune::search {

class Pruner {
 public:
  virtual ~Pruner() = default;
  virtual bool prune(const StudyView& study, const FrozenTrial& trial) = 0;
};

// From the study file's `pruner:` section as JSON, e.g. {"type": "median",
// "n_startup_trials": 5, "n_warmup_steps": 2}. Types: "none", "median", "percentile",
// "successive_halving", "hyperband".
std::expected<std::unique_ptr<Pruner>, std::string> make_pruner(const nlohmann::json& config);

}  // namespace tune::search
