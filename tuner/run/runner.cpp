#include "tuner/run/runner.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <ostream>

#include "probes/topology.h"
#include "search/pruner.h"
#include "search/sampler.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/rendered_launch.h"
#include "tuner/run/pending_result.h"
#include "tuner/run/ranking.h"
#include "tuner/run/rerun.h"
#include "tuner/run/staging.h"
#include "tuner/run/summary.h"
#include "tuner/run/trial_outcome.h"
#include "tuner/run/window_follower.h"
#include "tuner/storage/storage_url.h"
#include "tuner/storage/study_cache.h"
#include "tuner/storage/trial_owner.h"
#include "tuner/study/objective.h"

namespace tune::tuner {
namespace {

// "3 trials in a row failed (3 of them: exit code 127: ...); stopped: ...": the reason most of
// them gave, or the last one's when they all differ.
std::string gave_up_text(const std::vector<std::string>& reasons, const std::string& study_file) {
  std::map<std::string, int> counts;
  for (const auto& r : reasons) ++counts[r];
  const auto common =
      std::max_element(counts.begin(), counts.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string why = common->second > 1
                              ? fmt::format("{} of them: {}", common->second, common->first)
                              : fmt::format("the last: {}", reasons.back());
  return fmt::format(
      "{} trials in a row failed ({}); stopped: fix what the reason says, or raise max_failures "
      "in {} (0 never stops)",
      reasons.size(), why, study_file);
}

namespace fs = std::filesystem;
using search::FrozenTrial;
using search::TrialState;
using Clock = std::chrono::steady_clock;

// Bytes kept of each of a trial's stdout and stderr: the first and the last half (tune-keeper).
constexpr std::size_t k_trial_output_cap = 16u << 20;
// The watcher's period: heartbeats and the log followed for pruning; a window's progress.
constexpr double k_follow_tick_s = 0.5;
constexpr double k_window_tick_s = 0.05;

// A fresh output folder for a trial, never one that holds somebody's files: trials/<number>, or
// trials/<number>.<k> when that exists already (e.g. left by a study in another database).
// Nothing is ever deleted.
Result<fs::path> make_trial_dir(const fs::path& trials, int number) {
  std::error_code ec;
  fs::create_directories(trials, ec);
  if (ec)
    return std::unexpected(fmt::format("cannot create {}: {}", trials.string(), ec.message()));
  for (int k = 0; k < 1000; ++k) {
    const auto dir = trials / (k == 0 ? std::to_string(number) : fmt::format("{}.{}", number, k));
    if (fs::create_directory(dir, ec)) return fs::absolute(dir);
    if (ec) return std::unexpected(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  }
  return std::unexpected(
      fmt::format("{}: 1000 folders for trial {} exist already", trials.string(), number));
}

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

// Why a trial this worker ran is stopped and its result discarded: another worker finished it.
constexpr std::string_view k_lost_reason =
    "failed by another worker while this one was suspended; its result is discarded";
// ... or its row is gone. Only a creation that was not durable (synchronous=normal, then a crash
// of the database server or the machine) or a deletion does that: the worker cannot store the
// result under a number the database may hand out again, so it drops the trial, keeps its
// folder, says so, and goes on with the next trial; the study stays consistent.
constexpr std::string_view k_gone_reason =
    "its row is gone from the database (a crash took its creation, or it was deleted); its "
    "result is discarded, its folder kept";

// Follows a trial's log while it runs: stores new intermediate values and asks the pruner.
class LogFollower {
 public:
  LogFollower(const ObjectiveSpec& objective, std::string log_path, Storage& storage,
              StudyCache& cache, search::Pruner* pruner, FrozenTrial& trial, ErrorSink& errors)
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
  std::string tick(bool prune = true) {
    const bool write = prune || !m_errors.failed();
    if (m_errors.lost()) return std::string(k_lost_reason);
    const auto now = Clock::now();
    if (write && prune && now - m_last_heartbeat >= heartbeat_interval()) {
      m_last_heartbeat = now;
      m_errors.note(m_storage.record_heartbeat(m_trial.trial_id));
    }
    if (m_errors.lost()) return std::string(k_lost_reason);
    if (m_objective.wall_time || m_objective.file || m_objective.window)
      return "";  // no log to follow for pruning: the value is known at the end, or the window's
    std::error_code ec;
    const auto mtime = fs::last_write_time(m_log_path, ec);
    if (ec || mtime == m_last_mtime) return "";
    m_last_mtime = mtime;
    auto entries = read_log(m_log_path);  // written atomically by the trainer (rename)
    if (!entries) return "";
    bool added = false;
    for (const auto& [step, value] : intermediate_points(m_objective, *entries)) {
      if (m_trial.intermediate_values.contains(step)) continue;
      m_trial.intermediate_values[step] = value;
      if (write)
        m_errors.note(m_storage.set_trial_intermediate_value(m_trial.trial_id, step, value));
      added = true;
    }
    if (!added || !prune || m_pruner == nullptr || m_errors.failed()) return "";
    if (auto r = m_cache.sync(); !r) {
      m_errors.note(r);
      return "";
    }
    if (m_pruner->prune(m_cache, m_trial)) {
      return fmt::format("pruned at step {}", m_trial.intermediate_values.rbegin()->first);
    }
    return "";
  }

 private:
  const ObjectiveSpec& m_objective;
  std::string m_log_path;
  Storage& m_storage;
  StudyCache& m_cache;
  search::Pruner* m_pruner;
  FrozenTrial& m_trial;
  ErrorSink& m_errors;
  fs::file_time_type m_last_mtime{};
  Clock::time_point m_last_heartbeat = Clock::now();  // the start wrote the first

  // A sixteenth of the grace period (7.5 s for the default 120 s), 0.5 s at least: a live
  // trial's heartbeat is never near the age at which another worker fails it as stale.
  Clock::duration heartbeat_interval() const {
    const double s = std::clamp(m_storage.grace_period_s() / 16.0, 0.5, 10.0);
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
};

}  // namespace

std::vector<std::string> live_objective_names(const StudySpec& spec) {
  // One objective with no name of its own (a regex over stdout or over a file): "value".
  if (spec.objectives.size() == 1 && objective_label(spec.objective).empty()) return {};
  return objective_names(spec);
}

StudyRunner::~StudyRunner() = default;

const HostEnv& StudyRunner::host() const { return m_options.host ? *m_options.host : live_host(); }

Result<std::unique_ptr<StudyRunner>> StudyRunner::open(StudySpec spec, const RunOptions& options) {
  auto runner = std::unique_ptr<StudyRunner>(new StudyRunner());
  runner->m_options = options;
  const auto url = storage_url_for(spec, options.storage_override);
  if (!url.contains("://")) {
    std::error_code ec;
    const auto parent = fs::path(url).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
  }
  auto storage = open_storage(url);
  if (!storage) return std::unexpected(storage.error());
  runner->m_storage = std::move(*storage);
  auto sampler = search::make_sampler(spec.sampler, spec.space, spec.directions.size());
  if (!sampler) return std::unexpected(fmt::format("{}: {}", spec.file, sampler.error()));
  runner->m_sampler = std::move(*sampler);
  if (options.prune && !spec.pruner.empty()) {
    auto pruner = search::make_pruner(spec.pruner);
    if (!pruner) return std::unexpected(fmt::format("{}: {}", spec.file, pruner.error()));
    runner->m_pruner = std::move(*pruner);
  }
  bool created = false;
  auto study = runner->m_storage->get_or_create_study(spec.name, spec.directions, &created);
  if (!study) return std::unexpected(study.error().message);
  runner->m_cache = std::make_unique<StudyCache>(*runner->m_storage, *study);
  runner->m_spec = std::move(spec);
  runner->m_trainer = bundled_trainer_path();
  if (created) {
    runner->m_storage->set_study_user_attr(study->study_id, k_attr_study_file,
                                           fs::absolute(runner->m_spec.file).string());
    if (auto r = runner->enqueue_baselines(); !r) return std::unexpected(r.error());
  }
  if (auto r = runner->recover_stale_trials(); !r) return std::unexpected(r.error());
  return runner;
}

Result<void> StudyRunner::enqueue_baselines() {
  for (const auto& fixed : m_spec.enqueue) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : fixed) params[name] = search::param_value_to_json(value);
    // Optuna's enqueue_trial: a WAITING trial whose fixed_params the next ask() uses.
    auto t = m_storage->create_trial(m_cache->study().study_id, TrialState::waiting,
                                     {{k_attr_fixed_params, params}});
    if (!t) return std::unexpected(t.error().message);
  }
  return {};
}

Result<void> StudyRunner::recover_stale_trials() {
  if (auto r = m_cache->sync(); !r) return to_result(r);
  for (const auto& t : m_cache->trials()) {
    if (t.state != TrialState::running) continue;
    const auto owner = t.system_attrs.value(k_attr_owner, nlohmann::json());
    auto life = m_storage->trial_liveness(t.trial_id);
    if (!owner_is_dead(owner, host(), life ? std::optional(*life) : std::nullopt,
                       m_storage->grace_period_s())) {
      continue;
    }
    std::string problem;
    auto kept = store_kept_result(t, problem);
    if (!kept) {
      // another worker stored it first
      if (kept.error().kind == StorageErrorKind::finished) continue;
      return std::unexpected(kept.error().message);
    }
    if (*kept) continue;
    if (auto r = m_storage->set_trial_system_attr(
            t.trial_id, k_attr_fail_reason,
            problem.empty() ? std::string("the tune process running it died; marked FAIL on resume")
                            : fmt::format("the tune process running it died and its kept result "
                                          "cannot be read ({}); marked FAIL on resume",
                                          problem));
        !r) {
      // another worker recovered it first
      if (r.error().kind == StorageErrorKind::finished) continue;
      return to_result(r);
    }
    if (auto r = m_storage->set_trial_state_values(t.trial_id, TrialState::fail, std::nullopt);
        !r) {
      return std::unexpected(r.error().message);
    }
  }
  if (auto r = m_cache->sync(); !r) return to_result(r);
  // A kept re-run's value now counts towards its original's believed value (rerun.h), as it
  // would have had it been stored when it ended. After the loop: this syncs the cache.
  for (const auto& rerun : m_kept_reruns) {
    if (auto r = believe_reruns(*m_storage, *m_cache, rerun); !r) return r;
  }
  m_kept_reruns.clear();
  return {};
}

StorageResult<bool> StudyRunner::store_kept_result(const FrozenTrial& trial, std::string& problem) {
  const auto dir = trial.user_attrs.find(k_attr_trial_dir);
  if (dir == trial.user_attrs.end() || !dir->is_string()) return false;
  const auto path = fs::path(dir->get<std::string>()) / k_pending_result_file;
  auto pending = read_pending_result(path, trial);
  if (!pending) {
    problem = pending.error();
    return false;
  }
  if (!*pending) return false;
  FinalRecord& record = **pending;
  record.system_attrs[k_attr_result_kept] = path.string();
  auto set = store_final_record(*m_storage, trial.trial_id, record, /*with_intermediate=*/true);
  if (!set) return std::unexpected(set.error());
  if (!*set) return std::unexpected(finished_trial_error(trial.trial_id, TrialState::fail));
  // Stored: kept beside it under another name, so no later resume reads it as pending.
  std::error_code ec;
  fs::rename(path, fs::path(path).replace_extension(".stored.json"), ec);
  if (record.rerun) m_kept_reruns.push_back(trial);
  std::string values;
  for (double v : record.values) values += fmt::format(" {}", v);
  m_recovered.push_back(fmt::format(
      "trial {} {}{}: stored from {}, where the tune that ran it kept it while the database "
      "could not take it",
      trial.number, search::to_string(record.state), values, path.string()));
  return true;
}

Result<RunTotals> StudyRunner::run(std::ostream& out) {
  RunTotals totals;
  for (const auto& line : m_recovered) out << line << '\n';
  m_recovered.clear();
  m_started = Clock::now();
  for (int i = 0; i < m_options.trials; ++i) {
    if (interrupted()) break;
    if (m_options.study_timeout_s &&
        std::chrono::duration<double>(Clock::now() - m_started).count() >=
            *m_options.study_timeout_s) {
      out << fmt::format("study --time-limit of {} reached; no new trials\n",
                         format_duration(*m_options.study_timeout_s));
      break;
    }
    if (auto r = m_cache->sync(); !r) return std::unexpected(r.error().message);
    if (m_cache->waiting() == 0 && m_sampler->exhausted(*m_cache)) {
      out << "the sampler has nothing left to try (every grid point ran); stopping\n";
      break;
    }
    bool stop = false;
    if (auto r = run_one(out, i, &stop); !r) return std::unexpected(r.error());
    ++totals.ran;
    if (stop) break;
    if (m_spec.max_failures > 0 &&
        static_cast<int>(m_failures_in_row.size()) >= m_spec.max_failures) {
      totals.gave_up = gave_up_text(m_failures_in_row, m_spec.file);
      break;
    }
  }
  totals.interrupted = interrupted();
  if (auto r = m_cache->sync(); !r) return std::unexpected(r.error().message);
  return totals;
}

// What a trial runs with, once sampled.
struct StudyRunner::Prepared {
  LaunchRequest request;
  std::string log_path;
  TemplateValues values;    // the trial's placeholders, for objectives read from files
  std::string stage_error;  // `files:` could not be staged: the trial FAILs with this, unrun
  bool study_deadline_bites = false;      // the study's --time-limit set the trial's limit
  std::optional<double> skip_constraint;  // the probes predict oversubscription: not run
  // The probes' constraint of a trial that runs (<= 0). Stored with it like a skipped trial's:
  // constrained TPE ranks trials without constraint values after every trial with them, so
  // without it the skipped (infeasible) trials would rank above the feasible ones that ran.
  std::optional<double> run_constraint;
  std::string trial_dir;    // the trial's folder (its result is kept there when unstorable)
  std::string slurm_step;   // launch.slurm: the step's name, to cancel it by
  std::string setup_error;  // the trial cannot run: its folder could not be made (why, where)
};

// How a trial ended.
struct StudyRunner::Ran {
  bool launched = false;  // false: the probes ruled it out
  // The trial is no longer this worker's (another worker finished it, or its row is gone), in
  // the storage's words: nothing of this run is stored.
  std::optional<StorageError> lost;
  LaunchResult launch;
  TrialOutcome outcome;
  // A storage write made while the trial ran failed (the database unreachable past retry_for):
  // the trial's result is still recorded (or kept), then tune stops with this.
  std::string storage_error;
  nlohmann::json end_attrs = nlohmann::json::object();  // system attrs of the trial's end
  nlohmann::json window_attrs;       // objective window: the user attr k_attr_window
  bool window_intermediate = false;  // a pruned loser's estimate added to its intermediate values
};

Result<void> StudyRunner::run_one(std::ostream& out, int index, bool* stop) {
  auto trial = claim_trial();
  if (!trial) {
    if (trial.error().kind != StorageErrorKind::missing)
      return std::unexpected(trial.error().message);
    // Its creation was acknowledged, then lost before the trial was read back: not started.
    out << fmt::format("[{}/{}] {}: {}\n", index + 1, m_options.trials, trial.error().message,
                       k_gone_reason)
        << std::flush;
    return {};
  }
  // Another worker may finish the trial while this one is suspended (its heartbeat aged past
  // the grace period), or its row may be gone: the storage refuses every write then, and this
  // worker goes on with the next trial, having said so.
  const auto lost = [&](const StorageError& error) {
    if (!error.lost_trial()) return false;
    if (!m_options.quiet || error.kind == StorageErrorKind::missing)
      print_lost(out, index, *trial, error);
    return true;
  };
  // A step failed: the trial was lost (said; the run goes on), or the error ends the run.
  const auto step_failed = [&](const StorageError& error) -> Result<void> {
    if (lost(error)) return {};
    return std::unexpected(error.message);
  };
  auto values = sample_params(*trial);
  if (!values) return step_failed(values.error());
  auto prepared = prepare_launch(*trial, std::move(*values));
  if (!prepared) return step_failed(prepared.error());
  auto ran = execute(*trial, *prepared);
  if (!ran) return step_failed(ran.error());
  *stop = ran->outcome.stop_study;
  if (ran->lost) return step_failed(*ran->lost);
  FinalRecord record = final_record(*trial, *ran);
  if (auto r = record_outcome(*trial, record); !r) {
    if (lost(r.error())) return {};
    // The database cannot take the trial's end: its result, as measured, waits in the trial's
    // folder for the next tune on this study (recover_stale_trials), and this one stops.
    if (!record.stored && !prepared->trial_dir.empty()) {
      const auto path = fs::path(prepared->trial_dir) / k_pending_result_file;
      if (auto kept = keep_pending_result(path, *trial, record); !kept) {
        return std::unexpected(fmt::format("{}; and trial {}'s result could not be kept: {}",
                                           r.error().message, trial->number, kept.error()));
      }
      return std::unexpected(fmt::format(
          "{}; trial {} ended {} and its result is kept in {}: the next tune on this study "
          "stores it",
          r.error().message, trial->number, search::to_string(record.state), path.string()));
    }
    return to_result(r);
  }
  if (!ran->storage_error.empty()) {
    return std::unexpected(fmt::format("{} (trial {} was stored once the database answered)",
                                       ran->storage_error, trial->number));
  }
  // A failure that is no timeout (nor an interrupt) counts towards max_failures; any other end
  // clears the count.
  if (ran->launched && ran->outcome.state == TrialState::fail && !ran->outcome.stop_study &&
      ran->launch.stopped != StopReason::timeout) {
    m_failures_in_row.push_back(ran->outcome.reason);
  } else {
    m_failures_in_row.clear();
  }
  // incumbent_repeats: a new best is re-measured (the next trials) before it is believed.
  auto reruns = enqueue_incumbent_reruns(*m_storage, *m_cache, m_best, m_spec.space,
                                         m_spec.incumbent_repeats);
  if (!reruns) return std::unexpected(reruns.error());
  if (!m_options.quiet) print_progress(out, index, *trial, *ran);
  return {};
}

// The machine, read through hwloc once per runner (tens of milliseconds): null when hwloc cannot.
const nlohmann::json& StudyRunner::machine() {
  if (!m_machine_read) {
    m_machine_read = true;
    if (auto topo = probes::read_cpu_topology()) {
      m_machine = {{"host", host().host_name()},
                   {"packages", topo->packages.size()},
                   {"numa_nodes", topo->numa_nodes.size()},
                   {"cores", topo->core_count()},
                   {"pus", topo->pu_count()}};
    }
  }
  return m_machine;
}

// Takes the oldest WAITING trial, or creates a RUNNING one, stamped with this process as owner
// (and the machine) in the transaction that creates it, or in one write after the pop.
StorageResult<FrozenTrial> StudyRunner::claim_trial() {
  const auto study_id = m_cache->study().study_id;
  nlohmann::json attrs = {{k_attr_owner, owner_identity(host())}};
  if (const auto& machine = this->machine(); !machine.is_null()) attrs[k_attr_machine] = machine;
  NewTrial nt;
  auto popped = m_storage->pop_waiting_trial(study_id);
  if (!popped) return std::unexpected(popped.error());
  if (*popped) {
    nt = **popped;
    TrialUpdate stamp;
    stamp.system_attrs = attrs;
    if (auto r = m_storage->update_trial(nt.trial_id, stamp); !r) {
      return std::unexpected(r.error());
    }
  } else {
    auto created = m_storage->create_trial(study_id, TrialState::running, attrs);
    if (!created) return std::unexpected(created.error());
    nt = *created;
  }
  if (auto r = m_cache->sync(); !r) return std::unexpected(r.error());
  if (const FrozenTrial* t = m_cache->find(nt.trial_id)) return *t;
  return std::unexpected(missing_trial_error(nt.trial_id));
}

// Enqueued values first; the sampler fills in the rest. Every value is stored before launch.
StorageResult<TemplateValues> StudyRunner::sample_params(FrozenTrial& trial) {
  if (auto it = trial.system_attrs.find(k_attr_fixed_params); it != trial.system_attrs.end()) {
    for (const auto& [name, dist] : m_spec.space) {
      if (!it->contains(name)) continue;
      auto internal = search::to_internal(dist, search::param_value_from_json((*it)[name]));
      if (!internal) {
        return std::unexpected(
            fmt::format("trial {}: enqueued {}: {}", trial.number, name, internal.error()));
      }
      trial.params[name] = *internal;
      trial.distributions[name] = dist;
    }
  }
  const auto attrs_before = trial.system_attrs;
  m_sampler->before_trial(*m_cache, trial);
  // What the sampler noted and every value, in one transaction (which other workers see as
  // this trial's change: where it runs).
  TrialUpdate update;
  for (const auto& [key, value] : trial.system_attrs.items()) {
    if (!attrs_before.contains(key) || attrs_before[key] != value) update.system_attrs[key] = value;
  }
  const auto params = search::suggest_all(*m_sampler, *m_cache, trial, m_spec.space);
  TemplateValues values;
  for (const auto& [name, dist] : m_spec.space) {
    const double internal = params.at(name);
    trial.params[name] = internal;
    trial.distributions[name] = dist;
    update.params.push_back({name, internal, dist});
    values[name] = search::to_external(dist, internal);
  }
  if (auto r = m_storage->update_trial(trial.trial_id, update); !r) {
    return std::unexpected(r.error());
  }
  return values;
}

// The trial's folder, command, environment and limits; what it runs is stored before it runs.
StorageResult<StudyRunner::Prepared> StudyRunner::prepare_launch(const FrozenTrial& trial,
                                                                 TemplateValues values) {
  auto made_dir = make_trial_dir(fs::path(m_spec.output) / "trials", trial.number);
  if (!made_dir) {
    // A full or read-only output folder fails this trial with its reason (and max_failures
    // stops the study if every trial meets it), never the whole run with a trial left RUNNING.
    Prepared failed;
    failed.setup_error = made_dir.error();
    return failed;
  }
  const fs::path trial_dir = *made_dir;
  values = trial_template_values(m_spec, values, trial_dir.string(), trial.number, m_trainer);
  auto rendered = render_launch(m_spec, values, running_as_root());
  if (!rendered) return std::unexpected(rendered.error());
  if (m_hooks.tag_launch) m_hooks.tag_launch(trial, *rendered);
  Prepared p;
  p.trial_dir = trial_dir.string();
  LaunchRequest& req = p.request;
  req = rendered->request();
  if (rendered->srun) p.slurm_step = rendered->srun->step_name;
  // The working directory: the trial's folder unless `workdir:` says otherwise; stdout, stderr
  // and the log stay in the trial's folder either way.
  auto workdir = expand_template(m_spec.workdir, values);
  if (!workdir)
    return std::unexpected(fmt::format("{}: workdir: {}", m_spec.file, workdir.error()));
  fs::path wd = *workdir && !(*workdir)->empty() ? fs::path(**workdir) : trial_dir;
  if (wd.is_relative()) wd = fs::path(m_spec.dir) / wd;
  wd = wd.lexically_normal();
  req.workdir = wd.string();
  p.values = values;
  nlohmann::json staged = nlohmann::json::array();
  std::error_code wd_ec;
  fs::create_directories(wd, wd_ec);
  if (wd_ec) {
    p.stage_error =
        fmt::format("cannot create the working directory {}: {}", wd.string(), wd_ec.message());
  } else if (auto files = stage_files(m_spec.files, req.workdir, values); !files) {
    p.stage_error = files.error();
  } else {
    staged = std::move(*files);
  }
  req.stdout_path = (trial_dir / "stdout").string();
  req.stderr_path = (trial_dir / "stderr").string();
  req.timeout_s = m_spec.timeout_s;
  if (m_options.study_timeout_s) {
    const double left = *m_options.study_timeout_s -
                        std::chrono::duration<double>(Clock::now() - m_started).count();
    if (!req.timeout_s || left < *req.timeout_s) {
      req.timeout_s = std::max(left, 0.001);
      p.study_deadline_bites = true;
    }
  }
  // A window reads the job's progress lines within a tick of their writing: the tick is the
  // resolution of the times it gives them (and of its stop). Heartbeats stay at 0.5 s.
  req.tick_s = m_spec.objective.window ? k_window_tick_s : k_follow_tick_s;
  req.output_cap_bytes = k_trial_output_cap;
  auto log = expand_template(m_spec.objective.log, values);
  p.log_path = log && *log ? **log : (trial_dir / "log").string();

  nlohmann::json programs = nlohmann::json::array();
  for (const auto& p : m_programs.identify(*rendered, trial_environment(req), req.workdir))
    programs.push_back(to_json(p));
  auto env_shown = req.env_set;  // a secret (PGPASSWORD) is stored masked
  for (auto& [name, value] : env_shown)
    if (is_secret_env_var(name)) value = k_redacted;
  const std::pair<const char*, nlohmann::json> shown[] = {{k_attr_launched_argv, req.argv},
                                                          {k_attr_env, env_shown},
                                                          {k_attr_env_unset, req.env_unset},
                                                          {k_attr_programs, programs},
                                                          {k_attr_trial_dir, trial_dir.string()},
                                                          {k_attr_workdir, req.workdir},
                                                          {k_attr_files, staged}};
  // What it runs and what the probes predict, stored in one transaction before it runs.
  TrialUpdate update;
  for (const auto& [key, value] : shown) update.user_attrs[key] = value;
  if (m_hooks.study_history) m_hooks.study_history(*m_cache);
  if (m_hooks.before_launch) {
    const auto attrs = m_hooks.before_launch(trial, *rendered);
    for (const auto& [key, value] : attrs.items()) {
      if (key == k_hook_constraint) {
        if (value.is_number() && value.get<double>() > 0) p.skip_constraint = value.get<double>();
        if (value.is_number() && value.get<double>() <= 0) p.run_constraint = value.get<double>();
        continue;
      }
      update.system_attrs[key] = value;
    }
  }
  if (auto r = m_storage->update_trial(trial.trial_id, update); !r) {
    return std::unexpected(r.error());
  }
  return p;
}

// Runs the trial (unless the probes ruled it out), following its log, and classifies the end.
StorageResult<StudyRunner::Ran> StudyRunner::execute(FrozenTrial& trial, const Prepared& p) {
  Ran ran;
  if (p.skip_constraint) {
    ran.outcome = skipped_outcome(*p.skip_constraint);
    return ran;
  }
  if (!p.stage_error.empty()) {  // its inputs are not there: running it would measure nothing
    ran.outcome.state = TrialState::fail;
    ran.outcome.reason = printable(p.stage_error, 1000);
    return ran;
  }
  ran.launched = true;
  if (!p.setup_error.empty()) {
    ran.launch.error = p.setup_error;
    ran.outcome = classify_outcome(ran.launch, {}, [] { return Result<ObjectiveReading>(); });
    return ran;
  }
  ErrorSink errors;
  LogFollower follower(m_spec.objective, p.log_path, *m_storage, *m_cache, m_pruner.get(), trial,
                       errors);
  // objective `window:`: the rate measured while the trial runs, which may stop it.
  std::optional<WindowFollower> window;
  if (const auto& ws = m_spec.objective.window) {
    std::string path = ws->stream == "stderr" ? p.request.stderr_path : p.request.stdout_path;
    if (ws->source != WindowSpec::Source::stream) {
      auto expanded = expand_template(ws->path, p.values);
      if (!expanded || !*expanded)
        return std::unexpected(
            fmt::format("{}: objective.window: {}", m_spec.file,
                        expanded ? "its path names a null value" : expanded.error()));
      fs::path at(**expanded);
      if (at.is_relative()) at = fs::path(p.request.workdir) / at;
      path = at.lexically_normal().string();
    }
    // Losers are stopped only among the sampler's own trials: a baseline or a re-run is
    // measured whole, and tune confirm's repeats run without pruning.
    std::optional<WindowBest> best;
    if (m_options.prune && !trial.system_attrs.contains(k_attr_fixed_params) && !is_rerun(trial))
      best = window_best(*m_cache, m_best.best(*m_cache));
    window.emplace(*ws, path, best, k_trial_output_cap / 2);
  }
  const auto launched = Clock::now();
  const auto since_launch = [&] {
    return std::chrono::duration<double>(Clock::now() - launched).count();
  };
  double followed_at = -k_follow_tick_s;
  // The watcher runs on the launcher's own thread while this one waits in run_process(), so
  // the storage, the cache and `trial` are used by one thread at a time (storage.h): its
  // heartbeats, intermediate values and the pruner's reads may wait on the database without
  // delaying the trial's timeout or end (launcher.h).
  bool started_hook = false;
  ran.launch = run_process(p.request, [&](pid_t pid) {
    if (!started_hook) {
      started_hook = true;
      if (m_hooks.on_start) m_hooks.on_start(pid);
      errors.note(m_storage->record_heartbeat(trial.trial_id));
      return std::string();
    }
    if (window) {
      const double now = since_launch();
      if (auto why = window->tick(now); !why.empty()) return why;
      if (now - followed_at < k_follow_tick_s) return std::string();
      followed_at = now;
    }
    return follower.tick();
  });
  const LaunchResult& res = ran.launch;
  if (errors.lost()) {  // nothing more goes into a trial another worker finished
    ran.lost = errors.error();
    return ran;
  }
  // What the trial's end adds goes with its final record, kept with it when the database
  // cannot take it.
  if (!p.slurm_step.empty() && res.started)
    ran.end_attrs[k_attr_slurm_step] = end_slurm_step(p.slurm_step, res);
  if (res.started) follower.tick(/*prune=*/false);  // the entries written since the last tick
  if (window && res.started) window->finish(since_launch());
  if (m_hooks.on_end && res.started) {
    const auto attrs = m_hooks.on_end();  // items() refers into it: keep it alive
    for (const auto& [key, v] : attrs.items()) ran.end_attrs[key] = v;
  }
  OutcomeContext ctx;
  ctx.study_deadline_bites = p.study_deadline_bites;
  ctx.interrupt_signal = interrupt_signal();
  if (!trial.intermediate_values.empty()) {
    ctx.last_intermediate = trial.intermediate_values.rbegin()->second;
  }
  ctx.stderr_path = p.request.stderr_path;
  if (window) ctx.window = window->decision();
  ran.outcome = classify_outcome(res, ctx, [&]() -> Result<ObjectiveReading> {
    std::optional<double> window_value;
    if (window) {
      auto v = window->ended_value();  // the decision's value, or the estimate of what was seen
      if (!v) return std::unexpected(v.error());
      window_value = *v;
    }
    return read_objectives(m_spec.objectives, m_spec.constraints, p.log_path, p.request.stdout_path,
                           p.request.stderr_path, res.wall_s, p.request.workdir, p.values,
                           window_value);
  });
  if (window && res.started) {
    ran.window_attrs = window->attrs();
    // A loser stopped by its window is PRUNED with its estimate as its last intermediate value,
    // as Optuna stores a pruned trial (its samplers read that pair).
    if (ran.outcome.state == TrialState::pruned && ran.outcome.value) {
      trial.intermediate_values[std::max<std::int64_t>(window->points(), 1)] = *ran.outcome.value;
      ran.window_intermediate = true;
    }
  }
  if (p.run_constraint) ran.outcome.constraints.push_back(*p.run_constraint);
  if (errors.lost()) {
    ran.lost = errors.error();
    return ran;
  }
  if (auto r = errors.result(); !r) ran.storage_error = r.error();
  return ran;
}

// What the launch showed and how the trial ended, as it is stored.
FinalRecord StudyRunner::final_record(const FrozenTrial& trial, const Ran& ran) const {
  const LaunchResult& res = ran.launch;
  const TrialOutcome& outcome = ran.outcome;
  FinalRecord record;
  auto& user = record.user_attrs;
  auto& system = record.system_attrs;
  if (ran.launched) user[k_attr_wall_time] = res.wall_s;
  if (res.started) {
    user[k_attr_exit_code] = res.signal ? nlohmann::json() : nlohmann::json(res.exit_code);
    if (res.signal) user[k_attr_signal] = res.signal;
    system[k_attr_containment] = res.containment;
    // The trial wrote more than the cap: its files hold the head and tail only.
    if (!res.output_cut.empty()) system[k_attr_output_cut] = res.output_cut;
  }
  if (!outcome.constraints.empty()) system[k_attr_constraints] = outcome.constraints;
  if (!outcome.reason.empty()) system[k_attr_fail_reason] = outcome.reason;
  for (const auto& [key, value] : ran.end_attrs.items()) system[key] = value;
  if (!ran.window_attrs.is_null()) user[k_attr_window] = ran.window_attrs;
  // A completed re-run is stored so that Optuna never ranks a lucky repeat (rerun.h).
  const auto stored = stored_outcome(trial, outcome.state, outcome.value);
  if (stored.rerun_value) {
    user[k_attr_rerun_value] = *stored.rerun_value;
    record.rerun = true;
  }
  record.state = stored.state;
  record.values = outcome.values.empty() ? TrialValues(stored.value).values : outcome.values;
  record.intermediate_values = trial.intermediate_values;
  // Writes failed during the run, so some of these may be missing: all are stored with the end.
  record.with_intermediate = !ran.storage_error.empty() || ran.window_intermediate;
  return record;
}

// The final state in one transaction; the sampler hears of it. record.stored says whether the
// trial's end reached the database (what may fail after it is only reading back).
StorageResult<void> StudyRunner::record_outcome(FrozenTrial& trial, FinalRecord& record) {
  auto set = store_final_record(*m_storage, trial.trial_id, record, record.with_intermediate);
  if (!set) return std::unexpected(set.error());
  record.stored = true;
  if (!*set) {  // finished by another worker between the attributes and now
    auto now = m_storage->get_trial(trial.trial_id);
    return std::unexpected(
        finished_trial_error(trial.trial_id, now ? now->state : TrialState::fail));
  }
  if (auto r = m_cache->sync(); !r) return std::unexpected(r.error());
  if (record.rerun) {
    if (auto r = believe_reruns(*m_storage, *m_cache, trial); !r) return r;
  }
  if (const FrozenTrial* t = m_cache->find(trial.trial_id)) {
    m_sampler->after_trial(*m_cache, *t);
    trial = *t;
  }
  return {};
}

void StudyRunner::print_lost(std::ostream& out, int index, const FrozenTrial& trial,
                             const StorageError& error) const {
  if (error.kind == StorageErrorKind::missing) {
    out << fmt::format("[{}/{}] trial {} GONE  # {}\n", index + 1, m_options.trials, trial.number,
                       k_gone_reason)
        << std::flush;
    return;
  }
  // The one story the database tells (tune trials, the report): its state and reason.
  auto stored = m_storage->get_trial(trial.trial_id);
  const TrialState state = stored ? stored->state : TrialState::fail;
  std::string theirs;
  if (stored) {
    if (auto it = stored->system_attrs.find(k_attr_fail_reason);
        it != stored->system_attrs.end() && it->is_string()) {
      theirs = it->get<std::string>();
    }
  }
  const bool terminal = &out == &std::cout && isatty(STDOUT_FILENO);
  if (terminal) out << "\r\033[K";
  out << fmt::format("[{}/{}] trial {} {}  # {}{}\n", index + 1, m_options.trials, trial.number,
                     search::to_string(state), k_lost_reason,
                     theirs.empty() ? "" : fmt::format(" (its reason there: {})", theirs))
      << std::flush;
}

void StudyRunner::print_progress(std::ostream& out, int index, const FrozenTrial& trial,
                                 const Ran& ran) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - m_started).count();
  const int done = index + 1;
  const double eta = elapsed / done * (m_options.trials - done);
  TrialProgress progress;
  progress.done = done;
  progress.total = m_options.trials;
  progress.state = ran.outcome.state;
  if (ran.outcome.values.empty()) progress.value = ran.outcome.value;
  progress.values = ran.outcome.values;
  if (ran.launch.started) progress.wall_s = ran.launch.wall_s;
  progress.reason = ran.outcome.reason;
  progress.half_width = finite_number_at(ran.window_attrs, "half_width");
  if (done < m_options.trials) progress.eta_s = eta;
  progress.objectives = live_objective_names(m_spec);
  if (!m_cache->is_multi_objective()) progress.best = m_best.best(*m_cache);
  const bool terminal = &out == &std::cout && isatty(STDOUT_FILENO);
  if (terminal) out << "\r\033[K";  // clear the progress bar drawn after the last line
  out << progress_line(trial, *m_cache, progress) << '\n';
  if (terminal && done < m_options.trials) {
    constexpr int k_width = 30;
    const int filled = k_width * done / m_options.trials;
    out << '[' << std::string(filled, '#') << std::string(k_width - filled, '.') << "] "
        << fmt::format("{}/{}  eta {}", done, m_options.trials, format_duration(eta));
  }
  out << std::flush;
}

}  // namespace tune::tuner
