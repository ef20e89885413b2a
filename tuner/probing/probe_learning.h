// What the probes learn from a study's earlier trials (probes::LearnedDuty: the duty cycles they
// measured; probes::VerdictMemory: the verdicts trials of the same layout got), kept across
// trials and updated with the trials it has not seen yet, so a trial's prediction costs the same
// at trial 10 as at trial 10,000.
//
// A trial is folded in once, by trial id, when it is finished: its probe records (duty cycles,
// prediction, verdict) and its state are written when it ends and never change after (a finished
// trial takes no more writes; a re-run changes the original's value only). Running and waiting
// trials are looked at again on every update. Whenever the history handed in is not the one
// folded plus new trials (a folded trial is gone or its state changed, trial ids repeat: another
// study, a test's invented history), everything is recomputed from the trials given: the result
// is always that of recompute() on the same trials. Plain values; one thread.
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
