#include "tuner/judge/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "search/pareto.h"
#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/attempts.h"
#include "tuner/judge/reruns.h"
#include "tuner/study/rules.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

bool is_rerun(const FrozenTrial& trial) { return trial.system_attrs.contains(k_attr_rerun_of); }

bool measured_under_load(const FrozenTrial& trial) {
  const auto it = trial.user_attrs.find(k_attr_measured_under_load);
  return it != trial.user_attrs.end() && !it->is_null();
}

const FrozenTrial* find_baseline(const search::StudyView& study) {
  const FrozenTrial* first = first_baseline_trial(study);
  if (first == nullptr || first->state == TrialState::complete) return first;
  return attempts_at(study, *first).standing();
}

std::vector<std::string> rules_of(const FrozenTrial& trial) {
  std::vector<std::string> out;
  const auto it = trial.system_attrs.find(k_attr_rules);
  if (it == trial.system_attrs.end() || !it->is_array()) return out;
  // Only the rules tune knows: the attr is the database's word, and it lands in every report.
  const auto& known = rule_names();
  for (const auto& r : *it)
    if (r.is_string() && std::find(known.begin(), known.end(), r.get<std::string>()) != known.end())
      out.push_back(r.get<std::string>());
  return out;
}

const FrozenTrial* best_rule_trial(const std::vector<const FrozenTrial*>& ranked) {
  for (const auto* t : ranked)
    if (!rules_of(*t).empty()) return t;
  return nullptr;
}

namespace {

// `trusted_reruns`: a completed re-run measured without load stands for it.
bool is_ranked(const FrozenTrial& t, bool trusted_reruns) {
  return t.state == TrialState::complete && t.value && !is_rerun(t) &&
         (trusted_run(t) || trusted_reruns);
}
// Ranked only where no trial is: measured under load, and no quiet re-run stands for it.
bool is_ranked_loaded(const FrozenTrial& t, bool trusted_reruns) {
  return t.state == TrialState::complete && t.value && !is_rerun(t) && !trusted_run(t) &&
         !trusted_reruns;
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
    const auto v = of && trusted_run(t) ? rerun_value(t) : std::nullopt;
    if (v) reruns[*of].push_back(*v);
  }
  std::vector<Ranked> out;
  for (const auto& t : study.trials()) {
    const auto it = reruns.find(t.number);
    if (!is_ranked(t, it != reruns.end())) continue;
    out.push_back({&t, it == reruns.end() ? *t.value : median(it->second)});
  }
  if (!out.empty()) return out;
  // A machine that was never quiet: the runs measured under load, by their own values.
  for (const auto& t : study.trials())
    if (is_ranked_loaded(t, reruns.contains(t.number))) out.push_back({&t, *t.value});
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

bool best_measured_under_load(const search::StudyView& study, const FrozenTrial& best) {
  // A ranked trial measured under load is ranked by a quiet re-run, unless none was: then it is
  // the fallback's.
  return measured_under_load(best) && rerun_values_of(study, best.number).empty();
}

void BestTracker::clear() {
  m_ranked.clear();
  m_loaded.clear();
  m_key.clear();
  m_position.clear();
  m_rerun_values.clear();
  m_rerun_of.clear();
  m_rerun_count.clear();
}

void BestTracker::catch_up(const search::StudyView& study) {
  const bool maximize = study.direction() == search::Direction::maximize;
  search::ChangedTrials changes = search::take_changes(study, m_cursor);
  if (changes.from_scratch || maximize != m_maximize) {
    clear();
    m_maximize = maximize;
    if (!changes.from_scratch) changes = {true, {}};
    changes.positions.resize(study.trials().size());
    for (std::size_t i = 0; i < changes.positions.size(); ++i) changes.positions[i] = i;
  }
  for (const std::size_t pos : changes.positions) fold(study, pos);
}

void BestTracker::fold(const search::StudyView& study, std::size_t position) {
  const FrozenTrial& t = study.trials()[position];
  m_position[t.number] = position;
  if (const auto of = rerun_of(t)) {
    // A re-run: its value (once completed) is part of its original's believed value.
    if (m_rerun_of.emplace(t.number, *of).second) ++m_rerun_count[*of];
    auto& values = m_rerun_values[*of];
    if (const auto v = trusted_run(t) ? rerun_value(t) : std::nullopt)
      values[t.number] = *v;
    else
      values.erase(t.number);
    rank(study, *of);
  }
  rank(study, t.number);
}

void BestTracker::rank(const search::StudyView& study, int number) {
  if (const auto it = m_key.find(number); it != m_key.end()) {
    m_ranked.erase(it->second);
    m_loaded.erase(it->second);
    m_key.erase(it);
  }
  const auto pos = m_position.find(number);
  if (pos == m_position.end()) return;  // an original not read yet: ranked when it is
  const FrozenTrial& t = study.trials()[pos->second];
  const auto reruns = m_rerun_values.find(number);
  const bool trusted_reruns = reruns != m_rerun_values.end() && !reruns->second.empty();
  const bool loaded = is_ranked_loaded(t, trusted_reruns);
  if (!is_ranked(t, trusted_reruns) && !loaded) return;
  double value = *t.value;
  if (trusted_reruns) {
    std::vector<double> values;  // in re-run number order, as ranked_with_values collects them
    values.reserve(reruns->second.size());
    for (const auto& [n, v] : reruns->second) values.push_back(v);
    value = median(values);
  }
  double loss = m_maximize ? -value : value;
  if (std::isnan(loss)) loss = std::numeric_limits<double>::infinity();
  const Key key{!t.is_feasible(), loss, number};
  (loaded ? m_loaded : m_ranked).insert(key);
  m_key.emplace(number, key);
}

const FrozenTrial* BestTracker::best(const search::StudyView& study) {
  catch_up(study);
  const auto& ranked = m_ranked.empty() ? m_loaded : m_ranked;
  if (ranked.empty()) return nullptr;
  return &study.trials()[m_position.at(ranked.begin()->number)];
}

bool BestTracker::has_reruns(const search::StudyView& study, int number) {
  catch_up(study);
  const auto it = m_rerun_count.find(number);
  return it != m_rerun_count.end() && it->second > 0;
}

std::vector<const FrozenTrial*> front_trials(const search::StudyView& study) {
  std::vector<const FrozenTrial*> complete;
  bool any_feasible = false;
  for (const auto& t : study.trials()) {
    // A multi-objective study has no re-runs to stand for a run measured under load.
    if (t.state != TrialState::complete || is_rerun(t) || !trusted_run(t)) continue;
    complete.push_back(&t);
    any_feasible = any_feasible || t.is_feasible();
  }
  if (any_feasible) std::erase_if(complete, [](const FrozenTrial* t) { return !t->is_feasible(); });
  return search::pareto_front(complete, study.directions());
}

}  // namespace tune::tuner
