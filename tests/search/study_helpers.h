// Helpers for the search tests: run a small sequential study against an in-memory StudyView,
// or build trials with learning curves for the pruners.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "search/sampler.h"

namespace tune::search::testing {

using Objective = std::function<double(const std::map<std::string, double>&)>;

// Asks the sampler for one trial (before_trial, suggest_all), appends it as RUNNING and returns
// its index in the study.
inline std::size_t ask(Sampler& sampler, VectorStudyView& study, const SearchSpace& space) {
  FrozenTrial trial;
  trial.number = static_cast<int>(study.trials().size());
  trial.trial_id = trial.number;
  trial.state = TrialState::running;
  sampler.before_trial(study, trial);
  suggest_all(sampler, study, trial, space);
  study.mutable_trials().push_back(std::move(trial));
  return study.trials().size() - 1;
}

// Finishes a trial. In a study of several objectives, `value` is the first one's and objective k
// pulls against it, -k * value: every trial is on the front (a pure trade-off, which leaves the
// split to hypervolume selection), and a flat objective stays flat.
inline void tell(Sampler& sampler, VectorStudyView& study, std::size_t index, TrialState state,
                 std::optional<double> value) {
  FrozenTrial& t = study.mutable_trials()[index];
  t.state = state;
  t.value = value;
  t.values.clear();
  if (value && study.is_multi_objective()) {
    t.values.push_back(*value);
    for (std::size_t k = 1; k < study.directions().size(); ++k)
      t.values.push_back(-*value * static_cast<double>(k));
  }
  sampler.after_trial(study, t);
}

// A trial that reported `value` at steps 0..steps-1 (and, when COMPLETE, finished with it).
inline FrozenTrial curve(int number, TrialState state, double value, int steps) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = number;
  t.state = state;
  for (int s = 0; s < steps; ++s) t.intermediate_values[s] = value;
  if (state == TrialState::complete) t.value = value;
  return t;
}

// n sequential trials; returns the best value seen after each trial.
// A smooth two-parameter test problem: a bowl with its minimum 0 at (0.3, -0.2).
inline const SearchSpace k_plane = {{"x", FloatDistribution{-1.0, 1.0, false, std::nullopt}},
                                    {"y", FloatDistribution{-1.0, 1.0, false, std::nullopt}}};
inline double quadratic(const std::map<std::string, double>& p) {
  return (p.at("x") - 0.3) * (p.at("x") - 0.3) + (p.at("y") + 0.2) * (p.at("y") + 0.2);
}

inline std::vector<double> run_study(Sampler& sampler, VectorStudyView& study,
                                     const SearchSpace& space, const Objective& objective,
                                     int n_trials) {
  std::vector<double> best;
  double b = 0.0;
  for (int i = 0; i < n_trials; ++i) {
    const std::size_t idx = ask(sampler, study, space);
    const double v = objective(study.trials()[idx].params);
    tell(sampler, study, idx, TrialState::complete, v);
    const bool minimize = study.direction() == Direction::minimize;
    if (i == 0 || (minimize ? v < b : v > b)) b = v;
    best.push_back(b);
  }
  return best;
}

}  // namespace tune::search::testing
