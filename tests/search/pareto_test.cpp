// Pareto maths (search/pareto.h) and multi-objective TPE (search/motpe.h, tpe.cpp on a study with
// two directions): dominance, nondomination ranks, exact hypervolumes against a brute-force count,
// contributions, greedy subset selection, best_trials, the good/bad split and its weights, and
// MOTPE finding a better front than random sampling on a ZDT1-shaped problem.
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "search/motpe.h"
#include "search/pareto.h"
#include "search/random_sampler.h"
#include "search/rng.h"
#include "search/sampler.h"
#include "search/sampler_factory.h"
#include "search/tpe.h"
#include "tests/search/study_helpers.h"

namespace tune::search {
namespace {

TEST(Pareto, DominanceNeedsOneStrictlyBetterCoordinate) {
  EXPECT_TRUE(dominates(std::vector{1.0, 2.0}, std::vector{1.0, 3.0}));
  EXPECT_FALSE(dominates(std::vector{1.0, 2.0}, std::vector{1.0, 2.0}));
  EXPECT_FALSE(dominates(std::vector{1.0, 4.0}, std::vector{2.0, 3.0}));
  const std::vector<Direction> dirs = {Direction::minimize, Direction::maximize};
  EXPECT_EQ(to_losses(std::vector{3.0, 0.8}, dirs), (std::vector{3.0, -0.8}));
}

TEST(Pareto, NondominationRanksPeelFrontsAndStopWhenEnoughAreRanked) {
  const Losses points = {{1, 5}, {2, 2}, {5, 1}, {3, 3}, {4, 4}, {2, 2}, {6, 6}};
  EXPECT_EQ(nondomination_ranks(points), (std::vector{0, 0, 0, 1, 2, 0, 3}));
  const auto early = nondomination_ranks(points, 5);
  EXPECT_EQ(early[0], 0);
  EXPECT_EQ(early[3], 1);
  EXPECT_EQ(early[4], std::numeric_limits<int>::max()) << "ranks 0 and 1 already hold 5";
}

TEST(Pareto, HypervolumeInTwoDimensions) {
  const std::vector<double> ref = {4, 4};
  EXPECT_DOUBLE_EQ(hypervolume({{1, 3}, {2, 2}, {3, 1}}, ref), 6.0);
  EXPECT_DOUBLE_EQ(hypervolume({{1, 3}, {2, 2}, {3, 1}, {3, 3}, {2, 2}}, ref), 6.0)
      << "dominated and repeated points add nothing";
  EXPECT_DOUBLE_EQ(hypervolume({{5, 1}}, ref), 0.0) << "outside the reference";
}

// Integer points: the volume is the count of unit cells some point dominates.
double brute_force_volume(const Losses& points, int ref, std::size_t dims) {
  double cells = 0;
  std::vector<int> cell(dims, 0);
  while (true) {
    const bool covered = std::ranges::any_of(points, [&](const auto& p) {
      for (std::size_t d = 0; d < dims; ++d)
        if (p[d] > cell[d]) return false;
      return true;
    });
    cells += covered ? 1 : 0;
    std::size_t d = 0;
    while (d < dims && ++cell[d] == ref) cell[d++] = 0;
    if (d == dims) return cells;
  }
}

TEST(Pareto, HypervolumeInThreeAndFourDimensionsMatchesACount) {
  Rng rng(7);
  for (std::size_t dims : {3u, 4u}) {
    for (int round = 0; round < 20; ++round) {
      Losses points(8, std::vector<double>(dims));
      for (auto& p : points)
        for (auto& v : p) v = std::floor(rng.uniform() * 6);
      const std::vector<double> ref(dims, 6.0);
      EXPECT_DOUBLE_EQ(hypervolume(points, ref), brute_force_volume(points, 6, dims))
          << dims << " dimensions, round " << round;
    }
  }
}

TEST(Pareto, ContributionsAreWhatEachPointAloneAdds) {
  const Losses points = {{1, 3}, {2, 2}, {3, 1}, {3, 3}};
  const std::vector<double> ref = {4, 4};
  EXPECT_EQ(hypervolume_contributions(points, ref), (std::vector{1.0, 1.0, 1.0, 0.0}));
}

TEST(Pareto, ReferencePointIsTheWorstMovedOutward) {
  EXPECT_EQ(reference_point({{1, -2}, {3, -5}}), (std::vector{3.3000000000000003, -1.8}));
  EXPECT_EQ(reference_point({{0, 1}})[0], 1e-12);
}

TEST(Pareto, GreedySubsetTakesTheLargestGainFirst) {
  const Losses points = {{1, 9}, {4, 4}, {9, 1}, {5, 5}};
  const std::vector<double> ref = {10, 10};
  // Alone: 9, 36, 9, 25. After (4,4): (1,9) adds 3, (9,1) adds 3, (5,5) adds 0.
  EXPECT_EQ(select_by_hypervolume(points, 3, ref), (std::vector<std::size_t>{1, 0, 2}));
  EXPECT_EQ(select_by_hypervolume(points, 9, ref).size(), 4U);
}

FrozenTrial with_values(int number, TrialState state, std::vector<double> values) {
  FrozenTrial t;
  t.number = number;
  t.state = state;
  t.value = values.front();
  t.values = std::move(values);
  return t;
}

TEST(Pareto, BestTrialsAreTheFrontOfCompleteTrialsInNumberOrder) {
  VectorStudyView study({Direction::minimize, Direction::maximize});
  auto& trials = study.mutable_trials();
  trials.push_back(with_values(0, TrialState::complete, {2.0, 0.80}));
  trials.push_back(with_values(1, TrialState::complete, {1.0, 0.70}));
  trials.push_back(with_values(2, TrialState::complete, {3.0, 0.75}));  // beaten by #0
  trials.push_back(with_values(3, TrialState::pruned, {0.5, 0.99}));    // not COMPLETE
  trials.push_back(with_values(4, TrialState::complete, {2.0, 0.80}));  // equal to #0: kept
  trials.push_back(with_values(5, TrialState::complete, {4.0, 0.90}));
  std::vector<int> numbers;
  for (const auto* t : best_trials(study)) numbers.push_back(t->number);
  EXPECT_EQ(numbers, (std::vector{0, 1, 4, 5}));
}

TEST(Motpe, SplitTakesWholeFrontsThenTheBestSubsetOfTheNext) {
  // Front 0: #1, #3. Front 1: #0, #2, #4 -- of which two more are needed.
  const Losses losses = {{2, 6}, {1, 5}, {4, 4}, {3, 1}, {6, 2}, {7, 7}};
  std::vector<std::size_t> below, above;
  detail::split_multi_objective(losses, 4, {}, below, above);
  ASSERT_EQ(below.size(), 4U);
  EXPECT_TRUE(std::ranges::find(below, 1u) != below.end());
  EXPECT_TRUE(std::ranges::find(below, 3u) != below.end());
  EXPECT_TRUE(std::ranges::is_sorted(below)) << "chronological order";
  EXPECT_EQ(below.size() + above.size(), losses.size());
  EXPECT_TRUE(std::ranges::find(above, 5u) != above.end());
}

TEST(Motpe, InfeasibleTrialsGoAboveAndWeighNothing) {
  const Losses losses = {{1, 1}, {2, 2}, {3, 0.5}, {0.5, 3}};
  const std::vector<double> violations = {3.0, 0.0, 0.0, 0.0};
  std::vector<std::size_t> below, above;
  detail::split_multi_objective(losses, 2, violations, below, above);
  EXPECT_TRUE(std::ranges::find(above, 0u) != above.end()) << "the best losses, but infeasible";
  const auto weights = detail::below_weights(losses, std::vector<std::size_t>{0, 2, 3}, violations);
  EXPECT_EQ(weights[0], 1e-12);
  EXPECT_DOUBLE_EQ(std::max(weights[1], weights[2]), 1.0);
  EXPECT_EQ(detail::below_weights(losses, std::vector<std::size_t>{2}, {}), (std::vector{1.0}));
}

// ZDT1 on two parameters: f1 = x, f2 = g (1 - sqrt(x / g)) with g = 1 + 9 y; the front is y = 0.
const SearchSpace k_zdt_space = {{"x", FloatDistribution{0.0, 1.0, false, std::nullopt}},
                                 {"y", FloatDistribution{0.0, 1.0, false, std::nullopt}}};

double front_volume(Sampler& sampler, int n_trials) {
  VectorStudyView study({Direction::minimize, Direction::minimize});
  for (int i = 0; i < n_trials; ++i) {
    const auto idx = testing::ask(sampler, study, k_zdt_space);
    auto& t = study.mutable_trials()[idx];
    const double x = t.params.at("x"), g = 1.0 + 9.0 * t.params.at("y");
    t.values = {x, g * (1.0 - std::sqrt(x / g))};
    t.value = t.values[0];
    t.state = TrialState::complete;
    sampler.after_trial(study, t);
  }
  Losses points;
  for (const auto* t : best_trials(study)) points.push_back(t->values);
  return hypervolume(points, std::vector{1.1, 11.0});
}

TEST(Motpe, FindsABetterFrontThanRandomSampling) {
  int wins = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    TpeOptions o;
    o.seed = seed;
    auto motpe = make_tpe_sampler(o);
    auto random = make_random_sampler(seed);
    wins += front_volume(*motpe, 60) > front_volume(*random, 60);
  }
  EXPECT_GE(wins, 4) << "MOTPE's front dominates more than random's in most seeds";
}

TEST(Motpe, LearnsFromCompleteTrialsOnly) {
  TpeOptions o;
  o.seed = 3;
  o.constant_liar = true;
  auto sampler = make_tpe_sampler(o);
  VectorStudyView study({Direction::minimize, Direction::maximize});
  testing::run_study(*sampler, study, k_zdt_space, testing::quadratic, 15);
  auto suggest = [&] {
    FrozenTrial trial;
    trial.number = 40;
    suggest_all(*sampler, study, trial, k_zdt_space);
    return trial.params;
  };
  const auto before = suggest();
  FrozenTrial running = study.trials()[2];
  running.number = 15;
  running.state = TrialState::running;
  running.values.clear();
  study.mutable_trials().push_back(running);
  EXPECT_EQ(suggest(), before) << "a RUNNING trial is no observation (no constant liar)";
}

TEST(Motpe, SamplerChoiceForSeveralObjectives) {
  const auto gp = make_sampler({{"type", "gp"}}, k_zdt_space, 2);
  ASSERT_FALSE(gp.has_value());
  EXPECT_NE(gp.error().find("gp models one objective"), std::string::npos) << gp.error();
  EXPECT_TRUE(make_sampler(nlohmann::json(), k_zdt_space, 2).has_value());
  EXPECT_TRUE(make_sampler({{"type", "gp"}}, k_zdt_space, 1).has_value());
}

}  // namespace
}  // namespace tune::search
