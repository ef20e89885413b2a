#include "tuner/run/ranking.h"

#include <algorithm>
#include <map>

#include "search/pareto.h"
#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/run/rerun.h"

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

// Every ranked trial with its believed value, number order: one pass over the study for the
// re-runs' values, one for the trials.
struct Ranked {
  const FrozenTrial* trial;
  double value;
};
std::vector<Ranked> ranked_with_values(const search::StudyView& study) {
  std::map<int, std::vector<double>> reruns;
  for (const auto& t : study.trials()) {
    const auto of = rerun_of(t);
    const auto v = of ? rerun_value(t) : std::nullopt;
    if (v) reruns[*of].push_back(*v);
  }
  std::vector<Ranked> out;
  for (const auto& t : study.trials()) {
    if (!is_ranked(t)) continue;
    const auto it = reruns.find(t.number);
    out.push_back({&t, it == reruns.end() ? *t.value : median(it->second)});
  }
  return out;
}

// Whether `a` ranks before `b`.
bool ranks_before(const Ranked& a, const Ranked& b, bool maximize) {
  if (a.trial->is_feasible() != b.trial->is_feasible()) return a.trial->is_feasible();
  return maximize ? a.value > b.value : a.value < b.value;
}

}  // namespace

std::vector<const FrozenTrial*> ranked_trials(const search::StudyView& study) {
  auto ranked = ranked_with_values(study);
  const bool maximize = study.direction() == search::Direction::maximize;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const Ranked& a, const Ranked& b) { return ranks_before(a, b, maximize); });
  std::vector<const FrozenTrial*> out;
  out.reserve(ranked.size());
  for (const auto& r : ranked) out.push_back(r.trial);
  return out;
}

const FrozenTrial* best_trial(const search::StudyView& study) {
  // No sort (the live line asks after every trial): the first of the ranked order.
  const bool maximize = study.direction() == search::Direction::maximize;
  const Ranked* best = nullptr;
  const auto ranked = ranked_with_values(study);
  for (const auto& r : ranked) {
    if (best == nullptr || ranks_before(r, *best, maximize)) best = &r;
  }
  return best ? best->trial : nullptr;
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
