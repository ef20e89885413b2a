#include "tuner/storage/study_cache.h"

#include <algorithm>

namespace tune::tuner {

StorageResult<void> StudyCache::sync() {
  std::vector<std::int64_t> refresh(m_unfinished.begin(), m_unfinished.end());
  refresh.insert(refresh.end(), m_stale.begin(), m_stale.end());
  StudyMark mark = m_mark;
  auto delta = m_storage.get_trials_changed(m_study.study_id, mark, refresh);
  if (!delta) return std::unexpected(delta.error());  // m_stale is tried again next time
  m_stale.clear();
  m_mark = mark;
  for (auto& t : *delta) apply(std::move(t));
  return {};
}

void StudyCache::count(const search::FrozenTrial& t, int sign) {
  if (t.state == search::TrialState::waiting) {
    if (sign > 0)
      ++m_waiting;
    else
      --m_waiting;
  }
  if (t.is_finished()) return;
  if (sign > 0)
    m_unfinished.insert(t.trial_id);
  else
    m_unfinished.erase(t.trial_id);
}

void StudyCache::apply(search::FrozenTrial t) {
  std::size_t pos = 0;
  if (const auto it = m_position.find(t.trial_id); it != m_position.end()) {
    pos = it->second;
    count(m_trials[pos], -1);
    m_trials[pos] = std::move(t);
  } else if (m_trials.empty() || m_trials.back().number < t.number) {
    pos = m_trials.size();  // the usual case: numbers grow with ids
    m_position.emplace(t.trial_id, pos);
    m_trials.push_back(std::move(t));
  } else {
    auto at = std::lower_bound(m_trials.begin(), m_trials.end(), t.number,
                               [](const search::FrozenTrial& a, int n) { return a.number < n; });
    pos = static_cast<std::size_t>(at - m_trials.begin());
    if (at != m_trials.end() && at->number == t.number) {
      // Another row under a number the cache holds: the one it held is gone (a creation that
      // was not durable), and this one took its number.
      count(*at, -1);
      m_position.erase(at->trial_id);
      m_position.emplace(t.trial_id, pos);
      *at = std::move(t);
    } else {
      // Trials move: readers of the log start again from the whole history.
      m_trials.insert(at, std::move(t));
      for (std::size_t i = pos; i < m_trials.size(); ++i) m_position[m_trials[i].trial_id] = i;
      m_log_id = search::new_change_log_id();
      m_log.clear();
    }
  }
  count(m_trials[pos], +1);
  m_log.push_back(pos);
}

std::optional<std::span<const std::size_t>> StudyCache::changes_since(
    const search::ChangeCursor& cursor) const {
  if (cursor.log != m_log_id || cursor.position > m_log.size()) return std::nullopt;
  return std::span<const std::size_t>(m_log).subspan(cursor.position);
}

const search::FrozenTrial* StudyCache::find(std::int64_t trial_id) const {
  const auto it = m_position.find(trial_id);
  return it == m_position.end() ? nullptr : &m_trials[it->second];
}

}  // namespace tune::tuner
