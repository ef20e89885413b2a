#include "tuner/run/follow_ups.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "probes/topology.h"
#include "tuner/base/number_format.h"
#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/launcher.h"
#include "tuner/run/load_check.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

Result<void> believe_reruns(Storage& storage, StudyCache& cache, const FrozenTrial& rerun) {
  const auto of = rerun_of(rerun);
  if (!of) return {};
  if (auto r = cache.sync(); !r) return to_result(r);
  const auto& trials = cache.trials();
  const auto original = std::find_if(trials.begin(), trials.end(),
                                     [&](const FrozenTrial& t) { return t.number == *of; });
  if (original == trials.end() || original->state != TrialState::complete || !original->value)
    return {};  // a re-run of the baseline that failed, say: nothing to believe
  const auto values = rerun_values_of(cache, *of);
  if (values.empty()) return {};
  // The searched value is kept (k_attr_search_value) in the same transaction: the trial is
  // finished, and takes no attribute write of its own.
  auto set =
      storage.set_complete_trial_value(original->trial_id, median(values), k_attr_search_value);
  if (!set) return std::unexpected(set.error().message);
  cache.mark_stale(original->trial_id);
  return to_result(cache.sync());
}

Result<int> enqueue_incumbent_reruns(Storage& storage, StudyCache& cache, BestTracker& tracker,
                                     const search::SearchSpace& space, int repeats) {
  if (repeats <= 0) return 0;
  if (auto r = cache.sync(); !r) return std::unexpected(r.error().message);
  const FrozenTrial* best = tracker.best(cache);
  if (best == nullptr) return 0;
  const int number = best->number;
  if (tracker.has_reruns(cache, number)) return 0;
  auto fixed = fixed_params_of(*best, space);
  if (!fixed) return std::unexpected(fixed.error());
  for (int round = 0; round < repeats; ++round) {
    auto t = storage.create_trial(
        cache.study().study_id, TrialState::waiting,
        {{k_attr_fixed_params, *fixed}, {k_attr_rerun_of, number}, {k_attr_rerun_round, round}});
    if (!t) return std::unexpected(t.error().message);
  }
  if (auto r = cache.sync(); !r) return std::unexpected(r.error().message);
  return repeats;
}

Result<void> enqueue_load_rerun(Storage& storage, StudyCache& cache,
                                const search::SearchSpace& space, const FrozenTrial& trial) {
  if (cache.is_multi_objective()) return {};
  if (auto r = cache.sync(); !r) return std::unexpected(r.error().message);
  const int number = rerun_of(trial).value_or(trial.number);
  const FrozenTrial* original = nullptr;
  int reruns = 0, for_load = 0;
  for (const auto& t : cache.trials()) {
    if (t.number == number) original = &t;
    if (rerun_of(t) != number) continue;
    ++reruns;
    const auto cause = t.system_attrs.find(k_attr_rerun_cause);
    if (cause == t.system_attrs.end() || *cause != "load") continue;
    ++for_load;
    if (!t.is_finished()) return {};  // one is on its way already
  }
  // A re-run stands for a completed trial's value (believe_reruns); a failed or pruned one has
  // none to correct.
  if (original == nullptr || original->state != TrialState::complete || !original->value ||
      for_load >= k_max_load_reruns)
    return {};
  auto fixed = fixed_params_of(*original, space);
  if (!fixed) return std::unexpected(fixed.error());
  auto t = storage.create_trial(cache.study().study_id, TrialState::waiting,
                                {{k_attr_fixed_params, *fixed},
                                 {k_attr_rerun_of, number},
                                 {k_attr_rerun_round, reruns},
                                 {k_attr_rerun_cause, "load"}});
  if (!t) return std::unexpected(t.error().message);
  return to_result(cache.sync());
}

void wait_for_quiet(std::ostream& out, const StudyCache& cache, const LoadSpec& load,
                    std::optional<double> time_left_s, QuietWaits& waits) {
  // No pass over the study for the common case; with the load not judged (load: off,
  // TUNE_LOAD_CHECK=off), a re-run an earlier run enqueued is not waited for either.
  if (!load.check || cache.waiting() == 0) return;
  // The trial the runner takes next: the oldest WAITING one (Storage::pop_waiting_trial).
  const FrozenTrial* next = nullptr;
  for (const auto& t : cache.trials()) {
    if (t.state != TrialState::waiting) continue;
    if (next == nullptr || t.trial_id < next->trial_id) next = &t;
  }
  if (next == nullptr || !next->system_attrs.contains(k_attr_rerun_cause)) return;
  const auto of = rerun_of(*next);
  if (!of) return;
  // The limit the trial was judged by, the CPUs it was judged on, and the load it was measured
  // under.
  double limit = load.max_external_cpus;
  std::vector<int> cpus;
  int measured = *of;
  for (const auto& t : cache.trials()) {
    if (t.number != *of && rerun_of(t) != *of) continue;
    const auto it = t.user_attrs.find(k_attr_measured_under_load);
    if (it == t.user_attrs.end() || !it->is_object()) continue;
    limit = it->value("limit", limit);
    cpus = probes::parse_cpu_list(it->value("cpus", std::string()));
    measured = std::max(measured, t.number);  // the latest
  }
  double budget = load.wait_s - waits.waited_s;
  if (time_left_s) budget = std::min(budget, *time_left_s);
  if (budget <= 0) return;
  constexpr double k_step_s = 0.5;
  // The wait is said once per run, not before each re-run.
  std::ostringstream unsaid;
  const auto wait =
      wait_until_quiet(live_load_sample(k_step_s, cpus), k_step_s, limit, budget, measured,
                       waits.said ? unsaid : out, [] { return interrupted(); });
  waits.waited_s += wait.waited_s;
  waits.said = waits.said || wait.said;
  if (!wait.said || interrupted()) return;
  if (wait.quiet) {
    out << fmt::format("tune: the machine is quiet after {}; trial {} is measured again\n",
                       format_duration(wait.waited_s), *of)
        << std::flush;
  } else {
    out << fmt::format(
               "tune: the machine stayed busy ({:.2g} CPUs outside the study) for {}, what `load: "
               "{{wait}}` allows; going on: trials measured under load stay marked\n",
               wait.last_cpus.value_or(0), format_duration(waits.waited_s))
        << std::flush;
  }
}

}  // namespace tune::tuner
