// The study loop: ask the sampler, launch the trial, parse its objective, store everything. A
// StudyRunner owns one `tune` process's storage connection, sampler and pruner; several processes
// may share one database. Not thread-safe: one runner, one thread.
// Design: docs/design-notes.md#tunerrunrunnerh
#pragma once

#include <sys/types.h>

#include <expected>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "search/trial.h"
#include "tuner/judge/ranking.h"            // BestTracker, a member
#include "tuner/launch/program_identity.h"  // ProgramIdentities, a member
#include "tuner/run/follow_ups.h"           // QuietWaits, a member
#include "tuner/run/pending_result.h"       // FinalRecord
#include "tuner/storage/study_cache.h"
#include "tuner/study/open_study.h"  // OpenedStudy, storage_url_for: used with the runner
#include "tuner/study/study_file.h"

namespace tune::search {
class Pruner;
class Sampler;
}  // namespace tune::search

namespace tune::tuner {

class HostEnv;  // tuner/storage/trial_owner.h

struct RunOptions {
  int trials = 10;                        // new trials to run (enqueued ones count)
  std::optional<double> study_timeout_s;  // --time-limit: no trial starts after it; the running
                                          // one is stopped
  std::string storage_override;           // --storage; empty = the study file's
  bool quiet = false;                     // no per-trial lines
  bool prune = true;                      // false: no pruner (tune confirm's repeats run whole)
  const HostEnv* host = nullptr;  // the machine and process (null: the live one; tests fake it)
};

struct RunTotals {
  int ran = 0;
  bool interrupted = false;
  // Set when the study stopped because max_failures trials in a row failed: why, in one line
  // (how many, the reason most of them gave, and what to change).
  std::string gave_up;
};

// Hooks for the probes: called around each trial (set by the CLI when probes are enabled).
struct TrialHooks {
  // Right after the trial's launch is rendered, before anything of it is stored or run: may add
  // variables the launch carries to every rank (the probes tag a trial that spans hosts).
  std::function<void(const search::FrozenTrial&, RenderedLaunch& launch)> tag_launch;
  // Before before_launch: the study as stored now (finished trials carry what the probes
  // measured, and its change log says which trials are new since the last call), so a
  // prediction can learn from the trials before it.
  std::function<void(const search::StudyView&)> study_history;
  // Before launch, with the trial's structured launch (its argv is exactly what will run): may
  // return system attrs to store and a constraint value (> 0 = skip).
  std::function<nlohmann::json(const search::FrozenTrial&, const RenderedLaunch& launch)>
      before_launch;
  // Started with the root pid; returns attrs to store when the trial ends.
  std::function<void(pid_t)> on_start;
  std::function<nlohmann::json()> on_end;
};

// The objectives' names as live output shows them (study_file.h objective_names), or none for a
// single regex objective, whose value then stands alone ("value 1.2", not "objective 0 1.2").
std::vector<std::string> live_objective_names(const StudySpec& spec);

// Why StudyRunner::open failed: one line, and whether the study file is at fault because it no
// longer matches the study it names (tuner/study/study_changes.h: bad input, exit 2) rather than
// the storage or the sampler.
struct OpenError {
  std::string message;
  bool study_file_changed = false;
};
std::ostream& operator<<(std::ostream& out, const OpenError& error);

class StudyRunner {
 public:
  ~StudyRunner();
  // Opens the study's storage and gets or creates the study; an existing one is first compared
  // with the study file (compare_with_stored): a change it refuses fails the open, the notes are
  // said when run() starts.
  static std::expected<std::unique_ptr<StudyRunner>, OpenError> open(StudySpec spec,
                                                                     const RunOptions& options);

  // Runs options.trials trials (or until interrupted / timed out), printing a line per trial.
  Result<RunTotals> run(std::ostream& out);

  void set_hooks(TrialHooks hooks) { m_hooks = std::move(hooks); }
  Storage& storage() { return *m_storage; }
  StudyCache& cache() { return *m_cache; }
  const StudySpec& spec() const { return m_spec; }

 private:
  StudyRunner() = default;
  Result<void> recover_stale_trials();
  Result<void> run_one(std::ostream& out, int index, bool* stop);

  // The steps of one trial, in order (run_one). A step fails with a StorageError, of the
  // storage's kind where the storage failed it (run_one goes on when the trial was lost).
  struct Prepared;
  struct Ran;
  StorageResult<search::FrozenTrial> claim_trial();
  // The k_attr_machine value for this runner's trials (null when hwloc cannot read the machine).
  const nlohmann::json& machine();
  StorageResult<TemplateValues> sample_params(search::FrozenTrial& trial);
  StorageResult<Prepared> prepare_launch(const search::FrozenTrial& trial, TemplateValues values);
  StorageResult<Ran> execute(search::FrozenTrial& trial, const Prepared& prepared);
  StorageResult<void> record_outcome(search::FrozenTrial& trial, FinalRecord& record);
  // A RUNNING trial of a dead owner whose result was kept in its folder (pending_result.h):
  // stores it; whether it did (false: no such file, or one that cannot be read, named in
  // `problem`).
  StorageResult<bool> store_kept_result(const search::FrozenTrial& trial, std::string& problem);
  void print_progress(std::ostream& out, int index, const search::FrozenTrial& trial,
                      const Ran& ran);
  // The trial is no longer this worker's (StorageError::lost_trial()): finished by another
  // worker (failed as stale while this one was suspended), said with the state and reason the
  // database holds, or its row gone; nothing more is written into it.
  void print_lost(std::ostream& out, int index, const search::FrozenTrial& trial,
                  const StorageError& error) const;
  const HostEnv& host() const;

  StudySpec m_spec;
  RunOptions m_options;
  std::unique_ptr<Storage> m_storage;
  std::unique_ptr<StudyCache> m_cache;
  std::unique_ptr<search::Sampler> m_sampler;
  std::unique_ptr<search::Pruner> m_pruner;
  TrialHooks m_hooks;
  BestTracker m_best;  // the live line's best so far, from the cache's change log
  std::string m_trainer;
  ProgramIdentities m_programs;  // which programs trials ran, cached by name and PATH
  std::vector<std::string>
      m_failures_in_row;  // fail reasons since the last trial that did not fail
  std::chrono::steady_clock::time_point m_started;
  nlohmann::json m_machine;  // machine(): read once
  // Said once run() starts: what changed in the study file since the study's stored trials
  // (notes, one line each), the results kept by an earlier tune that open() stored.
  std::vector<std::string> m_recovered;
  std::vector<search::FrozenTrial> m_kept_reruns;  // re-runs among them (recover_stale_trials)
  bool m_machine_read = false;
  LoadSpec m_load;     // the study's `load:`, unless TUNE_LOAD_CHECK=off (load_check.h)
  QuietWaits m_quiet;  // this run's waits for a quiet machine (follow_ups.h)
};

}  // namespace tune::tuner
