#include "tuner/probing/probe_learning.h"

#include "tuner/base/trial_attrs.h"
#include "tuner/judge/prediction_quality.h"

namespace tune::tuner {

void ProbeLearning::fold(const search::FrozenTrial& t) {
  if (!verdict_counts(t)) return;  // a second of start-up teaches nothing
  if (auto it = t.system_attrs.find(k_attr_probe_duty); it != t.system_attrs.end())
    m_learned.add(*it);
  const auto predicted = t.system_attrs.find(k_attr_probe_prediction);
  const auto observed = t.system_attrs.find(k_attr_probe_verdict);
  if (predicted != t.system_attrs.end() && observed != t.system_attrs.end())
    m_memory.add(*predicted, *observed);
}

bool ProbeLearning::extend(const std::vector<search::FrozenTrial>& trials) {
  const std::uint64_t update = ++m_update;
  std::size_t still_there = 0;
  for (const auto& t : trials) {
    const auto it = m_folded.find(t.trial_id);
    if (it != m_folded.end()) {
      // Seen twice in one history (ids that repeat), or no longer what was folded.
      if (it->second.seen_in == update || it->second.state != t.state) return false;
      it->second.seen_in = update;
      still_there += 1;
      continue;
    }
    if (!t.is_finished()) continue;  // looked at again next time
    fold(t);
    m_folded.emplace(t.trial_id, Folded{t.state, update});
    still_there += 1;
  }
  return still_there == m_folded.size();  // else a folded trial is gone
}

void ProbeLearning::update(const search::StudyView& study) {
  const search::ChangedTrials changes = search::take_changes(study, m_cursor);
  const auto& trials = study.trials();
  if (!changes.from_scratch && !m_untracked) {
    const std::uint64_t update = ++m_update;
    bool same = true;
    for (const std::size_t pos : changes.positions) {
      const auto& t = trials[pos];
      const auto it = m_folded.find(t.trial_id);
      if (it != m_folded.end()) {
        same = same && it->second.state == t.state;  // a folded trial never changes state
        continue;
      }
      if (!t.is_finished()) continue;  // folded once it ends, which the log will say
      fold(t);
      m_folded.emplace(t.trial_id, Folded{t.state, update});
    }
    if (same) return;
  }
  const search::ChangeCursor cursor = m_cursor;
  update(trials);
  m_cursor = cursor;
}

void ProbeLearning::update(const std::vector<search::FrozenTrial>& trials) {
  if (!m_untracked && extend(trials)) return;
  const int before = m_recomputations;
  *this = recompute(trials);
  m_recomputations += before;
}

ProbeLearning ProbeLearning::recompute(const std::vector<search::FrozenTrial>& trials) {
  ProbeLearning out;
  out.m_recomputations = 1;
  if (out.extend(trials)) return out;
  // Ids that repeat: every finished trial counts once, as a plain pass over them would, and the
  // next update recomputes again (trials it cannot tell apart cannot be followed).
  ProbeLearning plain;
  plain.m_recomputations = 1;
  plain.m_untracked = true;
  for (const auto& t : trials)
    if (t.is_finished()) plain.fold(t);
  return plain;
}

}  // namespace tune::tuner
