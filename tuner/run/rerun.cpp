#include "tuner/run/rerun.h"

#include <algorithm>

#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"

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

}  // namespace tune::tuner
