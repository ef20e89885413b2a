// The median and percentile pruners (Optuna 3.1's MedianPruner and PercentilePruner): the
// threshold among COMPLETE trials at the current step, the trial's best report so far against
// it, startup trials, warm-up steps, interval steps, n_min_trials, NaN, option errors. The
// expected decisions were cross-checked with python3-optuna 3.1 on the same studies.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/pruner.h"
#include "tests/search/study_helpers.h"

namespace tune::search {
namespace {

using testing::curve;

std::unique_ptr<Pruner> pruner(nlohmann::json config) {
  auto p = make_pruner(config);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error());
  return p ? std::move(*p) : nullptr;
}

// COMPLETE trials 0.. with flat curves at `values` over `steps` steps.
VectorStudyView study_of(Direction direction, const std::vector<double>& values, int steps = 10) {
  VectorStudyView study(direction);
  for (const double v : values) {
    const int number = static_cast<int>(study.trials().size());
    study.mutable_trials().push_back(curve(number, TrialState::complete, v, steps));
  }
  return study;
}

// A RUNNING trial that reported `reports` at steps 0, 1, ...
FrozenTrial running(const VectorStudyView& study, const std::vector<double>& reports) {
  FrozenTrial t = curve(static_cast<int>(study.trials().size()), TrialState::running, 0.0, 0);
  for (std::size_t s = 0; s < reports.size(); ++s)
    t.intermediate_values[static_cast<std::int64_t>(s)] = reports[s];
  return t;
}

TEST(MedianPruner, ComparesTheBestReportSoFarWithTheMedianAtThisStep) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 0}});
  const auto study = study_of(Direction::minimize, {1, 2, 3, 4, 5});  // median 3
  EXPECT_TRUE(p->prune(study, running(study, {10, 3.5})));
  EXPECT_FALSE(p->prune(study, running(study, {10, 2.5})));
  EXPECT_FALSE(p->prune(study, running(study, {10, 3.0}))) << "equal to the median survives";
  EXPECT_FALSE(p->prune(study, running(study, {2, 3.5}))) << "an earlier good report counts";
}

TEST(MedianPruner, MaximizeKeepsTheUpperHalf) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 0}});
  const auto study = study_of(Direction::maximize, {1, 2, 3, 4, 5});
  EXPECT_TRUE(p->prune(study, running(study, {0, 2.5})));
  EXPECT_FALSE(p->prune(study, running(study, {0, 3.5})));
  EXPECT_FALSE(p->prune(study, running(study, {4, 2.5})));
}

TEST(MedianPruner, WaitsForStartupTrialsThatAreComplete) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 5}});
  auto study = study_of(Direction::minimize, {1, 2, 3, 4});
  // Unfinished and pruned trials neither count as startup trials nor set the median.
  study.mutable_trials().push_back(curve(4, TrialState::running, 100, 10));
  study.mutable_trials().push_back(curve(5, TrialState::pruned, 100, 10));
  study.mutable_trials().push_back(curve(6, TrialState::fail, 100, 10));
  EXPECT_FALSE(p->prune(study, running(study, {50})));
  study.mutable_trials().push_back(curve(7, TrialState::complete, 5, 10));
  EXPECT_TRUE(p->prune(study, running(study, {50})));
  EXPECT_TRUE(p->prune(study, running(study, {3.5})));  // median of 1..5 is 3
}

TEST(MedianPruner, NothingIsJudgedDuringWarmUp) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 0}, {"n_warmup_steps", 3}});
  const auto study = study_of(Direction::minimize, {1, 2, 3});
  EXPECT_FALSE(p->prune(study, running(study, {50})));
  EXPECT_FALSE(p->prune(study, running(study, {50, 50, 50})));
  EXPECT_TRUE(p->prune(study, running(study, {50, 50, 50, 50})));
}

TEST(MedianPruner, OnlyTheFirstReportOfEachIntervalIsJudged) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 0}, {"interval_steps", 3}});
  const auto study = study_of(Direction::minimize, {1, 2, 3});
  std::vector<bool> judged;
  std::vector<double> reports;
  for (int step = 0; step < 7; ++step) {
    reports.push_back(50);
    judged.push_back(p->prune(study, running(study, reports)));
  }
  EXPECT_EQ(judged, (std::vector<bool>{true, false, false, true, false, false, true}));
  // A trial that skipped steps 1..3 is judged at step 4, its first report in [3, 6).
  FrozenTrial sparse = running(study, {50});
  sparse.intermediate_values[4] = 50;
  EXPECT_TRUE(p->prune(study, sparse));
}

TEST(MedianPruner, NeedsNMinTrialsReportingAtThisStep) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 0}, {"n_min_trials", 3}});
  auto study = study_of(Direction::minimize, {1, 2}, 10);
  study.mutable_trials().push_back(curve(2, TrialState::complete, 3, 2));  // steps 0, 1 only
  EXPECT_TRUE(p->prune(study, running(study, {50})));                      // three report at step 0
  FrozenTrial late = running(study, {});
  late.intermediate_values[5] = 50;  // only two report at step 5
  EXPECT_FALSE(p->prune(study, late));
}

// Optuna counts a NaN report towards n_min_trials (then takes the percentile of the rest).
TEST(MedianPruner, NanReportsCountTowardsNMinTrials) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 0}, {"n_min_trials", 3}});
  auto study = study_of(Direction::minimize, {1, 2});
  auto nan_at_0 = curve(2, TrialState::complete, 1000, 10);
  nan_at_0.intermediate_values[0] = std::nan("");
  study.mutable_trials().push_back(nan_at_0);
  EXPECT_TRUE(p->prune(study, running(study, {50})));
}

TEST(MedianPruner, NanReports) {
  auto p = pruner({{"type", "median"}, {"n_startup_trials", 0}});
  auto study = study_of(Direction::minimize, {1, 2, 3});
  for (int i = 0; i < 2; ++i) {
    auto t = curve(3 + i, TrialState::complete, 1000, 10);
    t.intermediate_values[0] = std::nan("");
    study.mutable_trials().push_back(t);
  }
  // Others' NaN reports are left out: the median at step 0 is 2, not pulled towards 1000.
  EXPECT_TRUE(p->prune(study, running(study, {2.5})));
  EXPECT_FALSE(p->prune(study, running(study, {1.5})));
  // A trial whose every report is NaN has nothing to keep it alive; one good report does.
  EXPECT_TRUE(p->prune(study, running(study, {std::nan("")})));
  EXPECT_FALSE(p->prune(study, running(study, {1.0, std::nan("")})));
}

TEST(PercentilePruner, InterpolatesBetweenClosestRanks) {
  // 25th percentile of 1..5 is 2; of 1..4 (numpy's linear rule) 1.75.
  auto p = pruner({{"type", "percentile"}, {"percentile", 25.0}, {"n_startup_trials", 0}});
  const auto five = study_of(Direction::minimize, {5, 3, 1, 4, 2});
  EXPECT_TRUE(p->prune(five, running(five, {2.1})));
  EXPECT_FALSE(p->prune(five, running(five, {2.0})));
  const auto four = study_of(Direction::minimize, {1, 2, 3, 4});
  EXPECT_TRUE(p->prune(four, running(four, {1.8})));
  EXPECT_FALSE(p->prune(four, running(four, {1.7})));
}

TEST(PercentilePruner, MaximizeUsesTheMirroredPercentile) {
  // Keep the top 25% when maximizing: the threshold is the 75th percentile, 4 of 1..5.
  auto p = pruner({{"type", "percentile"}, {"percentile", 25.0}, {"n_startup_trials", 0}});
  const auto study = study_of(Direction::maximize, {1, 2, 3, 4, 5});
  EXPECT_TRUE(p->prune(study, running(study, {3.9})));
  EXPECT_FALSE(p->prune(study, running(study, {4.0})));
}

TEST(PercentilePruner, ExtremePercentiles) {
  const auto study = study_of(Direction::minimize, {1, 2, 3});
  // 0: only a trial as good as the best survives; 100: only one worse than the worst is cut.
  auto strict = pruner({{"type", "percentile"}, {"percentile", 0.0}, {"n_startup_trials", 0}});
  EXPECT_TRUE(strict->prune(study, running(study, {1.5})));
  EXPECT_FALSE(strict->prune(study, running(study, {1.0})));
  auto lenient = pruner({{"type", "percentile"}, {"percentile", 100.0}, {"n_startup_trials", 0}});
  EXPECT_FALSE(lenient->prune(study, running(study, {3.0})));
  EXPECT_TRUE(lenient->prune(study, running(study, {3.5})));
}

TEST(PercentilePruner, OptionErrorsNameTheKey) {
  auto error = [](nlohmann::json config) {
    auto p = make_pruner(config);
    return p ? std::string() : p.error();
  };
  EXPECT_NE(error({{"type", "percentile"}}).find("pruner.percentile: required"), std::string::npos);
  EXPECT_NE(error({{"type", "percentile"}, {"percentile", 101}}).find("pruner.percentile"),
            std::string::npos);
  EXPECT_NE(error({{"type", "median"}, {"percentile", 50}}).find("pruner.percentile"),
            std::string::npos)
      << "the median pruner's percentile is fixed";
  EXPECT_NE(error({{"type", "median"}, {"n_min_trials", 0}}).find("pruner.n_min_trials"),
            std::string::npos);
  EXPECT_NE(error({{"type", "median"}, {"interval_steps", 0}}).find("pruner.interval_steps"),
            std::string::npos);
  EXPECT_NE(error({{"type", "median"}, {"n_warmup_steps", -1}}).find("pruner.n_warmup_steps"),
            std::string::npos);
  EXPECT_NE(error({{"type", "median"}, {"n_startup_trials", 1.5}}).find("pruner.n_startup"),
            std::string::npos);
  EXPECT_NE(error({{"type", "medain"}}).find("unknown pruner 'medain'"), std::string::npos);
  EXPECT_EQ(error(nullptr), "") << "no pruner section: nothing is pruned";
}

}  // namespace
}  // namespace tune::search
