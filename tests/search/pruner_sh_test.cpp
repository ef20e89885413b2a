// Successive halving and Hyperband: rung promotion steps, the top-1/rf rule, bootstrap, auto
// resources, option errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/pruner.h"
#include "search/pruners_sh.h"
#include "tests/search/study_helpers.h"

namespace tune::search {
namespace {

using testing::curve;

VectorStudyView finished_study(Direction direction, int steps) {
  VectorStudyView study(direction);
  for (int i = 0; i < 4; ++i) {
    study.mutable_trials().push_back(curve(i, TrialState::complete, 1.0 + i, steps));
  }
  return study;
}

std::unique_ptr<Pruner> sh(nlohmann::json config) {
  auto p = make_successive_halving_pruner(config);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error());
  return std::move(*p);
}

TEST(SuccessiveHalving, KeepsTheTopFractionAtEachRung) {
  const auto study = finished_study(Direction::minimize, 9);
  auto pruner = sh({{"min_resource", 1}, {"reduction_factor", 2}});
  // At step 1 (rung 0) five values compete: {1, 2, 3, 4, v}; the best 5/2 - 1 = index 1 passes.
  EXPECT_TRUE(pruner->prune(study, curve(9, TrialState::running, 3.5, 2)));
  EXPECT_FALSE(pruner->prune(study, curve(9, TrialState::running, 1.5, 2)));
  // Before the first rung's step nothing is judged.
  EXPECT_FALSE(pruner->prune(study, curve(9, TrialState::running, 100.0, 1)));
  // A NaN report at a rung prunes.
  auto nan_trial = curve(9, TrialState::running, 1.0, 2);
  nan_trial.intermediate_values[1] = std::nan("");
  EXPECT_TRUE(pruner->prune(study, nan_trial));
}

TEST(SuccessiveHalving, LaterRungsAndMaximize) {
  const auto study = finished_study(Direction::maximize, 9);
  auto pruner = sh({{"min_resource", 1}, {"reduction_factor", 2}, {"min_early_stopping_rate", 1}});
  // Rungs at steps 2, 4, 8. A trial that was good early but reports 2.5 at step 4: at rung 1
  // (step 4) {1, 2, 3, 4, 2.5} -> must be >= second best (3) to be promoted.
  auto t = curve(9, TrialState::running, 4.5, 4);
  t.intermediate_values[4] = 2.5;
  EXPECT_TRUE(pruner->prune(study, t));
  t.intermediate_values[4] = 3.0;
  EXPECT_FALSE(pruner->prune(study, t));
}

TEST(SuccessiveHalving, BootstrapCountPrunesUntilEnoughCompetitors) {
  const auto study = finished_study(Direction::minimize, 9);
  auto pruner = sh({{"min_resource", 1}, {"reduction_factor", 2}, {"bootstrap_count", 5}});
  EXPECT_TRUE(pruner->prune(study, curve(9, TrialState::running, 0.1, 2)));
}

TEST(SuccessiveHalving, AutoMinResourceFromTheLongestCompleteTrial) {
  VectorStudyView empty(Direction::minimize);
  auto pruner = sh({{"min_resource", "auto"}, {"reduction_factor", 2}});
  EXPECT_FALSE(pruner->prune(empty, curve(0, TrialState::running, 100.0, 50)));
  // Longest complete trial: last step 300 -> min_resource 3: step 2 is too early, 3 is judged.
  auto study = finished_study(Direction::minimize, 301);
  auto fresh = sh({{"reduction_factor", 2}});
  EXPECT_FALSE(fresh->prune(study, curve(9, TrialState::running, 100.0, 3)));
  EXPECT_TRUE(fresh->prune(study, curve(9, TrialState::running, 100.0, 4)));
}

TEST(SuccessiveHalving, OptionErrorsNameTheKey) {
  auto bad = make_successive_halving_pruner({{"reduction_factor", 1}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("reduction_factor"), std::string::npos);
  auto unknown = make_successive_halving_pruner({{"min_resourse", 1}});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().find("min_resourse"), std::string::npos);
  EXPECT_FALSE(make_successive_halving_pruner({{"bootstrap_count", 2}}).has_value());
}

TEST(Hyperband, PrunesTheHopelessAndKeepsTheBest) {
  auto p =
      make_hyperband_pruner({{"min_resource", 1}, {"max_resource", 27}, {"reduction_factor", 3}});
  ASSERT_TRUE(p.has_value()) << p.error();
  VectorStudyView study(Direction::minimize);
  for (int i = 0; i < 200; ++i)
    study.mutable_trials().push_back(curve(i, TrialState::complete, 1.0 + i % 10, 28));
  int pruned_bad = 0, pruned_good = 0;
  for (int n = 200; n < 220; ++n) {
    pruned_bad += (*p)->prune(study, curve(n, TrialState::running, 50.0, 28));
    pruned_good += (*p)->prune(study, curve(n, TrialState::running, 0.5, 28));
  }
  EXPECT_EQ(pruned_good, 0);
  EXPECT_EQ(pruned_bad, 20) << "every bracket judges a 28-step trial at least once";
}

TEST(Hyperband, AutoMaxResourceWaitsForACompleteTrial) {
  auto p = make_hyperband_pruner(nlohmann::json::object());
  ASSERT_TRUE(p.has_value());
  VectorStudyView study(Direction::minimize);
  EXPECT_FALSE((*p)->prune(study, curve(0, TrialState::running, 100.0, 30)));
  EXPECT_FALSE(make_hyperband_pruner({{"max_resource", "many"}}).has_value());
  EXPECT_FALSE(make_hyperband_pruner({{"bootstrap_count", 1}}).has_value());
  auto unknown = make_hyperband_pruner({{"brackets", 3}});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().find("brackets"), std::string::npos);
}

TEST(Pruners, MakePrunerReachesSuccessiveHalvingAndHyperband) {
  EXPECT_TRUE(make_pruner({{"type", "successive_halving"}, {"min_resource", 2}}).has_value());
  EXPECT_TRUE(make_pruner({{"type", "hyperband"}, {"max_resource", 81}}).has_value());
}

}  // namespace
}  // namespace tune::search
