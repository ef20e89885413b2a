#include "tuner/run/baselines.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "probes/topology.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/attempts.h"
#include "tuner/judge/ranking.h"
#include "tuner/launch/rule_machine.h"
#include "tuner/study/rules.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

BaselineSeed baseline_seed(const StudySpec& spec) {
  BaselineSeed seed;
  std::vector<std::string> notes;
  RuleMachine machine;
  if (!spec.rules.empty()) {
    const auto topo = probes::read_cpu_topology();
    machine = rule_machine(spec, topo ? &*topo : nullptr);
  }
  for (const auto& entry : enqueue_with_rules(spec, machine, notes)) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : entry.params)
      params[name] = search::param_value_to_json(value);
    // Optuna's enqueue_trial: a WAITING trial whose fixed_params the next ask() uses.
    nlohmann::json attrs = {{k_attr_fixed_params, params}};
    if (!entry.rules.empty()) {
      attrs[k_attr_rules] = entry.rules;
      attrs[k_attr_rule_texts] = entry.texts;
      if (!entry.from_enqueue) attrs[k_attr_rule_only] = true;
    }
    // The texts name the study's parameters: the study file's words, shown, not sent.
    for (const auto& text : entry.texts)
      seed.lines.push_back(
          fmt::format("rule baseline, trial {}: {}", seed.trials.size(), terminal_text(text)));
    seed.trials.push_back(std::move(attrs));
  }
  for (const auto& note : notes) seed.lines.push_back("note: " + terminal_text(note));
  return seed;
}

Result<std::optional<int>> enqueue_retry(Storage& storage, std::int64_t study_id,
                                         const FrozenTrial& attempt) {
  nlohmann::json attrs = nlohmann::json::object();
  for (const char* key : {k_attr_fixed_params, k_attr_rules, k_attr_rule_texts, k_attr_rule_only})
    if (const auto it = attempt.system_attrs.find(key); it != attempt.system_attrs.end())
      attrs[key] = *it;
  attrs[k_attr_retry_of] = attempt.number;
  auto t = storage.create_trial_unless(study_id, TrialState::waiting, attrs, k_attr_retry_of);
  if (!t) return std::unexpected(t.error().message);
  if (!*t) return std::optional<int>();
  return std::optional<int>((*t)->number);
}

Result<std::vector<std::string>> retry_unfinished_baselines(Storage& storage, StudyCache& cache) {
  std::vector<std::string> lines;
  const FrozenTrial* first_baseline = first_baseline_trial(cache);
  for (const auto& attempts : baseline_attempts(cache)) {
    const FrozenTrial& last = *attempts.trials.back();
    const bool baseline = attempts.trials.front() == first_baseline;
    const auto what = baseline ? std::string("the baseline")
                               : fmt::format("rule baseline {}",
                                             fmt::join(rules_of(*attempts.trials.front()), ", "));
    const auto reason = last.system_attrs.value(k_attr_fail_reason, std::string("FAIL"));
    if (attempts.failed_for_good()) {
      lines.push_back(fmt::format(
          "note: {} failed twice with the same reason (trial {}: {}); it is not run again: fix "
          "that, then `tune confirm` runs it",
          what, last.number, terminal_text(reason)));
      continue;
    }
    if (!attempts.to_retry()) continue;
    auto made = enqueue_retry(storage, cache.study().study_id, last);
    if (!made) return std::unexpected(made.error());
    if (!*made) continue;  // another worker enqueued it
    lines.push_back(fmt::format("{} (trial {}) did not complete ({}); running it again as trial {}",
                                what, last.number, terminal_text(reason), **made));
  }
  if (!lines.empty())
    if (auto r = cache.sync(); !r) return std::unexpected(r.error().message);
  return lines;
}

}  // namespace tune::tuner
