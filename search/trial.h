// Trials (FrozenTrial, as Optuna's) and the read-only study view that samplers and pruners work
// from; samplers keep no reference to the view beyond one call. Not thread-safe by itself.
// Design: docs/design-notes.md#searchtrialh
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
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

// Where a reader of a view's change log stands (StudyView::changes_since): which log, and how
// many of its entries the reader has taken in. The default (log 0) has seen nothing.
struct ChangeCursor {
  std::uint64_t log = 0;
  std::size_t position = 0;
};

// A new change log's identity: unique in the process, never 0.
std::uint64_t new_change_log_id();

// What a sampler or pruner may read of a study. trials() is every trial in number order,
// RUNNING and WAITING ones included; callers filter by state.
//
// A view may also keep a change log, so that a reader which derives something from the whole
// history (a sampler's observations, the probes' duty cycles, the best trial so far) folds in
// only the trials that changed since its last look, and its cost per trial stays flat as the
// study grows: changes_since(cursor) lists them, and cursor() is where the log ends now.
class StudyView {
 public:
  virtual ~StudyView() = default;
  // The first objective's direction (the only one of a single-objective study).
  virtual Direction direction() const = 0;
  // One per objective; more than one makes the study multi-objective.
  virtual std::vector<Direction> directions() const { return {direction()}; }
  bool is_multi_objective() const { return directions().size() > 1; }
  virtual const std::vector<FrozenTrial>& trials() const = 0;
  // The positions in trials() of the trials added or changed since `cursor` (a value cursor()
  // returned), in the order of their changes, a position possibly more than once; positions of
  // earlier trials never move within one log. nullopt when the view cannot tell (it keeps no
  // log, `cursor` is of another log, or trials moved and a new log began): every trial may
  // have changed, and the reader starts again from trials() whole.
  virtual std::optional<std::span<const std::size_t>> changes_since(const ChangeCursor&) const {
    return std::nullopt;
  }
  // The end of the change log now; {} for a view that keeps none.
  virtual ChangeCursor cursor() const { return {}; }
};

// The trials a reader of `study` must fold in since `cursor`, and `cursor` moved to the log's
// end: the positions changes_since() names, or, when it cannot tell, every position with
// `from_scratch` set (the reader first drops what it derived). A position may repeat.
struct ChangedTrials {
  bool from_scratch = false;
  std::vector<std::size_t> positions;
};
ChangedTrials take_changes(const StudyView& study, ChangeCursor& cursor);

// A StudyView over a vector the caller owns; handy for tests and benchmarks. Trials given
// through add() and replace() are logged as changes; mutable_trials() may change anything, so
// it begins a new log.
class VectorStudyView final : public StudyView {
 public:
  explicit VectorStudyView(Direction direction) : m_directions{direction} {}
  explicit VectorStudyView(std::vector<Direction> directions)
      : m_directions(std::move(directions)) {}
  Direction direction() const override { return m_directions.front(); }
  std::vector<Direction> directions() const override { return m_directions; }
  const std::vector<FrozenTrial>& trials() const override { return m_trials; }
  std::vector<FrozenTrial>& mutable_trials() {
    m_log_id = new_change_log_id();
    m_log.clear();
    return m_trials;
  }
  // Appends a trial (its number after every other's) and logs it.
  void add(FrozenTrial trial) {
    m_trials.push_back(std::move(trial));
    m_log.push_back(m_trials.size() - 1);
  }
  // Replaces the trial at `position` and logs it.
  void replace(std::size_t position, FrozenTrial trial) {
    m_trials.at(position) = std::move(trial);
    m_log.push_back(position);
  }
  std::optional<std::span<const std::size_t>> changes_since(
      const ChangeCursor& cursor) const override {
    if (cursor.log != m_log_id || cursor.position > m_log.size()) return std::nullopt;
    return std::span<const std::size_t>(m_log).subspan(cursor.position);
  }
  ChangeCursor cursor() const override { return {m_log_id, m_log.size()}; }

 private:
  std::vector<Direction> m_directions;  // never empty
  std::vector<FrozenTrial> m_trials;
  std::uint64_t m_log_id = new_change_log_id();
  std::vector<std::size_t> m_log;  // positions, one per add() or replace()
};

}  // namespace tune::search
