// fANOVA importance: a dominant parameter gets the largest share, one without effect ~0.
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "search/importance.h"
#include "search/rng.h"

namespace tune::search {
namespace {

SearchSpace space() {
  return {{"threads", IntDistribution{1, 32, false, 1}},
          {"bucket", FloatDistribution{1.0, 100.0, true, std::nullopt}},
          {"noise", FloatDistribution{0.0, 1.0, false, std::nullopt}},
          {"algo", CategoricalDistribution{{std::string("ring"), std::string("tree"),
                                            std::string("direct")}}},
          {"fixed", IntDistribution{4, 4, false, 1}}};
}

std::vector<FrozenTrial> trials(int n) {
  Rng rng(17);
  std::vector<FrozenTrial> out;
  for (int i = 0; i < n; ++i) {
    FrozenTrial t;
    t.number = i;
    t.state = TrialState::complete;
    t.params["threads"] = static_cast<double>(1 + rng.below(32));
    t.params["bucket"] = std::exp(rng.uniform(0.0, std::log(100.0)));
    t.params["noise"] = rng.uniform();
    t.params["algo"] = static_cast<double>(rng.below(3));
    t.params["fixed"] = 4.0;
    const double algo_cost[] = {0.0, 0.3, 0.1};
    t.value = std::pow(t.params["threads"] - 12.0, 2) / 10.0 + 0.3 * std::log(t.params["bucket"]) +
              algo_cost[static_cast<int>(t.params["algo"])];
    out.push_back(std::move(t));
  }
  return out;
}

TEST(Importance, DominantParameterFirstIrrelevantOneNearZero) {
  auto result = fanova_importance(trials(150), space());
  ASSERT_TRUE(result.has_value()) << result.error();
  std::map<std::string, double> share(result->begin(), result->end());
  ASSERT_EQ(result->size(), 5U);
  EXPECT_EQ(result->front().first, "threads");
  EXPECT_GT(share["threads"], 0.6);
  EXPECT_LT(share["noise"], 0.02);
  EXPECT_EQ(share["fixed"], 0.0);
  EXPECT_GT(share["bucket"], share["noise"]);
  double total = 0.0;
  for (const auto& [name, s] : *result) {
    EXPECT_GE(s, 0.0);
    total += s;
  }
  EXPECT_NEAR(total, 1.0, 1e-9);
}

TEST(Importance, DeterministicForASeedAndIgnoresUnusableTrials) {
  auto history = trials(60);
  history[3].state = TrialState::fail;
  history[4].params.erase("noise");
  history[5].state = TrialState::running;
  auto a = fanova_importance(history, space());
  auto b = fanova_importance(history, space());
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(*a, *b);
}

// Each share's interval over forests fit to bootstrap resamples: it holds the share, the shares
// are fanova_importance's own, the same seed gives the same intervals, a dominant parameter's
// interval lies above a parameter without effect, and fewer trials widen it.
TEST(Importance, IntervalsHoldTheShareAndSeparateWhatMatters) {
  const auto history = trials(60);
  const auto plain = fanova_importance(history, space());
  const auto a = fanova_importance_with_interval(history, space());
  const auto b = fanova_importance_with_interval(history, space());
  ASSERT_TRUE(plain && a && b);
  ASSERT_EQ(a->size(), plain->size());
  std::map<std::string, ImportanceShare> by_name;
  for (std::size_t i = 0; i < a->size(); ++i) {
    const auto& s = (*a)[i];
    EXPECT_EQ(s.name, (*plain)[i].first);
    EXPECT_EQ(s.share, (*plain)[i].second);
    EXPECT_LE(s.low, s.share);
    EXPECT_GE(s.high, s.share);
    EXPECT_EQ(s.low, (*b)[i].low);
    EXPECT_EQ(s.high, (*b)[i].high);
    by_name[s.name] = s;
  }
  EXPECT_GT(by_name["threads"].low, by_name["noise"].high);
  EXPECT_EQ(by_name["fixed"].high, 0.0);
  const auto few = fanova_importance_with_interval(trials(12), space());
  ASSERT_TRUE(few);
  double width_few = 0, width_many = 0;
  for (const auto& s : *few) width_few += s.high - s.low;
  for (const auto& s : *a) width_many += s.high - s.low;
  EXPECT_GT(width_few, width_many);
  ImportanceOptions none;
  none.resamples = 0;
  const auto without = fanova_importance_with_interval(history, space(), none);
  ASSERT_TRUE(without);
  for (const auto& s : *without) {
    EXPECT_EQ(s.low, s.share);
    EXPECT_EQ(s.high, s.share);
  }
}

TEST(Importance, TooFewTrialsIsAnError) {
  auto result = fanova_importance(trials(1), space());
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().find("2"), std::string::npos);
}

}  // namespace
}  // namespace tune::search
