// Storage: where studies and trials live (Optuna's BaseStorage), the one interface the tuner uses,
// over SQLite or PostgreSQL. Every method is one transaction; several processes may share one
// database. One Storage object is used by one thread at a time.
// Design: docs/design-notes.md#tunerstoragestorageh
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/storage/storage_error.h"

namespace tune::tuner {

struct StudyInfo {
  std::int64_t study_id = -1;
  std::string name;
  search::Direction direction = search::Direction::minimize;  // the first objective's
  // One per objective, as Optuna's study_directions rows (objective 0, 1, ...); never empty.
  std::vector<search::Direction> directions = {search::Direction::minimize};
};

// A trial's objective values as set_trial_state_values() stores them: none, one, or one per
// objective of a multi-objective study (Optuna's trial_values rows, objective = position).
struct TrialValues {
  std::vector<double> values;
  TrialValues() = default;
  TrialValues(std::nullopt_t) {}
  TrialValues(double value) : values{value} {}
  TrialValues(std::optional<double> value) {
    if (value) values.push_back(*value);
  }
  TrialValues(std::vector<double> all) : values(std::move(all)) {}
};

struct NewTrial {
  std::int64_t trial_id = -1;
  int number = -1;
};

// What a new study starts with, written in the transaction that creates it: a run cut off
// between the creation and its baselines leaves either no study or all of them.
struct StudySeed {
  nlohmann::json user_attrs = nlohmann::json::object();  // study user attrs
  std::vector<nlohmann::json>
      waiting_trials;  // each WAITING trial's system attrs, numbered in order
};

// One parameter's value as a trial stores it (Optuna's trial_params row).
struct ParamWrite {
  std::string name;
  double internal = 0.0;
  search::Distribution distribution;
};

// Writes to one trial that Storage::update_trial makes in one transaction: one round of locks
// and one commit instead of one per attribute. Every part may be empty.
struct TrialUpdate {
  nlohmann::json user_attrs = nlohmann::json::object();
  nlohmann::json system_attrs = nlohmann::json::object();
  std::vector<ParamWrite> params;
  std::map<std::int64_t, double> intermediate_values;
  // The trial's new state, with `values`; none leaves its state alone.
  std::optional<search::TrialState> state;
  TrialValues values;
};

// What a reader of a study has seen (Storage::get_trials_changed): the newest trial, by id, and
// the study's change count then. {} has seen nothing.
struct StudyMark {
  std::int64_t trial_id = 0;
  std::int64_t changes = 0;
};

enum class OpenMode {
  read_write,  // creates the database and its schema when absent
  read_only,   // the database must exist; nothing is written (tune best/trials/report/export)
};

// A RUNNING trial of another host is given up for dead when it has shown no sign of life (a
// heartbeat, else its start) for this long. The owner writes a heartbeat every sixteenth of the
// grace period (7.5 s here; 0.5 s at least, 10 s at most), so this is mostly room for clocks that
// disagree between hosts.
inline constexpr double k_default_grace_period_s = 120.0;

// Options given in the storage URL's query ("sqlite:///study.db?synchronous=normal").
struct StorageOptions {
  OpenMode mode = OpenMode::read_write;
  // true (`synchronous=full`, the default): a trial's end (set_trial_state_values() to a
  // finished state) and a study's creation are flushed to disk before the call returns, and
  // with them every write before them: one flush per trial, so a finished trial survives a
  // power loss. What was written since the last flush (a running trial, its params,
  // intermediate values, heartbeats; trials just enqueued) may be lost with the machine; a
  // trial cut off that way is gone (or back to WAITING) rather than failed. false
  // (`synchronous=normal`): nothing is flushed at commit, only at checkpoints; the database
  // stays consistent, but a power loss may take the last finished trials with it. Worth it only
  // where a flush is slow (network file systems).
  bool synchronous_full = true;
  double grace_period_s = k_default_grace_period_s;  // see k_default_grace_period_s
  // The longest one call may take (`retry_for=60s`): a database server (PostgreSQL) that stops
  // answering mid-study, with or without closing its connections, is retried with backoff
  // until then, each statement waiting no longer; SQLite waits for a lock another process holds
  // (its busy timeout) this long. Then the call fails with an error naming the database.
  double retry_s = 60.0;
};

// How long ago (seconds) a trial last showed a sign of life, by this host's clock against the
// stored UTC timestamps. nullopt for what it never had (no heartbeat yet; a WAITING trial).
struct TrialLiveness {
  std::optional<double> since_heartbeat_s;
  std::optional<double> since_start_s;
};
class Storage {
 public:
  virtual ~Storage() = default;

  // Returns the study, creating it when absent with one direction per objective and what `seed`
  // holds, in one transaction; `created` says which happened. An existing study with other
  // directions is an error (its seed is not written).
  [[nodiscard]] virtual StorageResult<StudyInfo> get_or_create_study(
      const std::string& name, const std::vector<search::Direction>& directions, bool* created,
      const StudySeed& seed) = 0;
  [[nodiscard]] StorageResult<StudyInfo> get_or_create_study(
      const std::string& name, const std::vector<search::Direction>& directions, bool* created) {
    return get_or_create_study(name, directions, created, StudySeed{});
  }
  // The same for a single-objective study.
  [[nodiscard]] StorageResult<StudyInfo> get_or_create_study(const std::string& name,
                                                             search::Direction direction,
                                                             bool* created) {
    return get_or_create_study(name, std::vector<search::Direction>{direction}, created);
  }
  [[nodiscard]] virtual StorageResult<StudyInfo> get_study(const std::string& name) = 0;
  [[nodiscard]] virtual StorageResult<std::vector<StudyInfo>> get_all_studies() = 0;
  [[nodiscard]] virtual StorageResult<void> set_study_user_attr(std::int64_t study_id,
                                                                const std::string& key,
                                                                const nlohmann::json& value) = 0;
  [[nodiscard]] virtual StorageResult<nlohmann::json> get_study_user_attrs(
      std::int64_t study_id) = 0;

  // A new trial in `state` (RUNNING, or WAITING for enqueued ones) with the given system attrs.
  [[nodiscard]] virtual StorageResult<NewTrial> create_trial(
      std::int64_t study_id, search::TrialState state, const nlohmann::json& system_attrs) = 0;
  // create_trial, unless a trial of the study already has the system attr `unique_key` with the
  // value system_attrs[unique_key] (looked up in the creating transaction, so that of several
  // workers doing the same at once one creates it): nullopt then.
  [[nodiscard]] virtual StorageResult<std::optional<NewTrial>> create_trial_unless(
      std::int64_t study_id, search::TrialState state, const nlohmann::json& system_attrs,
      const std::string& unique_key) = 0;
  // Atomically takes the oldest WAITING trial and makes it RUNNING; nullopt when none waits.
  [[nodiscard]] virtual StorageResult<std::optional<NewTrial>> pop_waiting_trial(
      std::int64_t study_id) = 0;

  [[nodiscard]] virtual StorageResult<void> set_trial_param(std::int64_t trial_id,
                                                            const std::string& name,
                                                            double internal,
                                                            const search::Distribution& dist) = 0;
  // Moves a trial to `state` (with its values when given). Returns false, changing nothing, when
  // the trial had already finished.
  [[nodiscard]] virtual StorageResult<bool> set_trial_state_values(std::int64_t trial_id,
                                                                   search::TrialState state,
                                                                   const TrialValues& values) = 0;
  // Replaces a COMPLETE trial's value: a re-measured trial's believed value (tuner/judge/reruns.h).
  // With `keep_old_as`, the value replaced is first kept as that user attribute, unless the
  // trial has one by that name (the one write a finished trial takes). Returns false, changing
  // nothing, when the trial is not COMPLETE.
  [[nodiscard]] virtual StorageResult<bool> set_complete_trial_value(
      std::int64_t trial_id, double value, const std::string& keep_old_as) = 0;
  [[nodiscard]] StorageResult<bool> set_complete_trial_value(std::int64_t trial_id, double value) {
    return set_complete_trial_value(trial_id, value, "");
  }
  [[nodiscard]] virtual StorageResult<void> set_trial_intermediate_value(std::int64_t trial_id,
                                                                         std::int64_t step,
                                                                         double value) = 0;
  [[nodiscard]] virtual StorageResult<void> set_trial_user_attr(std::int64_t trial_id,
                                                                const std::string& key,
                                                                const nlohmann::json& value) = 0;
  [[nodiscard]] virtual StorageResult<void> set_trial_system_attr(std::int64_t trial_id,
                                                                  const std::string& key,
                                                                  const nlohmann::json& value) = 0;
  // Records that the process running the trial is alive (Optuna's trial_heartbeats, UTC as
  // Optuna writes it). A trial created RUNNING or popped gets its first one in that transaction.
  [[nodiscard]] virtual StorageResult<void> record_heartbeat(std::int64_t trial_id) = 0;

  // The writes of `update` in one transaction (the trial's end: write_flush, as
  // set_trial_state_values'; else write_synced). Returns false, writing nothing, when the trial
  // had finished and `update` sets a state; without a state, a finished trial is an error of
  // kind finished, as any other write to it.
  [[nodiscard]] virtual StorageResult<bool> update_trial(std::int64_t trial_id,
                                                         const TrialUpdate& update) = 0;

  [[nodiscard]] virtual StorageResult<search::FrozenTrial> get_trial(std::int64_t trial_id) = 0;
  // Every trial of the study in number order.
  [[nodiscard]] virtual StorageResult<std::vector<search::FrozenTrial>> get_all_trials(
      std::int64_t study_id) = 0;
  // The delta a cache needs, whole trials in number order: those created since `mark` (by
  // trial id: ids grow in creation order within a study) and those changed since (the study's
  // change count, see below); `mark` moves to what this read saw. A trial counts as changed when
  // its state changes (a pop, its end, failed as stale by another worker), when its params are
  // stored through update_trial (a worker's trial as it starts, so that the constant liar sees
  // where it runs) and when its value is replaced (set_complete_trial_value). Its other writes
  // (heartbeats, intermediate values, attributes while it runs) reach other readers with its
  // next change. The count is bumped in the writing transaction, under a row lock, so counts
  // are committed in order and a read misses none. The cost is that of the delta alone, however
  // long the study and however many workers write it. A database whose change count this
  // storage cannot keep (one written by an older tune, opened read-only) re-reads the trials in
  // `refresh` (those the caller holds unfinished) that are no longer WAITING instead.
  [[nodiscard]] virtual StorageResult<std::vector<search::FrozenTrial>> get_trials_changed(
      std::int64_t study_id, StudyMark& mark, const std::vector<std::int64_t>& refresh) = 0;
  [[nodiscard]] virtual StorageResult<TrialLiveness> trial_liveness(std::int64_t trial_id) = 0;
  // Seconds without a sign of life after which another host's RUNNING trial counts as dead.
  virtual double grace_period_s() const = 0;
};

}  // namespace tune::tuner
