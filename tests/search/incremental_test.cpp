// The samplers that keep what they derived from the history and fold in only what the study's
// change log names (GP's observations, TPE's observation keys and spaces, the intersection
// search space: issue 27) suggest exactly what they suggest reading the whole history afresh.
// A recorded study is replayed trial by trial into two views: one with a change log (add,
// replace), one rebuilt before every suggestion (no log: every sampler starts from scratch);
// a sampler of each kind, same seed, on each view must suggest the same bits at every trial,
// through RUNNING trials of other workers (constant liar), failures, pruned trials, re-runs,
// constraints and values replaced after the fact.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "search/sampler.h"
#include "search/sampler_factory.h"
#include "search/search_space.h"

namespace tune::search {
namespace {

SearchSpace space() {
  return {{"a", FloatDistribution{0.0, 1.0, false, std::nullopt}},
          {"b", FloatDistribution{1e-3, 10.0, true, std::nullopt}},
          {"c", IntDistribution{1, 16, false, 1}},
          {"d", CategoricalDistribution{{"x", "y", "z"}}}};
}

double objective(const FrozenTrial& t) {
  const double a = t.params.at("a"), b = std::log(t.params.at("b"));
  return (a - 0.3) * (a - 0.3) + 0.1 * (b - 1.0) * (b - 1.0) + 0.01 * t.params.at("c") +
         (t.params.at("d") == 1.0 ? 0.0 : 0.2);
}

// How trial `t` (its params sampled) ends, picked by `rng`: mostly COMPLETE, some FAIL, some
// PRUNED with a curve, some infeasible, some re-runs of an earlier trial.
FrozenTrial ended(FrozenTrial t, std::mt19937& rng) {
  const int pick = static_cast<int>(rng() % 12);
  t.state = TrialState::complete;
  t.value = objective(t);
  if (pick == 0) {
    t.state = TrialState::fail;
    t.value.reset();
  } else if (pick == 1) {
    t.state = TrialState::pruned;
    t.value.reset();
    t.intermediate_values = {{1, 0.5}, {2, 0.25 + 0.01 * (rng() % 10)}};
  } else if (pick == 2) {
    t.constraints = {0.3};
  } else if (pick == 3) {
    t.constraints = {-0.2};
  }
  return t;
}

void expect_same_suggestions(const nlohmann::json& config) {
  SCOPED_TRACE(config.dump());
  const SearchSpace sp = space();
  auto logged_sampler = make_sampler(config, sp);
  auto plain_sampler = make_sampler(config, sp);
  ASSERT_TRUE(logged_sampler && plain_sampler);
  VectorStudyView logged(Direction::minimize), plain(Direction::minimize);
  std::mt19937 rng(19);
  std::vector<std::size_t> running;  // positions of trials "another worker" still runs
  for (int n = 0; n < 90; ++n) {
    FrozenTrial t;
    t.number = n;
    t.trial_id = 500 + n;
    t.state = TrialState::running;
    if (n > 20 && rng() % 10 == 0) t.system_attrs[k_repeat_of_attr] = static_cast<int>(rng() % 20);
    // The runner's own trial is in the study, RUNNING without params, when it samples.
    logged.add(t);
    plain.mutable_trials() = logged.trials();
    FrozenTrial a = t, b = t;
    const auto pa = suggest_all(**logged_sampler, logged, a, sp);
    const auto pb = suggest_all(**plain_sampler, plain, b, sp);
    ASSERT_EQ(pa.size(), sp.size());
    for (const auto& [name, v] : pa) {
      ASSERT_EQ(std::bit_cast<std::uint64_t>(v), std::bit_cast<std::uint64_t>(pb.at(name)))
          << "trial " << n << " param " << name << ": " << v << " vs " << pb.at(name);
    }
    // Its params stored (a change), then it runs on as another worker's trial or ends.
    logged.replace(static_cast<std::size_t>(n), a);
    if (rng() % 3 == 0) {
      running.push_back(static_cast<std::size_t>(n));
    } else {
      logged.replace(static_cast<std::size_t>(n), ended(a, rng));
    }
    // Now and then another worker's trial ends, or a COMPLETE trial's value is replaced.
    if (!running.empty() && rng() % 2 == 0) {
      const std::size_t k = rng() % running.size();
      logged.replace(running[k], ended(logged.trials()[running[k]], rng));
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (n > 10 && rng() % 6 == 0) {
      const auto k = static_cast<std::size_t>(rng() % static_cast<unsigned>(n));
      FrozenTrial old = logged.trials()[k];
      if (old.state == TrialState::complete && old.value) {
        old.value = *old.value * 1.5;
        logged.replace(k, old);
      }
    }
    for (const std::size_t k : running) {
      ASSERT_EQ(logged.trials()[k].state, TrialState::running);
    }
  }
}

TEST(IncrementalSamplers, GpSuggestsWhatAFullReadSuggests) {
  expect_same_suggestions({{"type", "gp"}, {"seed", 3}, {"max_trials", 30}});
}

TEST(IncrementalSamplers, TpeSuggestsWhatAFullReadSuggests) {
  expect_same_suggestions({{"type", "tpe"}, {"seed", 3}, {"constant_liar", true}});
  expect_same_suggestions({{"type", "tpe"}, {"seed", 4}, {"multivariate", true}, {"group", true}});
  expect_same_suggestions({{"type", "tpe"}, {"seed", 5}, {"multivariate", true}});
}

// The intersection space through the log equals one built from every trial.
TEST(IncrementalSamplers, IntersectionSpaceThroughTheLogEqualsAFullRead) {
  VectorStudyView logged(Direction::minimize);
  IntersectionSearchSpace kept;
  std::mt19937 rng(2);
  for (int n = 0; n < 60; ++n) {
    FrozenTrial t;
    t.number = n;
    t.state = rng() % 4 ? TrialState::complete : TrialState::running;
    for (const auto& [name, dist] : space()) {
      if (n < 40 || name != "d" || rng() % 2) t.distributions[name] = dist;
    }
    logged.add(t);
    kept.update(logged);
    VectorStudyView plain(Direction::minimize);
    plain.mutable_trials() = logged.trials();
    IntersectionSearchSpace full;
    full.update(plain);
    const auto a = kept.get(), b = full.get();
    ASSERT_EQ(a.size(), b.size()) << "trial " << n;
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].first, b[i].first);
  }
}

}  // namespace
}  // namespace tune::search
