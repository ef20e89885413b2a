// Trials and the read-only view of a study that samplers and pruners work from.
//
// FrozenTrial mirrors Optuna's FrozenTrial: a finished trial is frozen (never changed again); a
// RUNNING trial is a snapshot. A study has one direction per objective (Optuna's `directions`);
// single-objective code reads `value`, multi-objective code `values`. The study view is owned by
// the caller (the tuner keeps it in step with storage); samplers must not keep references to it
// beyond one call. Nothing here is thread-safe by itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/distribution.h"

namespace tune::search {

// Same integer codes as Optuna's TrialState enum (stored as text names in its RDB schema).
enum class TrialState { running = 0, complete = 1, pruned = 2, fail = 3, waiting = 4 };
enum class Direction { minimize = 1, maximize = 2 };  // Optuna's StudyDirection codes

const char* to_string(TrialState state);     // "RUNNING", "COMPLETE", ... (Optuna's names)
const char* to_string(Direction direction);  // "MINIMIZE" / "MAXIMIZE"

// System attr of a trial that re-measures an earlier one (`tune confirm`), holding that trial's
// number. Samplers learn one observation per configuration, so they skip such trials.
inline constexpr const char* k_repeat_of_attr = "confirm_of";

// System attr of a trial whose parameters were fixed before it started (Optuna's enqueue_trial
// spelling, {param: value}): a sampler that walks an order (grid) does not count it as a step.
inline constexpr const char* k_fixed_params_attr = "fixed_params";

// The ordered search space of a study: parameter name and domain, in the study file's order.
using SearchSpace = std::vector<std::pair<std::string, Distribution>>;

struct FrozenTrial {
  int number = -1;             // 0-based, unique within the study
  std::int64_t trial_id = -1;  // storage key
  TrialState state = TrialState::running;
  std::optional<double> value;  // objective; set for COMPLETE (and PRUNED when reported)
  // Every objective's value, in objective order, when the trial has more than one (Optuna's
  // `values`); then value == values[0]. Empty for single-objective trials.
  std::vector<double> values;
  std::map<std::string, double> params;                // internal representation
  std::map<std::string, Distribution> distributions;   // one per param
  std::map<std::int64_t, double> intermediate_values;  // step -> value (pruning)
  std::vector<double> constraints;                     // c <= 0 is feasible; empty = unconstrained
  nlohmann::json user_attrs = nlohmann::json::object();
  nlohmann::json system_attrs = nlohmann::json::object();
  std::optional<std::chrono::system_clock::time_point> datetime_start;
  std::optional<std::chrono::system_clock::time_point> datetime_complete;

  bool is_finished() const {
    return state == TrialState::complete || state == TrialState::pruned ||
           state == TrialState::fail;
  }
  bool is_feasible() const {
    for (double c : constraints) {
      if (!(c <= 0.0)) return false;
    }
    return true;
  }
};

// What a sampler or pruner may read of a study. trials() is every trial in number order,
// RUNNING and WAITING ones included; callers filter by state.
class StudyView {
 public:
  virtual ~StudyView() = default;
  // The first objective's direction (the only one of a single-objective study).
  virtual Direction direction() const = 0;
  // One per objective; more than one makes the study multi-objective.
  virtual std::vector<Direction> directions() const { return {direction()}; }
  bool is_multi_objective() const { return directions().size() > 1; }
  virtual const std::vector<FrozenTrial>& trials() const = 0;
};

// A StudyView over a vector the caller owns; handy for tests and benchmarks.
class VectorStudyView final : public StudyView {
 public:
  explicit VectorStudyView(Direction direction) : m_directions{direction} {}
  explicit VectorStudyView(std::vector<Direction> directions)
      : m_directions(std::move(directions)) {}
  Direction direction() const override { return m_directions.front(); }
  std::vector<Direction> directions() const override { return m_directions; }
  const std::vector<FrozenTrial>& trials() const override { return m_trials; }
  std::vector<FrozenTrial>& mutable_trials() { return m_trials; }

 private:
  std::vector<Direction> m_directions;  // never empty
  std::vector<FrozenTrial> m_trials;
};

}  // namespace tune::search
