// A trial's setup, before it runs: its parameters sampled (or fixed), its folder made, its inputs
// staged, its launch rendered and stamped. Part of StudyRunner (runner.h).
#include "tuner/run/runner.h"

#include <fmt/format.h>

#include <filesystem>

#include "search/sampler.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/rendered_launch.h"
#include "tuner/run/runner_parts.h"
#include "tuner/run/staging.h"
#include "tuner/storage/storage_url.h"  // is_secret_env_var

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

namespace fs = std::filesystem;
using search::FrozenTrial;
using search::TrialState;

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
  // The probes may add their own variables (a tag, the thread-origin preload): the trial's
  // stored `env` and `command` are the study's, which the probes' instruments (and the `-x`
  // that forwards them) are not part of, so an export of the trial runs what was stored.
  const auto env_of_study = rendered->env_set;
  const auto argv_of_study = rendered->argv();
  if (m_hooks.tag_launch) m_hooks.tag_launch(trial, *rendered);
  Prepared p;
  p.trial_dir = trial_dir.string();
  LaunchRequest& req = p.request;
  req = rendered->request();
  p.launch_kind = rendered->kind;
  // The working directory: the trial's folder unless `workdir:` says otherwise; stdout, stderr
  // and the log stay in the trial's folder either way.
  // A parameter's value never moves it out of the folder the study file names (a choice
  // "../x"): such a trial fails unrun, nothing made or staged outside.
  auto workdir = expand_path_template(m_spec.workdir, values, m_spec.dir);
  std::string workdir_error;
  if (!workdir) workdir_error = fmt::format("workdir: {}", workdir.error());
  fs::path wd = workdir && *workdir && !(*workdir)->empty() ? fs::path(**workdir) : trial_dir;
  req.workdir = wd.string();
  p.values = values;
  nlohmann::json staged = nlohmann::json::array();
  std::error_code wd_ec;
  if (!workdir_error.empty()) {
    p.stage_error = workdir_error;
  } else if (fs::create_directories(wd, wd_ec); wd_ec) {
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
  auto env_shown = env_of_study;  // a secret (PGPASSWORD) is stored masked
  for (auto& [name, value] : env_shown)
    if (is_secret_env_var(name)) value = k_redacted;
  const std::pair<const char*, nlohmann::json> shown[] = {{k_attr_launched_argv, argv_of_study},
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

}  // namespace tune::tuner
