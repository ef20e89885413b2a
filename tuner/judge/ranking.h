// The ranking rules: which trials count, in which order (by believed value) and which one is
// best. Every output that ranks trials or names a best asks these, so none disagree.
// Pure functions over a StudyView; thread-safe.
// Design: docs/design-notes.md#tunerjudgerankingh
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "search/trial.h"

namespace tune::tuner {

// True for a re-run: a trial that re-measures another one (system attr k_attr_rerun_of).
bool is_rerun(const search::FrozenTrial& trial);

// True for a trial measured under load (user attr k_attr_measured_under_load): its value is not
// trusted.
bool measured_under_load(const search::FrozenTrial& trial);
// A trial's own value counts: not measured under load.
inline bool trusted_run(const search::FrozenTrial& trial) { return !measured_under_load(trial); }

// The baseline: the lowest-numbered enqueued trial (system attr "fixed_params") that is not a
// re-run, nor a rule baseline the study's `enqueue:` does not give (k_attr_rule_only), or the
// attempt that stands for it when it did not complete (judge/attempts.h); nullptr when the study
// enqueued none.
const search::FrozenTrial* find_baseline(const search::StudyView& study);

// The rules an enqueued rule baseline stands for (system attr k_attr_rules, tuner/study/rules.h:
// "torchrun", ...), only names of rule_names(); empty for any other trial.
std::vector<std::string> rules_of(const search::FrozenTrial& trial);
// The best-ranked trial that stands for a rule, of `ranked` (ranked_trials(), best first);
// nullptr when none is ranked.
const search::FrozenTrial* best_rule_trial(const std::vector<const search::FrozenTrial*>& ranked);

// The ranked trials (see above), best first.
std::vector<const search::FrozenTrial*> ranked_trials(const search::StudyView& study);

// ranked_trials(study).front(); nullptr when no trial is ranked.
const search::FrozenTrial* best_trial(const search::StudyView& study);

// Whether `best` (a ranked trial) stands on a run measured under load: no trial measured on a
// quiet machine was ranked, so the best of those measured under load was taken.
// What every output adds to such a best.
inline constexpr const char* k_best_under_load_text =
    "measured under load: no trial ran on a quiet machine (other work used the job's CPUs "
    "throughout); re-measure it (tune confirm) before trusting it";
// One pass over the study, only when `best` itself is marked.
bool best_measured_under_load(const search::StudyView& study, const search::FrozenTrial& best);

// best_trial() and whether a trial has re-runs, kept from a study's change log (StudyView):
// each call folds in the trials that changed since the last (O(changes log n)), where
// best_trial() passes over the whole study, so the live line and incumbent_repeats cost the same
// at trial 50,000 as at trial 50. The same answers as best_trial() and a pass over the re-runs
// (tests/tuner/judge/ranking_test.cpp holds them equal on recorded histories). A view that keeps no
// log is read whole at each call. Single-objective studies; one thread.
class BestTracker {
 public:
  const search::FrozenTrial* best(const search::StudyView& study);
  // Whether any trial (in any state) re-measures trial `number`.
  bool has_reruns(const search::StudyView& study, int number);

 private:
  // A ranked trial's place: feasible first, then by believed value (the direction's better
  // first), then number.
  struct Key {
    bool infeasible;
    double loss;  // the believed value, negated when maximising; NaN as +inf
    int number;
    auto operator<=>(const Key&) const = default;
  };
  void catch_up(const search::StudyView& study);
  void clear();
  void fold(const search::StudyView& study, std::size_t position);
  // Re-keys trial `number` (at `position`) from its stored value and its re-runs.
  void rank(const search::StudyView& study, int number);

  search::ChangeCursor m_cursor;
  bool m_maximize = false;
  std::set<Key> m_ranked;
  std::set<Key> m_loaded;  // measured under load, no quiet re-run: ranked only when m_ranked is empty
  std::unordered_map<int, Key> m_key;               // number -> its key in m_ranked or m_loaded
  std::unordered_map<int, std::size_t> m_position;  // number -> position in trials()
  // Original's number -> (re-run's number -> its measured value, when completed).
  std::unordered_map<int, std::map<int, double>> m_rerun_values;
  std::unordered_map<int, int> m_rerun_of;     // re-run's number -> original's number
  std::unordered_map<int, int> m_rerun_count;  // original's number -> re-runs in any state
};

// A multi-objective study's best trials: the Pareto front (search/pareto.h) of its ranked trials'
// values (feasible ones only when any is feasible), number order. Without constraints or re-runs,
// Optuna's best_trials.
std::vector<const search::FrozenTrial*> front_trials(const search::StudyView& study);

}  // namespace tune::tuner
