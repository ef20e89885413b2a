// TPE's own behaviour: startup from the random sampler, exploitation of a good region, FAIL
// trials ignored, constant liar, constraints, options parsing.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/random_sampler.h"
#include "search/sampler_factory.h"
#include "search/tpe.h"
#include "tests/search/study_helpers.h"

namespace tune::search {
namespace {

using testing::ask;
using testing::k_plane;
using testing::quadratic;
using testing::run_study;
using testing::tell;

std::unique_ptr<Sampler> tpe(std::uint64_t seed, auto&& adjust) {
  TpeOptions o;
  o.seed = seed;
  adjust(o);
  return make_tpe_sampler(o);
}
std::unique_ptr<Sampler> tpe(std::uint64_t seed) {
  return tpe(seed, [](TpeOptions&) {});
}

TEST(Tpe, StartupTrialsComeFromTheRandomSampler) {
  auto t = tpe(5);
  auto r = make_random_sampler(5);
  VectorStudyView st(Direction::minimize), sr(Direction::minimize);
  run_study(*t, st, k_plane, quadratic, 10);
  run_study(*r, sr, k_plane, quadratic, 10);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(st.trials()[i].params, sr.trials()[i].params);
}

// `tune confirm` re-runs re-measure an earlier trial: TPE learns one observation per
// configuration, so a history with re-runs appended suggests exactly what it did without them.
TEST(Tpe, ConfirmReRunsAreNotExtraObservations) {
  VectorStudyView plain(Direction::minimize);
  {
    auto warmup = tpe(3);
    run_study(*warmup, plain, k_plane, quadratic, 15);
  }
  VectorStudyView with_repeats = plain;
  for (int n : {2, 7, 7}) {
    FrozenTrial repeat = plain.trials()[static_cast<std::size_t>(n)];
    repeat.number = static_cast<int>(with_repeats.trials().size());
    repeat.trial_id = repeat.number;
    repeat.value = 1e-9;  // a lucky re-measurement must not pull TPE towards it
    repeat.system_attrs[k_repeat_of_attr] = n;
    with_repeats.mutable_trials().push_back(repeat);
  }
  auto a = tpe(11);
  auto b = tpe(11);
  FrozenTrial ta, tb;
  ta.number = tb.number = 100;
  suggest_all(*a, plain, ta, k_plane);
  suggest_all(*b, with_repeats, tb, k_plane);
  EXPECT_EQ(ta.params, tb.params);
}

TEST(Tpe, ConcentratesOnTheGoodRegionBetterThanRandom) {
  for (bool multivariate : {false, true}) {
    std::vector<double> tpe_best, random_best;
    int tpe_near = 0, random_near = 0;
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
      auto t = tpe(seed, [&](TpeOptions& o) { o.multivariate = multivariate; });
      auto r = make_random_sampler(seed);
      VectorStudyView st(Direction::minimize), sr(Direction::minimize);
      tpe_best.push_back(run_study(*t, st, k_plane, quadratic, 60).back());
      random_best.push_back(run_study(*r, sr, k_plane, quadratic, 60).back());
      for (int i = 30; i < 60; ++i) {
        tpe_near += quadratic(st.trials()[static_cast<std::size_t>(i)].params) < 0.05;
        random_near += quadratic(sr.trials()[static_cast<std::size_t>(i)].params) < 0.05;
      }
    }
    std::sort(tpe_best.begin(), tpe_best.end());
    std::sort(random_best.begin(), random_best.end());
    EXPECT_LT(tpe_best[4], random_best[4]) << "median best, multivariate=" << multivariate;
    EXPECT_GT(tpe_near, 3 * random_near) << "late suggestions near the optimum";
  }
}

TEST(Tpe, FailedAndWaitingTrialsAreIgnored) {
  // Same seed, the same COMPLETE history and the same trial number give the same suggestion
  // whatever FAIL / WAITING trials sit in between.
  auto a = tpe(3), b = tpe(3);
  VectorStudyView sa(Direction::minimize), sb(Direction::minimize);
  auto rs = make_random_sampler(99);
  VectorStudyView seed_study(Direction::minimize);
  run_study(*rs, seed_study, k_plane, quadratic, 20);
  for (const auto& t : seed_study.trials()) {
    sa.mutable_trials().push_back(t);
    sb.mutable_trials().push_back(t);
    FrozenTrial junk = t;
    junk.state = TrialState::fail;
    junk.value = -100.0;  // would be the best if it counted
    junk.params = {{"x", -0.9}, {"y", 0.9}};
    sb.mutable_trials().push_back(junk);
    junk.state = TrialState::waiting;
    junk.value.reset();
    sb.mutable_trials().push_back(junk);
  }
  for (auto* s : {&sa, &sb}) {
    for (std::size_t i = 0; i < s->trials().size(); ++i)
      s->mutable_trials()[i].number = static_cast<int>(i);
  }
  // The trial number picks the random stream (rng.h), so both ask for the same one.
  FrozenTrial ta, tb;
  ta.number = tb.number = static_cast<int>(sb.trials().size());
  EXPECT_EQ(suggest_all(*a, sa, ta, k_plane), suggest_all(*b, sb, tb, k_plane));
}

TEST(Tpe, ConstantLiarAvoidsPointsOtherWorkersAreRunning) {
  const SearchSpace line = {{"x", FloatDistribution{0.0, 10.0, false, std::nullopt}}};
  auto objective = [](const std::map<std::string, double>& p) { return std::abs(p.at("x") - 5.0); };
  auto rs = make_random_sampler(7);
  VectorStudyView history(Direction::minimize);
  run_study(*rs, history, line, objective, 30);

  auto suggest = [&](bool liar, bool with_running, double at) {
    auto s = tpe(11, [&](TpeOptions& o) { o.constant_liar = liar; });
    VectorStudyView study = history;
    if (with_running) {
      for (int i = 0; i < 8; ++i) {
        FrozenTrial r;
        r.number = static_cast<int>(study.trials().size());
        r.state = TrialState::running;
        r.params["x"] = at;
        r.distributions["x"] = line[0].second;
        study.mutable_trials().push_back(r);
      }
    }
    // One trial number for every variant: it picks the candidates' random stream.
    FrozenTrial t;
    t.number = 100;
    return suggest_all(*s, study, t, line).at("x");
  };
  const double alone = suggest(true, false, 0.0);
  // Without the liar, RUNNING trials do not count at all.
  EXPECT_EQ(suggest(false, true, alone), alone);
  // With it, the running point counts as bad and the suggestion moves away from it.
  const double moved = suggest(true, true, alone);
  EXPECT_NE(moved, alone);
}

TEST(Tpe, ConstraintsPushSuggestionsToTheFeasibleSide) {
  const SearchSpace line = {{"x", FloatDistribution{-1.0, 1.0, false, std::nullopt}}};
  auto feasible_share = [&](bool use_constraints) {
    int feasible = 0;
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      auto s = tpe(seed, [&](TpeOptions& o) { o.constraints = use_constraints; });
      VectorStudyView study(Direction::minimize);
      for (int i = 0; i < 50; ++i) {
        const std::size_t idx = ask(*s, study, line);
        auto& t = study.mutable_trials()[idx];
        const double x = t.params.at("x");
        t.constraints = {0.5 - x};  // feasible iff x >= 0.5; the objective wants x = 0
        tell(*s, study, idx, TrialState::complete, x * x);
        if (i >= 25) feasible += x >= 0.5;
      }
    }
    return feasible;
  };
  const int with = feasible_share(true), without = feasible_share(false);
  // The best feasible point sits on the boundary x = 0.5, so about half the kernel mass around it
  // is infeasible; without constraints TPE heads for x = 0 instead.
  EXPECT_GT(with, 50) << "of 125 late suggestions; without constraints: " << without;
  EXPECT_GT(with, 3 * without);
}

TEST(Tpe, PrunedTrialsRankByTheirLastIntermediateValue) {
  // Only PRUNED trials: those that got furthest rank best, so the suggestion comes from near the
  // trial with the most steps even though its value is the worst.
  const SearchSpace line = {{"x", FloatDistribution{0.0, 1.0, false, std::nullopt}}};
  VectorStudyView study(Direction::minimize);
  for (int i = 0; i < 20; ++i) {
    FrozenTrial t;
    t.number = i;
    t.state = TrialState::pruned;
    const bool far = i == 7 || i == 13;  // the two that ran longest
    t.params["x"] = far ? 0.88 + 0.001 * i : 0.05 + 0.02 * i;
    t.distributions["x"] = line[0].second;
    t.intermediate_values[0] = 1.0;
    if (far) t.intermediate_values[50] = 100.0;
    study.mutable_trials().push_back(t);
  }
  int near = 0;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    auto s = tpe(seed);
    FrozenTrial t;
    t.number = 20;
    near += std::abs(suggest_all(*s, study, t, line).at("x") - 0.9) < 0.15;
  }
  EXPECT_GE(near, 8);
}

// max_observations bounds the bad side's estimator. A study whose bad side fits under the cap
// gets exactly the uncapped (Optuna) suggestions; over it, the thinned bad side still steers
// TPE to the good region, and every suggestion is a function of the history alone.
TEST(Tpe, UnderItsCapTheBadSideIsOptunasAndOverItStillFindsTheGoodRegion) {
  for (bool multivariate : {false, true}) {
    auto capped = tpe(2, [&](TpeOptions& o) {
      o.multivariate = multivariate;
      o.max_observations = 200;
    });
    auto uncapped = tpe(2, [&](TpeOptions& o) {
      o.multivariate = multivariate;
      o.max_observations = 0;
    });
    VectorStudyView a(Direction::minimize), b(Direction::minimize);
    run_study(*capped, a, k_plane, quadratic, 150);
    run_study(*uncapped, b, k_plane, quadratic, 150);
    for (std::size_t i = 0; i < 150; ++i) {
      ASSERT_EQ(a.trials()[i].params, b.trials()[i].params) << "trial " << i;
    }

    int capped_near = 0, random_near = 0;
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      auto small_cap = tpe(seed, [&](TpeOptions& o) {
        o.multivariate = multivariate;
        o.max_observations = 50;  // thinned from trial ~75 on
      });
      auto r = make_random_sampler(seed);
      VectorStudyView sc(Direction::minimize), sr(Direction::minimize);
      run_study(*small_cap, sc, k_plane, quadratic, 200);
      run_study(*r, sr, k_plane, quadratic, 200);
      if (seed == 0) {  // the cap is in force: the same seed uncapped goes elsewhere
        auto all = tpe(seed, [&](TpeOptions& o) {
          o.multivariate = multivariate;
          o.max_observations = 0;
        });
        VectorStudyView su(Direction::minimize);
        run_study(*all, su, k_plane, quadratic, 200);
        int differ = 0;
        for (std::size_t i = 0; i < 200; ++i)
          differ += sc.trials()[i].params != su.trials()[i].params;
        EXPECT_GT(differ, 0);
      }
      for (int i = 100; i < 200; ++i) {
        capped_near += quadratic(sc.trials()[static_cast<std::size_t>(i)].params) < 0.05;
        random_near += quadratic(sr.trials()[static_cast<std::size_t>(i)].params) < 0.05;
      }
      // The same history gives the same suggestion from a fresh sampler.
      auto again = tpe(seed, [&](TpeOptions& o) {
        o.multivariate = multivariate;
        o.max_observations = 50;
      });
      FrozenTrial x, y;
      x.number = y.number = 200;
      suggest_all(*small_cap, sc, x, k_plane);
      suggest_all(*again, sc, y, k_plane);
      EXPECT_EQ(x.params, y.params);
    }
    EXPECT_GT(capped_near, 3 * random_near) << "multivariate=" << multivariate;
  }
}

// What TPE keeps between suggestions (observation keys, the split, the thinned bad side) follows
// a finished trial whose value is replaced afterwards, as `tune confirm` does: the next
// suggestion is the one a fresh sampler makes on the changed history.
TEST(Tpe, AReplacedValueIsLearnedAsAFreshSamplerLearnsIt) {
  for (int cap : {0, 60}) {
    auto kept = tpe(4, [&](TpeOptions& o) { o.max_observations = cap; });
    VectorStudyView study(Direction::minimize);
    run_study(*kept, study, k_plane, quadratic, 100);
    FrozenTrial warm;  // the sampler reads the history up to here
    warm.number = 100;
    suggest_all(*kept, study, warm, k_plane);
    // The best trial turns out bad on re-measurement.
    std::size_t best = 0;
    for (std::size_t i = 1; i < study.trials().size(); ++i) {
      if (*study.trials()[i].value < *study.trials()[best].value) best = i;
    }
    FrozenTrial worse = study.trials()[best];
    worse.value = 1e6;
    study.replace(best, worse);
    auto fresh = tpe(4, [&](TpeOptions& o) { o.max_observations = cap; });
    FrozenTrial a, b;
    a.number = b.number = 101;
    suggest_all(*kept, study, a, k_plane);
    suggest_all(*fresh, study, b, k_plane);
    EXPECT_EQ(a.params, b.params) << "max_observations " << cap;
  }
}

TEST(Tpe, ParsesOptionsAndNamesUnknownKeys) {
  auto o = tpe_options_from_json(nlohmann::json{{"type", "tpe"},
                                                {"seed", 4},
                                                {"n_startup_trials", 3},
                                                {"n_ei_candidates", 48},
                                                {"multivariate", true},
                                                {"group", true},
                                                {"constant_liar", true}});
  ASSERT_TRUE(o.has_value()) << o.error();
  EXPECT_EQ(o->seed, 4U);
  EXPECT_EQ(o->n_startup_trials, 3);
  EXPECT_EQ(o->n_ei_candidates, 48);
  EXPECT_TRUE(o->multivariate && o->group && o->constant_liar);
  auto bad = tpe_options_from_json(nlohmann::json{{"type", "tpe"}, {"n_ei_candidatez", 4}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("n_ei_candidatez"), std::string::npos);
  auto group = tpe_options_from_json(nlohmann::json{{"group", true}});
  ASSERT_FALSE(group.has_value());
  EXPECT_NE(group.error().find("multivariate"), std::string::npos);
  EXPECT_FALSE(tpe_options_from_json(nlohmann::json{{"seed", -1}}).has_value());
  EXPECT_FALSE(tpe_options_from_json(nlohmann::json{{"consider_prior", 1}}).has_value());
  EXPECT_EQ(tpe_options_from_json(nlohmann::json{{"max_observations", 0}})->max_observations, 0);
  EXPECT_EQ(TpeOptions{}.max_observations, 1000);
  auto tiny = tpe_options_from_json(nlohmann::json{{"max_observations", 10}});
  ASSERT_FALSE(tiny.has_value());
  EXPECT_NE(tiny.error().find("sampler.max_observations"), std::string::npos);
}

TEST(Tpe, MakeSamplerBuildsTpeAndNamesBadOptions) {
  auto s = make_sampler(nlohmann::json{{"type", "tpe"}}, k_plane);
  ASSERT_TRUE(s.has_value()) << s.error();
  auto bad = make_sampler(nlohmann::json{{"type", "tpe"}, {"gama", 1}}, k_plane);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("gama"), std::string::npos);
}

}  // namespace
}  // namespace tune::search
