#include "tuner/judge/attempts.h"

#include <fmt/format.h>

#include <unordered_map>

#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

namespace {

bool is_retry(const FrozenTrial& t) { return t.system_attrs.contains(k_attr_retry_of); }

std::string reason_of(const FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_fail_reason);
  return it != t.system_attrs.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool cut_short(const FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_cut_short);
  return it != t.system_attrs.end() && it->is_boolean() && it->get<bool>();
}

// Each re-run by the number of the attempt it follows.
std::unordered_map<int, const FrozenTrial*> retries_by_attempt(const search::StudyView& study) {
  std::unordered_map<int, const FrozenTrial*> out;
  for (const auto& t : study.trials()) {
    const auto of = t.system_attrs.find(k_attr_retry_of);
    if (of != t.system_attrs.end() && of->is_number_integer()) out.emplace(of->get<int>(), &t);
  }
  return out;
}

Attempts chain(const FrozenTrial& first,
               const std::unordered_map<int, const FrozenTrial*>& retries) {
  Attempts a;
  for (const FrozenTrial* t = &first; t != nullptr;) {
    a.trials.push_back(t);
    if (a.trials.size() > retries.size() + 1) break;  // a loop only a hand-edited study could make
    const auto next = retries.find(t->number);
    t = next == retries.end() ? nullptr : next->second;
  }
  return a;
}

}  // namespace

const FrozenTrial* Attempts::standing() const {
  for (const auto* t : trials)
    if (t->state == TrialState::complete) return t;
  return trials.empty() ? nullptr : trials.back();
}

bool Attempts::failed_for_good() const {
  if (trials.size() < 2) return false;
  const auto& last = *trials.back();
  const auto& before = *trials[trials.size() - 2];
  return last.state == TrialState::fail && before.state == TrialState::fail && !cut_short(last) &&
         !cut_short(before) && reason_of(last) == reason_of(before);
}

bool Attempts::to_retry() const {
  return !trials.empty() && trials.back()->state == TrialState::fail && !failed_for_good();
}

const FrozenTrial* first_baseline_trial(const search::StudyView& study) {
  for (const auto& t : study.trials()) {
    if (t.system_attrs.contains(k_attr_fixed_params) && !is_rerun(t) && !is_retry(t) &&
        !t.system_attrs.contains(k_attr_rule_only))
      return &t;
  }
  return nullptr;
}

Attempts attempts_at(const search::StudyView& study, const FrozenTrial& first) {
  return chain(first, retries_by_attempt(study));
}

std::vector<Attempts> baseline_attempts(const search::StudyView& study) {
  const auto retries = retries_by_attempt(study);
  std::vector<Attempts> out;
  const FrozenTrial* baseline = first_baseline_trial(study);
  if (baseline != nullptr) out.push_back(chain(*baseline, retries));
  for (const auto& t : study.trials()) {
    if (&t == baseline || !t.system_attrs.contains(k_attr_rules) || is_rerun(t) || is_retry(t))
      continue;
    out.push_back(chain(t, retries));
  }
  return out;
}

std::string baseline_problem(const Attempts& attempts) {
  const FrozenTrial* standing = attempts.standing();
  if (standing == nullptr || standing->state == TrialState::complete) return {};
  const auto reason = reason_of(*standing);
  const auto why = reason.empty() ? std::string(search::to_string(standing->state)) : reason;
  if (attempts.failed_for_good())
    return fmt::format(
        "the baseline failed twice in a row with the same reason (trials {} and {}: {}): fix "
        "that, then `tune confirm STUDY` runs it again",
        attempts.trials[attempts.trials.size() - 2]->number, standing->number, why);
  if (standing->state == TrialState::fail)
    return fmt::format(
        "the baseline trial #{} did not complete ({}); the study's next `tune` run runs it again",
        standing->number, why);
  return fmt::format("the baseline trial #{} has not run yet ({})", standing->number,
                     search::to_string(standing->state));
}

}  // namespace tune::tuner
