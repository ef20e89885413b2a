// Following a trial while it runs, besides its window (tuner/measure/window_follower.h): new
// intermediate values from its log, its heartbeats, and the storage errors kept for its end.
// One per trial, used by one thread at a time (the launcher's watcher's, then the runner's).
// Design: docs/design-notes.md#tunerrunlog_followerh
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "search/pruner.h"
#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/storage/storage.h"
#include "tuner/storage/study_cache.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// Why a trial this worker ran is stopped and its result discarded: another worker finished it.
inline constexpr std::string_view k_lost_reason =
    "failed by another worker while this one was suspended; its result is discarded";
// ... or its row is gone. Only a creation that was not durable (synchronous=normal, then a crash
// of the database server or the machine) or a deletion does that: the worker cannot store the
// result under a number the database may hand out again, so it drops the trial, keeps its
// folder, says so, and goes on with the next trial; the study stays consistent.
inline constexpr std::string_view k_gone_reason =
    "its row is gone from the database (a crash took its creation, or it was deleted); its "
    "result is discarded, its folder kept";

// Remembers the first error of storage writes made where no error can be returned (inside the
// launcher's watcher), so the trial loop reports it once the trial is over: none is dropped.
class ErrorSink {
 public:
  template <typename T>
  void note(const StorageResult<T>& r) {
    if (r) return;
    if (!m_error) m_error = r.error().message;
    if (!m_lost && r.error().lost_trial()) m_lost = r.error();
  }
  Result<void> result() const {
    if (m_error) return std::unexpected(*m_error);
    return {};
  }
  // The trial is no longer this worker's (StorageError::lost_trial()), also when another error
  // came first (the database was away meanwhile).
  bool lost() const { return m_lost.has_value(); }
  // The storage's word for it, when lost().
  const StorageError& error() const { return *m_lost; }
  // A write failed (the database unreachable past retry_for): the trial's end carries what the
  // failed writes would have stored.
  bool failed() const { return m_error.has_value(); }

 private:
  std::optional<std::string> m_error;
  std::optional<StorageError> m_lost;
};

// Follows a trial's log while it runs: stores new intermediate values and asks the pruner.
class LogFollower {
 public:
  using Clock = std::chrono::steady_clock;

  LogFollower(const ObjectiveSpec& objective, std::string log_path, Storage& storage,
              StudyCache& cache, search::Pruner* pruner, search::FrozenTrial& trial,
              ErrorSink& errors)
      : m_objective(objective),
        m_log_path(std::move(log_path)),
        m_storage(storage),
        m_cache(cache),
        m_pruner(pruner),
        m_trial(trial),
        m_errors(errors) {}

  // Returns a reason to stop the trial, or "". With prune=false it only records what the log
  // holds (called once more after the trial ended, so even fast trials leave full curves).
  // While the trial runs (on the launcher's watcher thread) every write is tried, also after
  // one failed: the heartbeats keep other workers from failing the trial as stale once the
  // database answers again, and a call that waits delays nothing of the trial. After the
  // trial, once one failed, none is tried: each would hold up the trial's end by retry_for, and
  // the end carries them (FinalRecord::intermediate_values).
  // Heartbeats go out every heartbeat_interval_s() (the first with the trial's start), not every
  // tick: a study of 200 workers would otherwise send the server 400 of them a second.
  std::string tick(bool prune = true);

 private:
  const ObjectiveSpec& m_objective;
  std::string m_log_path;
  Storage& m_storage;
  StudyCache& m_cache;
  search::Pruner* m_pruner;
  search::FrozenTrial& m_trial;
  ErrorSink& m_errors;
  std::filesystem::file_time_type m_last_mtime{};
  Clock::time_point m_last_heartbeat = Clock::now();  // the start wrote the first

  // A sixteenth of the grace period (7.5 s for the default 120 s), 0.5 s at least: a live
  // trial's heartbeat is never near the age at which another worker fails it as stale.
  Clock::duration heartbeat_interval() const;
};

}  // namespace tune::tuner
