#include "tuner/run/ranking.h"

#include <algorithm>

#include "search/pareto.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

bool is_rerun(const FrozenTrial& trial) { return trial.system_attrs.contains(k_attr_rerun_of); }

const FrozenTrial* find_baseline(const search::StudyView& study) {
  for (const auto& t : study.trials()) {
    if (t.system_attrs.contains(k_attr_fixed_params) && !is_rerun(t)) return &t;
  }
  return nullptr;
}

namespace {

bool is_ranked(const FrozenTrial& t) {
  return t.state == TrialState::complete && t.value && !is_rerun(t);
}

// Whether `a` ranks before `b` (both ranked).
bool ranks_before(const FrozenTrial& a, const FrozenTrial& b, bool maximize) {
  if (a.is_feasible() != b.is_feasible()) return a.is_feasible();
  return maximize ? *a.value > *b.value : *a.value < *b.value;
}

}  // namespace

std::vector<const FrozenTrial*> ranked_trials(const search::StudyView& study) {
  std::vector<const FrozenTrial*> out;
  for (const auto& t : study.trials()) {
    if (is_ranked(t)) out.push_back(&t);
  }
  const bool maximize = study.direction() == search::Direction::maximize;
  std::stable_sort(out.begin(), out.end(), [&](const FrozenTrial* a, const FrozenTrial* b) {
    return ranks_before(*a, *b, maximize);
  });
  return out;
}

const FrozenTrial* best_trial(const search::StudyView& study) {
  // One pass (the live line asks after every trial): the first of the ranked order.
  const bool maximize = study.direction() == search::Direction::maximize;
  const FrozenTrial* best = nullptr;
  for (const auto& t : study.trials()) {
    if (is_ranked(t) && (best == nullptr || ranks_before(t, *best, maximize))) best = &t;
  }
  return best;
}

std::vector<const FrozenTrial*> front_trials(const search::StudyView& study) {
  std::vector<const FrozenTrial*> complete;
  bool any_feasible = false;
  for (const auto& t : study.trials()) {
    if (t.state != TrialState::complete || is_rerun(t)) continue;
    complete.push_back(&t);
    any_feasible = any_feasible || t.is_feasible();
  }
  if (any_feasible) std::erase_if(complete, [](const FrozenTrial* t) { return !t->is_feasible(); });
  return search::pareto_front(complete, study.directions());
}

}  // namespace tune::tuner
