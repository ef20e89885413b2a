// StudyRunner's steps that run one trial and store its end (runner.h): the launch followed
// while it runs (its log, its window, its files), what it left read, and its record stored.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "search/pruner.h"
#include "search/sampler.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/window_best.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/machine_load.h"
#include "tuner/measure/file_watch.h"
#include "tuner/measure/objective.h"
#include "tuner/measure/trial_outcome.h"
#include "tuner/measure/trial_record.h"
#include "tuner/measure/window_follower.h"
#include "tuner/run/follow_ups.h"
#include "tuner/run/load_check.h"
#include "tuner/run/log_follower.h"
#include "tuner/run/pending_result.h"
#include "tuner/run/runner.h"
#include "tuner/run/runner_parts.h"

namespace tune::tuner {

namespace fs = std::filesystem;
using search::FrozenTrial;
using search::TrialState;

namespace {

// Where a window objective reads its progress: the trial's stdout or stderr file, or its `path`
// (expanded with the trial's values, relative to its workdir).
Result<std::string> window_path(const StudySpec& spec, const WindowSpec& ws,
                                const LaunchRequest& request, const TemplateValues& values) {
  if (ws.source == WindowSpec::Source::stream)
    return ws.stream == "stderr" ? request.stderr_path : request.stdout_path;
  auto expanded = expand_template(ws.path, values);
  if (!expanded || !*expanded)
    return std::unexpected(
        fmt::format("{}: objective.window: {}", spec.file,
                    expanded ? "its path names a null value" : expanded.error()));
  fs::path at(**expanded);
  if (at.is_relative()) at = fs::path(request.workdir) / at;
  return at.lexically_normal().string();
}

// The load a started trial ran under (load_check.h), from the keeper's CPU figures and the
// probes' verdict among its end's attrs.
LoadJudgement judge_trial_load(const LoadSpec& load, const LaunchKind* kind,
                               const LaunchResult& res, const nlohmann::json& end_attrs) {
  const auto verdict = end_attrs.find(k_attr_probe_verdict);
  // Ranks outside the trial's tree (srun's, children of slurmstepd; another "host" of the trial
  // that is a namespace or container of this machine) would count as other work's load: the CPU
  // figures cannot tell the job from the rest, so nothing is judged.
  const bool beside = verdict != end_attrs.end() && verdict->is_object() &&
                      verdict->contains(k_verdict_shares_machine_with);
  const bool tree_holds_ranks = (!kind || kind->ranks_in_tree()) && !beside;
  return judge_load(load, tree_holds_ranks ? res.cpu : std::nullopt,
                    verdict == end_attrs.end() ? nlohmann::json() : *verdict,
                    std::max(1, static_cast<int>(allowed_cpus().size())));
}

// What a run that ended as `res` left in its files for its outcome: its stderr's tail, and the
// objective's reading where the outcome rests on it (wants_objective).
RunReadings read_run_left(const StudySpec& spec, const LaunchRequest& request,
                          const std::string& log_path, const TemplateValues& values,
                          const LaunchResult& res, const OutcomeContext& ctx,
                          WindowFollower* window, TrialFileWatch& files) {
  RunReadings left;
  if (res.started) left.stderr_tail = tail_of_file(request.stderr_path, k_mpi_abort_tail_bytes);
  if (!wants_objective(res, ctx)) return left;
  std::optional<double> window_value;
  if (window) {
    auto v = window->ended_value();  // the decision's value, or the estimate of what was seen
    if (!v) {
      left.objective = std::unexpected(v.error());
      return left;
    }
    window_value = *v;
  }
  left.objective = read_objectives(spec.objectives, spec.constraints, log_path, request.stdout_path,
                                   request.stderr_path, res.wall_s, request.workdir, values,
                                   window_value, &files);
  return left;
}

}  // namespace

// Runs the trial (unless the probes ruled it out), following its log, and classifies the end.
StorageResult<StudyRunner::Ran> StudyRunner::execute(FrozenTrial& trial, const Prepared& p) {
  Ran ran;
  const auto ended = [&] {
    ran.end = end_of_trial(trial, ran);  // measure/trial_record.h
    return ran;
  };
  if (p.skip_constraint) {
    ran.unrun = skipped_outcome(*p.skip_constraint);
    return ended();
  }
  if (!p.stage_error.empty()) {  // its inputs are not there: running it would measure nothing
    ran.unrun.emplace();
    ran.unrun->reason = printable(p.stage_error, 1000);
    return ended();
  }
  ran.launched = true;
  if (!p.setup_error.empty()) {
    ran.launch.error = p.setup_error;
    return ended();
  }
  ErrorSink errors;
  LogFollower follower(m_spec.objective, p.log_path, *m_storage, *m_cache, m_pruner.get(), trial,
                       errors);
  // objective `window:`: the rate measured while the trial runs, which may stop it.
  std::optional<WindowFollower> window;
  if (const auto& ws = m_spec.objective.window) {
    auto path = window_path(m_spec, *ws, p.request, p.values);
    if (!path) return std::unexpected(path.error());
    // Losers are stopped only among the sampler's own trials: a baseline or a re-run is
    // measured whole, and tune confirm's repeats run without pruning.
    std::optional<WindowBest> best;
    if (m_options.prune && !trial.system_attrs.contains(k_attr_fixed_params) && !is_rerun(trial))
      best = window_best(*m_cache, m_best.best(*m_cache));
    window.emplace(*ws, *path, best, k_trial_output_cap / 2);
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
  if (res.started) ran.load = judge_trial_load(m_load, p.launch_kind.get(), res, ran.end_attrs);
  OutcomeContext& ctx = ran.context;
  ctx.study_deadline_bites = p.study_deadline_bites;
  ctx.interrupt_signal = interrupt_signal();
  if (!trial.intermediate_values.empty()) {
    ctx.last_intermediate = trial.intermediate_values.rbegin()->second;
  }
  if (window) ctx.window = window->decision();
  // What the run left in its files, read here so that its outcome is one pure function of it.
  ran.readings = read_run_left(m_spec, p.request, p.log_path, p.values, res, ctx,
                               window ? &*window : nullptr, files);
  if (window && res.started) {
    ran.window_attrs = window->attrs();
    ran.window_points = static_cast<int>(std::max<std::int64_t>(window->points(), 1));
  }
  ran.run_constraint = p.run_constraint;
  if (errors.lost()) {
    ran.lost = errors.error();
    return ran;
  }
  if (auto r = errors.result(); !r) ran.storage_error = r.error();
  return ended();
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
