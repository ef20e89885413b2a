#include "tuner/run/runner.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <ostream>
#include <sstream>

#include "probes/topology.h"
#include "search/pruner.h"
#include "search/sampler.h"
#include "search/sampler_factory.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/summary.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/machine_load.h"
#include "tuner/launch/rendered_launch.h"
#include "tuner/measure/file_watch.h"
#include "tuner/measure/log_follower.h"
#include "tuner/measure/objective.h"
#include "tuner/measure/trial_outcome.h"
#include "tuner/measure/trial_record.h"
#include "tuner/measure/window_follower.h"
#include "tuner/run/baselines.h"
#include "tuner/run/kernel_params.h"
#include "tuner/run/first_guess_step.h"
#include "tuner/run/load_check.h"
#include "tuner/run/pending_result.h"
#include "tuner/run/rerun.h"
#include "tuner/run/runner_parts.h"
#include "tuner/run/staging.h"
#include "tuner/storage/storage_url.h"
#include "tuner/storage/study_cache.h"
#include "tuner/storage/trial_owner.h"
#include "tuner/study/rules.h"
#include "tuner/study/study_changes.h"

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

// Re-runs enqueued for load per trial: if the machine is busy again each time, the trial stays
// marked rather than the study re-running it for ever.
constexpr int k_max_load_reruns = 2;

}  // namespace

std::vector<std::string> live_objective_names(const StudySpec& spec) {
  // One objective with no name of its own (a regex over stdout or over a file): "value".
  if (spec.objectives.size() == 1 && objective_label(spec.objective).empty()) return {};
  return objective_names(spec);
}

StudyRunner::~StudyRunner() = default;

const HostEnv& StudyRunner::host() const { return m_options.host ? *m_options.host : live_host(); }

std::ostream& operator<<(std::ostream& out, const OpenError& error) { return out << error.message; }

std::expected<std::unique_ptr<StudyRunner>, OpenError> StudyRunner::open(
    StudySpec spec, const RunOptions& options) {
  const auto fail = [](std::string message, bool study_file_changed = false) {
    return std::unexpected(OpenError{std::move(message), study_file_changed});
  };
  auto runner = std::unique_ptr<StudyRunner>(new StudyRunner());
  runner->m_options = options;
  const auto url = storage_url_for(spec, options.storage_override);
  if (!url.contains("://")) {
    std::error_code ec;
    const auto parent = fs::path(url).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
  }
  auto storage = open_storage(url);
  if (!storage) return fail(storage.error());
  runner->m_storage = std::move(*storage);
  if (options.prune && !spec.pruner.empty()) {
    auto pruner = search::make_pruner(spec.pruner);
    if (!pruner) return fail(fmt::format("{}: {}", spec.file, pruner.error()));
    runner->m_pruner = std::move(*pruner);
  }
  // An existing study: the file must still describe what its trials ran (study_changes.h).
  auto existing = runner->m_storage->get_study(spec.name);
  if (!existing && existing.error().kind != StorageErrorKind::missing)
    return fail(existing.error().message);
  bool record_objectives = !existing;
  // Kernel parameters: the choices stored with the study, else checked here (kernel_params.h).
  nlohmann::json stored_kernels;
  if (existing) {
    auto attrs = runner->m_storage->get_study_user_attrs(existing->study_id);
    if (!attrs) return fail(attrs.error().message);
    if (attrs->contains(k_attr_study_kernel_choices))
      stored_kernels = (*attrs)[k_attr_study_kernel_choices];
  }
  auto kernels = resolve_kernel_params(spec, stored_kernels);
  if (!kernels) return fail(fmt::format("{}: {}", spec.file, kernels.error()));
  for (const auto& line : kernels->lines) runner->m_recovered.push_back("note: " + line);
  if (existing) {
    runner->m_cache = std::make_unique<StudyCache>(*runner->m_storage, *existing);
    if (auto r = runner->m_cache->sync(); !r) return fail(r.error().message);
    auto attrs = runner->m_storage->get_study_user_attrs(existing->study_id);
    if (!attrs) return fail(attrs.error().message);
    const auto stored = stored_study_of(existing->directions, runner->m_cache->trials(), *attrs);
    const auto changes = compare_with_stored(spec, stored);
    if (!changes.errors.empty()) {
      auto message = changes.errors.front();
      if (changes.errors.size() > 1)
        message += fmt::format(" (and {} more change(s) refused)", changes.errors.size() - 1);
      return fail(std::move(message), true);
    }
    for (const auto& note : changes.notes) runner->m_recovered.push_back("note: " + note);
    record_objectives = !stored.objectives;  // a study from before tune recorded them
  }
  // A new study is made with its file's path, its objectives and its baselines in one
  // transaction: a run cut off in between leaves no study, never one without its baselines.
  bool created = false;
  StudySeed seed;
  BaselineSeed baselines;
  if (!existing) {
    baselines = baseline_seed(spec);
    seed.waiting_trials = baselines.trials;
    seed.user_attrs[k_attr_study_file] = fs::absolute(spec.file).string();
    seed.user_attrs[k_attr_study_objectives] = objectives_identity(spec);
    if (!kernels->choices.empty()) seed.user_attrs[k_attr_study_kernel_choices] = kernels->choices;
  }
  auto study = runner->m_storage->get_or_create_study(spec.name, spec.directions, &created, seed);
  if (!study) return fail(study.error().message);
  if (!created && !existing && !kernels->choices.empty()) {
    // Another worker created it meanwhile: its checks' choices are the study's.
    auto attrs = runner->m_storage->get_study_user_attrs(study->study_id);
    if (!attrs) return fail(attrs.error().message);
    if (attrs->contains(k_attr_study_kernel_choices)) {
      for (auto& k : spec.kernel_params) k.resolved = false;
      apply_stored_kernel_choices(spec, (*attrs)[k_attr_study_kernel_choices]);
    }
  }
  auto sampler = search::make_sampler(spec.sampler, spec.space, spec.directions.size());
  if (!sampler) return fail(fmt::format("{}: {}", spec.file, sampler.error()));
  runner->m_sampler = std::move(*sampler);
  if (!runner->m_cache) runner->m_cache = std::make_unique<StudyCache>(*runner->m_storage, *study);
  if (created) {
    for (auto& line : baselines.lines) runner->m_recovered.push_back(std::move(line));
  } else if (record_objectives) {
    if (auto r = runner->m_storage->set_study_user_attr(study->study_id, k_attr_study_objectives,
                                                        objectives_identity(spec));
        !r)
      return fail(r.error().message);
  }
  runner->m_spec = std::move(spec);
  runner->m_load = effective_load_spec(runner->m_spec.load);
  runner->m_trainer = bundled_trainer_path();
  if (auto r = runner->recover_stale_trials(); !r) return fail(r.error());
  auto retried = retry_unfinished_baselines(*runner->m_storage, *runner->m_cache);
  if (!retried) return fail(retried.error());
  for (auto& line : *retried) runner->m_recovered.push_back(std::move(line));
  return runner;
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

Result<void> StudyRunner::run_one(std::ostream& out, int index, bool* stop) {
  wait_for_quiet(out);
  if (interrupted()) {  // while waiting for a quiet machine: no trial was taken
    *stop = true;
    return {};
  }
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
  FinalRecord record = final_record(*trial, *ran);  // measure/trial_record.h
  if (ran->launched) add_load_attrs(ran->load, record.user_attrs);
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
  // The load re-run first: a baseline measured under load leaves its guess to that re-run.
  if (ran->load.under_load) {
    if (auto r = enqueue_load_rerun(*trial); !r) return r;
  }
  if (ran->launched && m_spec.first_guess) {
    if (auto r = first_guess_step(out, *m_storage, *m_cache, m_spec, *trial, m_options.quiet); !r)
      return r;
  }
  return {};
}

Result<void> StudyRunner::enqueue_load_rerun(const FrozenTrial& trial) {
  if (m_cache->is_multi_objective() || m_load.wait_s - m_load_waited_s <= 0) return {};
  if (auto r = m_cache->sync(); !r) return std::unexpected(r.error().message);
  const int number = rerun_of(trial).value_or(trial.number);
  const FrozenTrial* original = nullptr;
  int reruns = 0, for_load = 0;
  for (const auto& t : m_cache->trials()) {
    if (t.number == number) original = &t;
    if (rerun_of(t) != number) continue;
    ++reruns;
    const auto cause = t.system_attrs.find(k_attr_rerun_cause);
    if (cause == t.system_attrs.end() || *cause != "load") continue;
    ++for_load;
    if (!t.is_finished()) return {};  // one is on its way already
  }
  // A re-run stands for a completed trial's value (believe_reruns); a failed or pruned one has
  // none to correct.
  if (original == nullptr || original->state != TrialState::complete || !original->value ||
      for_load >= k_max_load_reruns)
    return {};
  auto fixed = fixed_params_of(*original, m_spec.space);
  if (!fixed) return std::unexpected(fixed.error());
  auto t = m_storage->create_trial(m_cache->study().study_id, TrialState::waiting,
                                   {{k_attr_fixed_params, *fixed},
                                    {k_attr_rerun_of, number},
                                    {k_attr_rerun_round, reruns},
                                    {k_attr_rerun_cause, "load"}});
  if (!t) return std::unexpected(t.error().message);
  return to_result(m_cache->sync());
}

void StudyRunner::wait_for_quiet(std::ostream& out) {
  // No pass over the study for the common case; with the load not judged (load: off,
  // TUNE_LOAD_CHECK=off), a re-run an earlier run enqueued is not waited for either.
  if (!m_load.check || m_cache->waiting() == 0) return;
  // The trial the runner takes next: the oldest WAITING one (Storage::pop_waiting_trial).
  const FrozenTrial* next = nullptr;
  for (const auto& t : m_cache->trials()) {
    if (t.state != TrialState::waiting) continue;
    if (next == nullptr || t.trial_id < next->trial_id) next = &t;
  }
  if (next == nullptr || !next->system_attrs.contains(k_attr_rerun_cause)) return;
  const auto of = rerun_of(*next);
  if (!of) return;
  // The limit the trial was judged by, the CPUs it was judged on, and the load it was measured
  // under.
  double limit = m_load.max_external_cpus;
  std::vector<int> cpus;
  int measured = *of;
  for (const auto& t : m_cache->trials()) {
    if (t.number != *of && rerun_of(t) != *of) continue;
    const auto it = t.user_attrs.find(k_attr_measured_under_load);
    if (it == t.user_attrs.end() || !it->is_object()) continue;
    limit = it->value("limit", limit);
    cpus = probes::parse_cpu_list(it->value("cpus", std::string()));
    measured = std::max(measured, t.number);  // the latest
  }
  double budget = m_load.wait_s - m_load_waited_s;
  if (m_options.study_timeout_s)
    budget = std::min(budget, *m_options.study_timeout_s -
                                  std::chrono::duration<double>(Clock::now() - m_started).count());
  if (budget <= 0) return;
  constexpr double k_step_s = 0.5;
  // The wait is said once per run, not before each re-run.
  std::ostringstream unsaid;
  const auto wait = wait_until_quiet(live_load_sample(k_step_s, cpus), k_step_s, limit, budget,
                                     measured, m_wait_said ? unsaid : out,
                                     [] { return interrupted(); });
  m_load_waited_s += wait.waited_s;
  m_wait_said = m_wait_said || wait.said;
  if (!wait.said || interrupted()) return;
  if (wait.quiet) {
    out << fmt::format("tune: the machine is quiet after {}; trial {} is measured again\n",
                       format_duration(wait.waited_s), *of)
        << std::flush;
  } else {
    out << fmt::format(
               "tune: the machine stayed busy ({:.2g} CPUs outside the study) for {}, what `load: "
               "{{wait}}` allows; going on: trials measured under load stay marked\n",
               wait.last_cpus.value_or(0), format_duration(m_load_waited_s))
        << std::flush;
  }
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
  // The files read at the end, looked at while it runs: one deleted by the job is told from one
  // never written.
  TrialFileWatch files(m_spec.objectives, m_spec.constraints, p.request.workdir, p.values);
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
    files.look(since_launch());
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
  if (p.launch_kind && res.started) {
    // Whatever the kind may have left outside the swept tree (srun: its step) is stopped.
    const auto ended = p.launch_kind->end_trial(res);  // items() refers into it
    for (const auto& [key, value] : ended.items()) ran.end_attrs[key] = value;
  }
  if (res.started) follower.tick(/*prune=*/false);  // the entries written since the last tick
  if (window && res.started) window->finish(since_launch());
  if (m_hooks.on_end && res.started) {
    const auto attrs = m_hooks.on_end();  // items() refers into it: keep it alive
    for (const auto& [key, v] : attrs.items()) ran.end_attrs[key] = v;
  }
  if (res.started) {
    const auto verdict = ran.end_attrs.find(k_attr_probe_verdict);
    // Ranks outside the trial's tree (srun's, children of slurmstepd; another "host" of the
    // trial that is a namespace or container of this machine) would count as other work's load:
    // the CPU figures cannot tell the job from the rest, so nothing is judged.
    const bool beside = verdict != ran.end_attrs.end() && verdict->is_object() &&
                        verdict->contains(k_verdict_shares_machine_with);
    const bool tree_holds_ranks = (!p.launch_kind || p.launch_kind->ranks_in_tree()) && !beside;
    ran.load = judge_load(m_load, tree_holds_ranks ? res.cpu : std::nullopt,
                          verdict == ran.end_attrs.end() ? nlohmann::json() : *verdict,
                          std::max(1, static_cast<int>(allowed_cpus().size())));
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
                           window_value, &files);
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

}  // namespace tune::tuner
