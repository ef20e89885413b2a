// The study loop: ask the sampler, launch the trial, parse its objective, store everything.
//
// A StudyRunner owns the storage connection, the sampler and the pruner of one `tune` process.
// Several runners (processes) may share one database: each creates its own trials, sees the
// others' through the StudyCache, and leaves them alone unless their owner is gone. Trials left
// RUNNING by a tune that died are marked FAIL when a runner opens the study.
// Not thread-safe: one runner, one thread.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "search/pruner.h"
#include "search/sampler.h"
#include "tuner/launch/rendered_launch.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/program_identity.h"
#include "tuner/study/open_study.h"  // OpenedStudy, storage_url_for: used with the runner
#include "tuner/storage/storage.h"
#include "tuner/study/study_spec.h"
#include "tuner/storage/trial_owner.h"

namespace tune::tuner {

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
  // Before before_launch: the study's trials as stored now (finished ones carry what the probes
  // measured), so a prediction can learn from the trials before it.
  std::function<void(const std::vector<search::FrozenTrial>&)> study_history;
  // Before launch, with the trial's structured launch (its argv is exactly what will run): may
  // return system attrs to store and a constraint value (> 0 = skip).
  std::function<nlohmann::json(const search::FrozenTrial&, const RenderedLaunch& launch)>
      before_launch;
  // Started with the root pid; returns attrs to store when the trial ends.
  std::function<void(pid_t)> on_start;
  std::function<nlohmann::json()> on_end;
};

class StudyRunner {
 public:
  static Result<std::unique_ptr<StudyRunner>> open(StudySpec spec, const RunOptions& options);

  // Runs options.trials trials (or until interrupted / timed out), printing a line per trial.
  Result<RunTotals> run(std::ostream& out);

  void set_hooks(TrialHooks hooks) { m_hooks = std::move(hooks); }
  Storage& storage() { return *m_storage; }
  StudyCache& cache() { return *m_cache; }
  const StudySpec& spec() const { return m_spec; }

 private:
  StudyRunner() = default;
  Result<void> recover_stale_trials();
  Result<void> enqueue_baselines();
  Result<void> run_one(std::ostream& out, int index, bool* stop);

  // The steps of one trial, in order (run_one).
  struct Prepared;
  struct Ran;
  Result<search::FrozenTrial> claim_trial();
  Result<TemplateValues> sample_params(search::FrozenTrial& trial);
  Result<Prepared> prepare_launch(const search::FrozenTrial& trial, TemplateValues values);
  Result<Ran> execute(search::FrozenTrial& trial, const Prepared& prepared);
  Result<void> record_outcome(search::FrozenTrial& trial, const Ran& ran);
  void print_progress(std::ostream& out, int index, const search::FrozenTrial& trial,
                      const Ran& ran) const;
  // The trial was finished by another worker (failed as stale while this one was suspended):
  // says so, with the state and reason the database holds; nothing more is written into it.
  void print_lost(std::ostream& out, int index, const search::FrozenTrial& trial) const;
  const HostEnv& host() const { return m_options.host ? *m_options.host : live_host(); }

  StudySpec m_spec;
  RunOptions m_options;
  std::unique_ptr<Storage> m_storage;
  std::unique_ptr<StudyCache> m_cache;
  std::unique_ptr<search::Sampler> m_sampler;
  std::unique_ptr<search::Pruner> m_pruner;
  TrialHooks m_hooks;
  std::string m_trainer;
  ProgramIdentities m_programs;
  std::vector<std::string> m_failures_in_row;  // fail reasons since the last trial that did not fail  // which programs trials ran, cached by name and PATH
  std::chrono::steady_clock::time_point m_started;
};

}  // namespace tune::tuner
