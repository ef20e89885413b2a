// What the probes learn from a study's earlier trials (LearnedDuty, VerdictMemory), updated with
// the trials not seen yet, so a prediction costs the same at trial 10 as at trial 10,000.
// Plain values; one thread.
// Design: docs/design-notes.md#tunerprobingprobe_learningh
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "probes/learned_duty.h"
#include "probes/verdict_memory.h"
#include "search/trial.h"

namespace tune::tuner {

class ProbeLearning {
 public:
  // Brings the learned state up to `study`: through its change log, the trials changed since the
  // last update alone (O(changes)); where the log cannot say, as update(study.trials()).
  void update(const search::StudyView& study);
  // Brings the learned state up to `trials` (the study's trials, in any order). Costs one hash
  // look-up per trial plus the work on trials finished since the last update.
  void update(const std::vector<search::FrozenTrial>& trials);
  // From every trial of `trials`, the way update() would from a fresh state.
  static ProbeLearning recompute(const std::vector<search::FrozenTrial>& trials);

  const probes::LearnedDuty& learned() const { return m_learned; }
  const probes::VerdictMemory& memory() const { return m_memory; }
  // Trials folded in (finished ones, whether or not they taught anything); for tests.
  std::size_t folded() const { return m_folded.size(); }
  // How many updates recomputed everything (a fresh one folds, it does not recompute); for tests.
  int recomputations() const { return m_recomputations; }

 private:
  struct Folded {
    search::TrialState state = search::TrialState::complete;
    std::uint64_t seen_in = 0;  // the update that last saw it
  };
  void fold(const search::FrozenTrial& trial);
  // Folds what is new; false when `trials` is not the folded history plus new trials.
  bool extend(const std::vector<search::FrozenTrial>& trials);

  probes::LearnedDuty m_learned;
  probes::VerdictMemory m_memory;
  std::unordered_map<std::int64_t, Folded> m_folded;
  std::uint64_t m_update = 0;
  search::ChangeCursor m_cursor;  // update(study): where its change log was read up to
  bool m_untracked = false;       // trial ids repeated: the next update recomputes
  int m_recomputations = 0;
};

}  // namespace tune::tuner
