// Trials left RUNNING by a tune that died: failed as stale, or stored from the result the dead
// tune kept in the trial's folder (pending_result.h). Part of StudyRunner (runner.h).
#include "tuner/run/runner.h"

#include <fmt/format.h>

#include <filesystem>

#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/run/follow_ups.h"
#include "tuner/run/pending_result.h"
#include "tuner/run/runner_parts.h"
#include "tuner/storage/trial_owner.h"

namespace tune::tuner {

namespace fs = std::filesystem;
using search::FrozenTrial;
using search::TrialState;

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
    if (auto r = m_storage->set_trial_system_attr(t.trial_id, k_attr_cut_short, true); !r) {
      if (r.error().kind == StorageErrorKind::finished) continue;
      return to_result(r);
    }
    if (auto r = m_storage->set_trial_state_values(t.trial_id, TrialState::fail, std::nullopt);
        !r) {
      return std::unexpected(r.error().message);
    }
  }
  if (auto r = m_cache->sync(); !r) return to_result(r);
  // A kept re-run's value now counts towards its original's believed value (follow_ups.h), as it
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

}  // namespace tune::tuner
