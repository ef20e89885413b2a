#include "tuner/run/log_follower.h"

#include <fmt/format.h>

#include <algorithm>

#include "tuner/measure/objective.h"

namespace tune::tuner {

namespace fs = std::filesystem;

std::string LogFollower::tick(bool prune) {
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
    if (write) m_errors.note(m_storage.set_trial_intermediate_value(m_trial.trial_id, step, value));
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

LogFollower::Clock::duration LogFollower::heartbeat_interval() const {
  const double s = std::clamp(m_storage.grace_period_s() / 16.0, 0.5, 10.0);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace tune::tuner
