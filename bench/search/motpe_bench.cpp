// Multi-objective TPE's sample efficiency: the hypervolume of the front our MOTPE and random
// sampling find on ZDT1 (two parameters: f1 = x, f2 = g (1 - sqrt(x / g)), g = 1 + 9 y; both
// minimised; reference point (1.1, 11), best possible 12.1 - 1/3 = 11.767), per seed, as CSV.
// bench/search/motpe_vs_optuna.py runs it next to python3-optuna's TPESampler on the same problem.
//
//   motpe_bench SEEDS TRIALS...     method,trials,seed,hypervolume
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "search/pareto.h"
#include "search/random_sampler.h"
#include "search/sampler.h"
#include "search/tpe.h"

namespace tune::bench {
namespace {

using namespace tune::search;

double zdt1_front_volume(Sampler& sampler, int n_trials) {
  const SearchSpace space = {{"x", FloatDistribution{0.0, 1.0, false, std::nullopt}},
                             {"y", FloatDistribution{0.0, 1.0, false, std::nullopt}}};
  VectorStudyView study({Direction::minimize, Direction::minimize});
  for (int i = 0; i < n_trials; ++i) {
    FrozenTrial t;
    t.number = i;
    t.trial_id = i;
    sampler.before_trial(study, t);
    suggest_all(sampler, study, t, space);
    const double x = t.params.at("x"), g = 1.0 + 9.0 * t.params.at("y");
    t.values = {x, g * (1.0 - std::sqrt(x / g))};
    t.value = t.values[0];
    t.state = TrialState::complete;
    study.mutable_trials().push_back(std::move(t));
    sampler.after_trial(study, study.trials().back());
  }
  Losses points;
  for (const auto* t : best_trials(study)) points.push_back(t->values);
  return hypervolume(points, std::vector{1.1, 11.0});
}

}  // namespace
}  // namespace tune::bench

int main(int argc, char** argv) {
  using namespace tune::search;
  if (argc < 3) {
    std::fprintf(stderr, "usage: motpe_bench SEEDS TRIALS...\n");
    return 2;
  }
  const int seeds = std::atoi(argv[1]);
  std::printf("method,trials,seed,hypervolume\n");
  for (int a = 2; a < argc; ++a) {
    const int trials = std::atoi(argv[a]);
    for (int seed = 1; seed <= seeds; ++seed) {
      TpeOptions o;
      o.seed = static_cast<std::uint64_t>(seed);
      const auto motpe = make_tpe_sampler(o);
      const auto random = make_random_sampler(static_cast<std::uint64_t>(seed));
      std::printf("motpe,%d,%d,%.6f\n", trials, seed,
                  tune::bench::zdt1_front_volume(*motpe, trials));
      std::printf("random,%d,%d,%.6f\n", trials, seed,
                  tune::bench::zdt1_front_volume(*random, trials));
    }
  }
  return 0;
}
