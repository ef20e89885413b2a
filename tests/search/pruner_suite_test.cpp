// The suite every pruner passes (none, median, percentile, successive halving, Hyperband), as
// the sampler suite does for samplers: nothing is pruned before it reports or with nobody to
// compare against, the best trial survives, a hopeless one does not, minimize and maximize
// mirror each other, and a decision depends on the study alone (a fresh pruner from the same
// configuration, as in another tune process sharing the study, decides the same).
#include <cmath>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/pruner.h"
#include "tests/search/study_helpers.h"

namespace tune::search {
namespace {

using testing::curve;

struct PrunerCase {
  std::string name;
  nlohmann::json config;        // the study file's `pruner:` section
  bool prunes_hopeless = true;  // false for the pruner that never prunes
};

void PrintTo(const PrunerCase& c, std::ostream* os) { *os << c.name; }

const std::vector<PrunerCase>& cases() {
  static const std::vector<PrunerCase> all = {
      {"none", {{"type", "none"}}, false},
      {"median", {{"type", "median"}, {"n_startup_trials", 5}}},
      {"percentile", {{"type", "percentile"}, {"percentile", 25.0}, {"n_startup_trials", 5}}},
      {"successive_halving",
       {{"type", "successive_halving"}, {"min_resource", 1}, {"reduction_factor", 2}}},
      {"hyperband",
       {{"type", "hyperband"}, {"min_resource", 1}, {"max_resource", 27}, {"reduction_factor", 3}}},
  };
  return all;
}

constexpr int k_steps = 28;  // every Hyperband bracket judges a trial this long at least once

// 60 COMPLETE trials whose curves are flat at 1..10 (negated for maximize, so that the same
// trials are good in both directions): enough for every pruner's startup and every bracket.
VectorStudyView finished_study(Direction direction) {
  const double sign = direction == Direction::minimize ? 1.0 : -1.0;
  VectorStudyView study(direction);
  for (int i = 0; i < 60; ++i)
    study.mutable_trials().push_back(
        curve(i, TrialState::complete, sign * (1.0 + i % 10), k_steps));
  return study;
}

class PrunerSuite : public ::testing::TestWithParam<PrunerCase> {
 protected:
  std::unique_ptr<Pruner> make() const {
    auto pruner = make_pruner(GetParam().config);
    EXPECT_TRUE(pruner.has_value()) << (pruner ? "" : pruner.error());
    return pruner ? std::move(*pruner) : nullptr;
  }

  // Reports value(step) at steps 0, 1, ... and asks the pruner after each report, as the runner
  // does; the step at which it says prune, or none.
  static std::optional<int> pruned_at(Pruner& pruner, const StudyView& study, int number,
                                      const std::function<double(int)>& value) {
    FrozenTrial trial = curve(number, TrialState::running, 0.0, 0);
    for (int step = 0; step < k_steps; ++step) {
      trial.intermediate_values[step] = value(step);
      if (pruner.prune(study, trial)) return step;
    }
    return std::nullopt;
  }
};

TEST_P(PrunerSuite, NothingReportedIsNeverPruned) {
  auto pruner = make();
  ASSERT_TRUE(pruner);
  const auto study = finished_study(Direction::minimize);
  EXPECT_FALSE(pruner->prune(study, curve(60, TrialState::running, 0.0, 0)));
}

TEST_P(PrunerSuite, AloneInTheStudyIsNeverPruned) {
  auto pruner = make();
  ASSERT_TRUE(pruner);
  const VectorStudyView empty(Direction::minimize);
  EXPECT_EQ(pruned_at(*pruner, empty, 0, [](int) { return 1e9; }), std::nullopt);
}

TEST_P(PrunerSuite, TheBestTrialIsNeverPruned) {
  for (const auto direction : {Direction::minimize, Direction::maximize}) {
    auto pruner = make();
    ASSERT_TRUE(pruner);
    const auto study = finished_study(direction);
    const double best = direction == Direction::minimize ? 0.5 : -0.5;
    for (int number = 60; number < 80; ++number) {
      EXPECT_EQ(pruned_at(*pruner, study, number, [&](int) { return best; }), std::nullopt)
          << "trial " << number << (direction == Direction::minimize ? " minimize" : " maximize");
    }
  }
}

TEST_P(PrunerSuite, AHopelessTrialIsPruned) {
  for (const auto direction : {Direction::minimize, Direction::maximize}) {
    auto pruner = make();
    ASSERT_TRUE(pruner);
    const auto study = finished_study(direction);
    const double hopeless = direction == Direction::minimize ? 1000.0 : -1000.0;
    for (int number = 60; number < 80; ++number) {
      const auto at = pruned_at(*pruner, study, number, [&](int) { return hopeless; });
      EXPECT_EQ(at.has_value(), GetParam().prunes_hopeless) << "trial " << number;
    }
  }
}

TEST_P(PrunerSuite, OnlyNanReportsArePruned) {
  auto pruner = make();
  ASSERT_TRUE(pruner);
  const auto study = finished_study(Direction::minimize);
  const auto at = pruned_at(*pruner, study, 60, [](int) { return std::nan(""); });
  EXPECT_EQ(at.has_value(), GetParam().prunes_hopeless);
}

// Negating every value and flipping the direction changes no decision.
TEST_P(PrunerSuite, MaximizeMirrorsMinimize) {
  auto on_min = make(), on_max = make();
  ASSERT_TRUE(on_min && on_max);
  const auto min_study = finished_study(Direction::minimize);
  const auto max_study = finished_study(Direction::maximize);
  for (int number = 60; number < 100; ++number) {
    // A curve that starts mediocre and ends anywhere from good to bad, one per trial.
    const double end = 0.25 * (number - 60);
    auto curve_at = [&](int step) { return 5.0 + (end - 5.0) * step / (k_steps - 1); };
    const auto a = pruned_at(*on_min, min_study, number, curve_at);
    const auto b = pruned_at(*on_max, max_study, number, [&](int s) { return -curve_at(s); });
    EXPECT_EQ(a, b) << "trial " << number;
  }
}

// A pruner keeps no state that changes its decisions: asked twice, or built afresh (another
// tune process sharing the study), it decides the same.
TEST_P(PrunerSuite, DecisionsDependOnTheStudyAlone) {
  auto used = make();
  ASSERT_TRUE(used);
  const auto study = finished_study(Direction::minimize);
  for (int number = 60; number < 100; ++number) {
    const double level = 0.25 * (number - 60);
    auto value = [&](int) { return level; };
    const auto first = pruned_at(*used, study, number, value);
    EXPECT_EQ(pruned_at(*used, study, number, value), first) << "trial " << number;
    auto fresh = make();
    EXPECT_EQ(pruned_at(*fresh, study, number, value), first) << "trial " << number;
  }
}

TEST_P(PrunerSuite, AnUnknownOptionIsAnErrorNamingIt) {
  auto config = GetParam().config;
  config["n_startup_trails"] = 3;
  auto pruner = make_pruner(config);
  ASSERT_FALSE(pruner.has_value());
  EXPECT_NE(pruner.error().find("n_startup_trails"), std::string::npos) << pruner.error();
}

INSTANTIATE_TEST_SUITE_P(AllPruners, PrunerSuite, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tune::search
