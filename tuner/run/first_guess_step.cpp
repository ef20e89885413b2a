#include "tuner/run/first_guess_step.h"

#include <fmt/format.h>

#include "probes/topology.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/first_guess.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"
#include "tuner/launch/rule_machine.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

namespace {

bool load_rerun_of(const FrozenTrial& t, int number) {
  const auto cause = t.system_attrs.find(k_attr_rerun_cause);
  return rerun_of(t) == number && cause != t.system_attrs.end() && *cause == "load";
}

// "3.1 CPUs of other work", from a trial's load mark.
std::string load_words(const FrozenTrial& t) {
  const auto it = t.user_attrs.find(k_attr_measured_under_load);
  if (it == t.user_attrs.end() || !it->is_object() || !it->contains("external_cpus"))
    return "other work";
  return fmt::format("{:.2g} CPUs of other work", (*it)["external_cpus"].get<double>());
}

// Sets the guess's attributes on an unfinished trial that has its setting; false when another
// worker finished it first.
Result<bool> mark_as_guess(Storage& storage, std::int64_t trial_id, const nlohmann::json& attrs) {
  for (const auto& [key, value] : attrs.items()) {
    auto r = storage.set_trial_system_attr(trial_id, key, value);
    // A trial another worker finished meanwhile keeps what it has: the study's note names it.
    if (!r && r.error().lost_trial()) return false;
    if (!r) return std::unexpected(r.error().message);
  }
  return true;
}

// The guess worked out from `measured` (the baseline, or its quiet re-run): enqueued when it
// changes the setting and no trial has it yet (an unfinished one that has it is marked as the
// guess instead); the study's mark records what was done, and a line says it.
Result<void> enqueue_guess(std::ostream& out, Storage& storage, StudyCache& cache,
                           const StudySpec& spec, const FrozenTrial& base,
                           const FrozenTrial& measured, bool quiet) {
  const auto basis = guess_basis(measured);
  if (!basis) return {};
  const auto study_id = cache.study().study_id;
  const auto topo = probes::read_cpu_topology();
  const RuleMachine machine = rule_machine(spec, topo ? &*topo : nullptr);
  const auto& baseline = basis->params;
  nlohmann::json mark = {{"from_trial", measured.number}, {"change", false}, {"trial", nullptr}};
  auto guess = first_guess(spec, machine, basis->verdict, baseline, basis->value);
  if (guess) {
    const auto libraries = measured.system_attrs.find(k_attr_probe_libraries);
    if (libraries != measured.system_attrs.end())
      add_kernel_guess(spec, *libraries, basis->verdict, *guess);
    if (measured.number != base.number)
      guess->reasoning.insert(
          guess->reasoning.begin(),
          fmt::format("from trial {}, the baseline #{} measured again on a quiet machine (#{} ran "
                      "beside {})",
                      measured.number, base.number, base.number, load_words(base)));
  }
  if (!guess) {
    // A verdict the model cannot read is no reason to stop the study: it is said and noted.
    mark["note"] = guess.error();
    out << "first guess: none: " << terminal_text(guess.error()) << '\n';
    return to_result(storage.set_study_user_attr(study_id, k_attr_study_first_guess, mark));
  }
  mark["change"] = guess->change;
  // The study's own record of the guess, as a person reads it beside the trials.
  mark["reasoning"] = guess->reasoning;
  if (guess->change)
    mark["predicted"] = guess->predicted ? nlohmann::json(*guess->predicted) : nlohmann::json();
  if (!guess->change) {
    mark["note"] = guess->reasoning.empty() ? std::string() : guess->reasoning.back();
    if (!quiet)
      out << "first guess: no change: " << terminal_text(mark["note"].get<std::string>()) << '\n';
    return to_result(storage.set_study_user_attr(study_id, k_attr_study_first_guess, mark));
  }
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, v] : guess->params) params[name] = search::param_value_to_json(v);
  const nlohmann::json guess_attrs = {
      {k_attr_first_guess, true},
      {k_attr_guess_predicted,
       guess->predicted ? nlohmann::json(*guess->predicted) : nlohmann::json()},
      {k_attr_guess_reasoning, guess->reasoning}};
  // A setting already enqueued or run (the baseline, a rule, the user's own entries) runs once.
  // A trial still to run is marked as the guess, so the report shows the guess against it.
  for (const auto& t : cache.trials()) {
    const auto fixed = t.system_attrs.find(k_attr_fixed_params);
    if (fixed == t.system_attrs.end() || *fixed != params || is_rerun(t)) continue;
    mark["note"] = fmt::format("the guess is trial {}'s setting, already enqueued", t.number);
    if (!t.is_finished()) {
      auto marked = mark_as_guess(storage, t.trial_id, guess_attrs);
      if (!marked) return std::unexpected(marked.error());
      if (*marked) mark["trial"] = t.number;
    }
    if (!quiet)
      out << fmt::format("first guess: {} (trial {}, already enqueued)\n",
                         terminal_text(first_guess_line(*guess, baseline)), t.number);
    if (auto r = storage.set_study_user_attr(study_id, k_attr_study_first_guess, mark); !r)
      return std::unexpected(r.error().message);
    return to_result(cache.sync());
  }
  nlohmann::json attrs = guess_attrs;
  attrs[k_attr_fixed_params] = params;
  auto t = storage.create_trial(study_id, TrialState::waiting, attrs);
  if (!t) return std::unexpected(t.error().message);
  mark["trial"] = t->number;
  if (auto r = storage.set_study_user_attr(study_id, k_attr_study_first_guess, mark); !r)
    return std::unexpected(r.error().message);
  if (!quiet)
    out << fmt::format("first guess, trial {}: {}\n", t->number,
                       terminal_text(first_guess_line(*guess, baseline)));
  return to_result(cache.sync());
}

}  // namespace

Result<void> first_guess_step(std::ostream& out, Storage& storage, StudyCache& cache,
                              const StudySpec& spec, const FrozenTrial& ran, bool quiet) {
  // Only an enqueued trial (or a re-run of one) can be the baseline: every other trial costs no
  // pass over the study.
  if (cache.is_multi_objective() || !ran.system_attrs.contains(k_attr_fixed_params) ||
      ran.system_attrs.contains(k_attr_rule_only))
    return {};
  if (auto r = cache.sync(); !r) return std::unexpected(r.error().message);
  const FrozenTrial* base = find_baseline(cache);
  const FrozenTrial* ended = cache.find(ran.trial_id);
  if (base == nullptr || ended == nullptr) return {};
  if (ended->number != base->number && !load_rerun_of(*ended, base->number)) return {};
  const auto study_id = cache.study().study_id;
  auto study_attrs = storage.get_study_user_attrs(study_id);
  if (!study_attrs) return std::unexpected(study_attrs.error().message);
  if (study_attrs->contains(k_attr_study_first_guess)) return {};  // worked out already
  if (!measured_under_load(*ended)) return enqueue_guess(out, storage, cache, spec, *base, *ended, quiet);
  // Measured under load: the guess waits for the quiet re-run the runner enqueued, if any.
  for (const auto& t : cache.trials()) {
    if (!load_rerun_of(t, base->number) || t.is_finished()) continue;
    out << fmt::format(
               "first guess: after trial {}, the baseline measured again on a quiet machine "
               "(#{} ran beside {}; no guess from a loaded measurement)\n",
               t.number, ended->number, load_words(*ended))
        << std::flush;
    return {};
  }
  const nlohmann::json mark = {
      {"from_trial", nullptr},
      {"change", false},
      {"trial", nullptr},
      {"note", fmt::format("none: the baseline #{} was measured under load (the last time, #{}, "
                           "beside {}) and no quiet re-run is left in `load: {{wait}}`; no guess "
                           "from a loaded measurement",
                           base->number, ended->number, load_words(*ended))}};
  out << "first guess: " << mark["note"].get<std::string>() << '\n';
  return to_result(storage.set_study_user_attr(study_id, k_attr_study_first_guess, mark));
}

}  // namespace tune::tuner
