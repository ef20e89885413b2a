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
#include "search/sampler_factory.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/summary.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/rendered_launch.h"
#include "tuner/measure/trial_record.h"
#include "tuner/run/baselines.h"
#include "tuner/run/first_guess_step.h"
#include "tuner/run/follow_ups.h"
#include "tuner/run/kernel_params.h"
#include "tuner/run/load_check.h"
#include "tuner/run/log_follower.h"
#include "tuner/run/pending_result.h"
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
  std::optional<double> time_left_s;
  if (m_options.study_timeout_s)
    time_left_s = *m_options.study_timeout_s -
                  std::chrono::duration<double>(Clock::now() - m_started).count();
  wait_for_quiet(out, *m_cache, m_load, time_left_s, m_quiet);
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
  if (ran->lost) {
    *stop = ran->launch.started && ran->launch.stopped == StopReason::interrupted;
    return step_failed(*ran->lost);
  }
  *stop = ran->end.outcome.stop_study;
  FinalRecord& record = ran->end.record;
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
  if (ran->launched && ran->end.outcome.state == TrialState::fail && !ran->end.outcome.stop_study &&
      ran->launch.stopped != StopReason::timeout) {
    m_failures_in_row.push_back(ran->end.outcome.reason);
  } else {
    m_failures_in_row.clear();
  }
  // incumbent_repeats: a new best is re-measured (the next trials) before it is believed.
  auto reruns = enqueue_incumbent_reruns(*m_storage, *m_cache, m_best, m_spec.space,
                                         m_spec.incumbent_repeats);
  if (!reruns) return std::unexpected(reruns.error());
  if (!m_options.quiet) print_progress(out, index, *trial, *ran);
  // The load re-run first: a baseline measured under load leaves its guess to that re-run.
  if (ran->load.under_load && m_load.wait_s - m_quiet.waited_s > 0) {
    if (auto r = enqueue_load_rerun(*m_storage, *m_cache, m_spec.space, *trial); !r) return r;
  }
  if (ran->launched && m_spec.first_guess) {
    if (auto r = first_guess_step(out, *m_storage, *m_cache, m_spec, *trial, m_options.quiet); !r)
      return r;
  }
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

}  // namespace tune::tuner
