// The GP sampler and its parts: the model (fit, posterior), the optimiser, the encoding, the
// acquisition; then the sampler's own behaviour: startup, exploitation ahead of TPE on a smooth
// function, constant liar, constraints, re-runs, options.
#include <algorithm>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/gp.h"
#include "search/gp_acquisition.h"
#include "search/gp_sampler.h"
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

// A seeded GP sampler, its options adjusted by the test.
std::unique_ptr<Sampler> gp(std::uint64_t seed,
                            const std::function<void(GpOptions&)>& adjust = nullptr) {
  GpOptions options;
  options.seed = seed;
  if (adjust) adjust(options);
  return make_gp_sampler(options);
}

TEST(GpModel, LbfgsFindsTheMinimumOfRosenbrock) {
  std::vector<double> x = {-1.2, 1.0};
  const double v = detail::minimize_lbfgs(
      [](std::span<const double> p, std::span<double> g) {
        const double a = 1.0 - p[0], b = p[1] - p[0] * p[0];
        g[0] = -2.0 * a - 400.0 * p[0] * b;
        g[1] = 200.0 * b;
        return a * a + 100.0 * b * b;
      },
      x, 200);
  EXPECT_LT(v, 1e-8);
  EXPECT_NEAR(x[0], 1.0, 1e-3);
  EXPECT_NEAR(x[1], 1.0, 1e-3);
}

TEST(GpModel, InterpolatesDataAndIsUnsureAwayFromIt) {
  detail::GpData data;
  data.d = 2;
  data.categorical = {false, true};  // a numeric dimension and a two-choice categorical one
  for (int i = 0; i <= 10; ++i) {
    const double u = i / 10.0;
    data.x.insert(data.x.end(), {u, 0.0});
    data.y.push_back(std::sin(6.0 * u));
  }
  const detail::GaussianProcess model(data);
  double mean = 0.0, var = 0.0;
  model.predict(std::vector<double>{0.35, 0.0}, mean, var);
  EXPECT_NEAR(mean, std::sin(2.1), 0.05) << "between two observations";
  double far_mean = 0.0, far_var = 0.0;
  model.predict(std::vector<double>{0.35, 1.0}, far_mean, far_var);
  EXPECT_GT(far_var, 10.0 * var) << "the unobserved choice is uncertain";
  EXPECT_LT(model.noise_variance(), 1e-2) << "noise-free data";
}

// The batched posterior and acquisition give the single-point numbers bit for bit, for any
// count of points (whole and partial batches of four) and with a constraint model.
TEST(GpModel, PredictionsInBatchesAreThoseOfOnePointAtATime) {
  detail::GpData data;
  data.d = 3;
  data.categorical = {false, false, true};
  for (int i = 0; i < 23; ++i) {
    const double u = std::fmod(0.37 * i, 1.0), v = std::fmod(0.61 * i + 0.2, 1.0);
    data.x.insert(data.x.end(), {u, v, static_cast<double>(i % 3)});
    data.y.push_back(std::sin(5.0 * u) + v * v - 0.3 * (i % 3));
  }
  const detail::GaussianProcess model(data);
  detail::GpData cdata = data;
  for (std::size_t i = 0; i < cdata.y.size(); ++i) cdata.y[i] = cdata.x[i * 3] - 0.5;
  const detail::GaussianProcess constraint(cdata);
  detail::Acquisition acquisition;
  acquisition.objective = &model;
  acquisition.has_best = true;
  acquisition.best = -1.0;
  acquisition.constraints = {&constraint};
  acquisition.thresholds = {0.0};
  for (const std::size_t m : {1u, 4u, 7u, 13u}) {
    std::vector<double> points;
    for (std::size_t p = 0; p < m; ++p)
      points.insert(points.end(), {std::fmod(0.13 * p + 0.05, 1.0), std::fmod(0.29 * p, 1.0),
                                   static_cast<double>(p % 3)});
    std::vector<double> mean(m), variance(m), scores;
    model.predict_many(points, mean, variance);
    acquisition.score_many(points, m, scores);
    ASSERT_EQ(scores.size(), m);
    for (std::size_t p = 0; p < m; ++p) {
      const std::span<const double> x(&points[p * 3], 3);
      double one_mean = 0.0, one_variance = 0.0;
      model.predict(x, one_mean, one_variance);
      EXPECT_EQ(mean[p], one_mean) << m << " points, point " << p;
      EXPECT_EQ(variance[p], one_variance) << m << " points, point " << p;
      EXPECT_EQ(scores[p], acquisition(x)) << m << " points, point " << p;
    }
  }
}

TEST(GpEncoding, DecodeRoundsOntoTheGridAndEncodeInvertsIt) {
  const auto ints = detail::encoded_dim(IntDistribution{1, 16, true, 1});
  const auto stepped = detail::encoded_dim(FloatDistribution{0.5, 2.5, false, 0.5});
  const auto cats = detail::encoded_dim(CategoricalDistribution{{std::string("a"), true}});
  for (double v = 1.0; v <= 16.0; v += 1.0) {
    EXPECT_EQ(detail::decode(ints, detail::encode(ints, v)), v);
  }
  EXPECT_EQ(detail::decode(ints, 0.0), 1.0);
  EXPECT_EQ(detail::decode(ints, 1.0), 16.0);
  EXPECT_EQ(detail::decode(stepped, 0.51), 1.5);
  EXPECT_EQ(detail::decode(cats, 0.7), 1.0);
  EXPECT_EQ(detail::decode(cats, 5.0), 1.0);
  // Every grid point owns an equal share of [0, 1].
  EXPECT_NEAR(detail::encode(stepped, 0.5), 0.1, 1e-12);
  EXPECT_NEAR(detail::encode(stepped, 2.5), 0.9, 1e-12);
}

TEST(GpAcquisition, LogExpectedImprovementIsSmoothIntoTheTail) {
  // Exact form around the switch at z = -6 and monotone in the mean far into the tail.
  const double below = detail::log_expected_improvement(6.0 - 1e-9, 1.0, 0.0);
  const double above = detail::log_expected_improvement(6.0 + 1e-9, 1.0, 0.0);
  EXPECT_NEAR(below, above, 0.005);
  EXPECT_GT(detail::log_expected_improvement(30.0, 1.0, 0.0),
            detail::log_expected_improvement(31.0, 1.0, 0.0));
  EXPECT_TRUE(std::isfinite(detail::log_expected_improvement(200.0, 1.0, 0.0)));
  EXPECT_NEAR(std::exp(detail::log_expected_improvement(0.0, 1.0, 0.0)), 0.3989422804, 1e-6);
}

TEST(GpSampler, StartupTrialsComeFromTheRandomSampler) {
  auto g = gp(5);
  auto r = make_random_sampler(5);
  VectorStudyView sg(Direction::minimize), sr(Direction::minimize);
  run_study(*g, sg, k_plane, quadratic, 6);
  run_study(*r, sr, k_plane, quadratic, 6);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(sg.trials()[i].params, sr.trials()[i].params);
  EXPECT_NE(sg.trials()[5].params, sr.trials()[5].params) << "the model's first suggestion";
}

TEST(GpSampler, FindsTheOptimumOfASmoothFunctionFasterThanTpe) {
  std::vector<double> gp_best, tpe_best;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    auto g = gp(seed);
    TpeOptions o;
    o.seed = seed;
    auto t = make_tpe_sampler(o);
    VectorStudyView sg(Direction::minimize), st(Direction::minimize);
    gp_best.push_back(run_study(*g, sg, k_plane, quadratic, 25).back());
    tpe_best.push_back(run_study(*t, st, k_plane, quadratic, 25).back());
  }
  std::sort(gp_best.begin(), gp_best.end());
  std::sort(tpe_best.begin(), tpe_best.end());
  EXPECT_LT(gp_best[2], 1e-3) << "median best after 25 trials";
  EXPECT_LT(gp_best[2], 0.1 * tpe_best[2]);
}

TEST(GpSampler, MaximisesWhenTheStudyMaximises) {
  auto g = gp(2);
  VectorStudyView study(Direction::maximize);
  const auto best = run_study(
      *g, study, k_plane, [](const auto& p) { return -quadratic(p); }, 25);
  EXPECT_GT(best.back(), -1e-3);
}

TEST(GpSampler, ConfirmReRunsAreNotExtraObservations) {
  VectorStudyView plain(Direction::minimize);
  {
    auto warmup = gp(3);
    run_study(*warmup, plain, k_plane, quadratic, 15);
  }
  VectorStudyView with_repeats = plain;
  FrozenTrial repeat = plain.trials()[2];
  repeat.number = static_cast<int>(with_repeats.trials().size());
  repeat.value = -5.0;  // a lucky re-measurement must not pull the model towards it
  repeat.system_attrs[k_repeat_of_attr] = 2;
  with_repeats.mutable_trials().push_back(repeat);
  auto a = gp(11), b = gp(11);
  FrozenTrial ta, tb;
  ta.number = tb.number = 100;
  EXPECT_EQ(suggest_all(*a, plain, ta, k_plane), suggest_all(*b, with_repeats, tb, k_plane));
}

TEST(GpSampler, ConstantLiarAvoidsPointsOtherWorkersAreRunning) {
  VectorStudyView history(Direction::minimize);
  {
    auto warmup = gp(4);
    run_study(*warmup, history, k_plane, quadratic, 20);
  }
  auto suggest = [&](bool liar, const std::map<std::string, double>* running) {
    auto s = gp(11, [&](GpOptions& o) { o.constant_liar = liar; });
    VectorStudyView study = history;
    if (running) {
      FrozenTrial r;
      r.number = static_cast<int>(study.trials().size());
      r.state = TrialState::running;
      r.params = *running;
      for (const auto& [name, dist] : k_plane) r.distributions[name] = dist;
      study.mutable_trials().push_back(r);
    }
    FrozenTrial t;
    t.number = 100;
    return suggest_all(*s, study, t, k_plane);
  };
  const auto alone = suggest(true, nullptr);
  EXPECT_EQ(suggest(false, &alone), alone) << "without the liar RUNNING trials do not count";
  const auto moved = suggest(true, &alone);
  const double distance = std::hypot(moved.at("x") - alone.at("x"), moved.at("y") - alone.at("y"));
  EXPECT_GT(distance, 1e-3) << "a second worker does not run the same point";
}

// A PRUNED trial was stopped for looking bad: the model takes it as the worst value seen, so
// the next suggestion leaves its point (ignoring it would suggest the same point again).
TEST(GpSampler, PrunedTrialsCountAsTheWorstValue) {
  VectorStudyView study(Direction::minimize);
  {
    auto warmup = gp(4);
    run_study(*warmup, study, k_plane, quadratic, 20);
  }
  auto suggest = [&](const VectorStudyView& history) {
    auto s = gp(11);
    FrozenTrial t;
    t.number = 100;
    return suggest_all(*s, history, t, k_plane);
  };
  const auto before = suggest(study);
  FrozenTrial pruned;
  pruned.number = static_cast<int>(study.trials().size());
  pruned.state = TrialState::pruned;
  pruned.params = before;
  for (const auto& [name, dist] : k_plane) pruned.distributions[name] = dist;
  pruned.intermediate_values[0] = 1e-9;  // a promising start does not make it good
  study.mutable_trials().push_back(pruned);
  const auto after = suggest(study);
  EXPECT_GT(std::hypot(after.at("x") - before.at("x"), after.at("y") - before.at("y")), 1e-3);
}

TEST(GpSampler, ConstraintsLeadToTheBestFeasiblePoint) {
  const SearchSpace line = {{"x", FloatDistribution{-1.0, 1.0, false, std::nullopt}}};
  // Late suggestions within 0.05 of the constrained optimum x = 0.5 (feasible iff x >= 0.5; the
  // objective x^2 wants x = 0), and the best feasible value found.
  auto run = [&](bool use_constraints, double& best_feasible) {
    int near = 0;
    best_feasible = 0.0;
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      auto s = gp(seed, [&](GpOptions& o) { o.constraints = use_constraints; });
      VectorStudyView study(Direction::minimize);
      double best = 1e9;
      for (int i = 0; i < 30; ++i) {
        const std::size_t idx = ask(*s, study, line);
        auto& t = study.mutable_trials()[idx];
        const double x = t.params.at("x");
        t.constraints = {0.5 - x};
        tell(*s, study, idx, TrialState::complete, x * x);
        if (i >= 15) near += std::abs(x - 0.5) < 0.05;
        if (x >= 0.5) best = std::min(best, x * x);
      }
      best_feasible = std::max(best_feasible, best);
    }
    return near;
  };
  double best_with = 0.0, best_without = 0.0;
  const int with = run(true, best_with), without = run(false, best_without);
  EXPECT_GE(with, 30) << "of 45 late suggestions; without constraints: " << without;
  EXPECT_GT(with, 3 * without);
  EXPECT_LT(best_with, 0.26) << "worst of the seeds' best feasible values (optimum 0.25)";
}

TEST(GpSampler, ConditionalParametersComeFromTheIndependentSampler) {
  // "momentum" exists only in some trials: outside the intersection space, so sampled by the
  // independent TPE, while x and y come from the model.
  auto s = gp(6);
  VectorStudyView study(Direction::minimize);
  for (int i = 0; i < 20; ++i) {
    SearchSpace space = k_plane;
    if (i % 2 == 0) space.emplace_back("momentum", FloatDistribution{0.0, 1.0, false, {}});
    const std::size_t idx = ask(*s, study, space);
    const auto& p = study.trials()[idx].params;
    ASSERT_EQ(p.size(), space.size());
    tell(*s, study, idx, TrialState::complete, quadratic(p) + (i % 2 == 0 ? p.at("momentum") : 0));
  }
  FrozenTrial t;
  t.number = 20;
  EXPECT_EQ(s->infer_relative_search_space(study, t).size(), 2U);
}

// The study file's default (no `sampler:`, or one without a type) is the GP with its defaults.
TEST(GpSampler, IsTheDefaultSampler) {
  for (const nlohmann::json& config : {nlohmann::json(), nlohmann::json{{"seed", 4}}}) {
    auto by_default = make_sampler(config, k_plane);
    ASSERT_TRUE(by_default.has_value()) << by_default.error();
    auto explicit_gp = gp(4);
    VectorStudyView a(Direction::minimize), b(Direction::minimize);
    run_study(**by_default, a, k_plane, quadratic, 8);
    run_study(*explicit_gp, b, k_plane, quadratic, 8);
    if (config.contains("seed")) {
      for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(a.trials()[i].params, b.trials()[i].params);
    }
  }
}

// Workers of one study share its history and their seed; with the constant liar each sees the
// others' RUNNING trials and goes elsewhere, rather than all running the model's one best point
// (without it, this test fails: the workers pile onto the same points).
TEST(GpSampler, ConcurrentWorkersSuggestDistinctPoints) {
  VectorStudyView study(Direction::minimize);
  std::vector<std::unique_ptr<Sampler>> workers;
  for (int w = 0; w < 4; ++w) workers.push_back(gp(9));
  for (int round = 0; round < 5; ++round) {
    std::vector<std::size_t> started;
    for (auto& w : workers) started.push_back(ask(*w, study, k_plane));
    for (std::size_t i = 0; i < started.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        const auto& p = study.trials()[started[i]].params;
        const auto& q = study.trials()[started[j]].params;
        EXPECT_GT(std::hypot(p.at("x") - q.at("x"), p.at("y") - q.at("y")), 1e-3)
            << "round " << round << ", workers " << j << " and " << i;
      }
    }
    for (std::size_t i = 0; i < started.size(); ++i) {
      tell(*workers[i], study, started[i], TrialState::complete,
           quadratic(study.trials()[started[i]].params));
    }
  }
}

// After tpe_after finished trials the GP hands every parameter to its TPE: each suggestion is
// then the one a TPE with the same seed and options makes on the same history.
TEST(GpSampler, HandsOverToTpeAfterTpeAfterTrials) {
  auto sampler = gp(3, [](GpOptions& o) { o.tpe_after = 20; });
  VectorStudyView study(Direction::minimize);
  run_study(*sampler, study, k_plane, quadratic, 30);
  TpeOptions t;
  t.seed = 3;
  t.n_startup_trials = GpOptions{}.n_startup_trials;
  t.constant_liar = true;
  for (std::size_t i = 15; i < 30; ++i) {
    VectorStudyView prefix(Direction::minimize);
    for (std::size_t k = 0; k < i; ++k) prefix.add(study.trials()[k]);
    auto tpe = make_tpe_sampler(t);
    FrozenTrial x;
    x.number = static_cast<int>(i);
    suggest_all(*tpe, prefix, x, k_plane);
    if (i < 20) {
      EXPECT_NE(x.params, study.trials()[i].params) << "trial " << i << " is still the GP's";
    } else {
      EXPECT_EQ(x.params, study.trials()[i].params) << "trial " << i;
    }
  }
  EXPECT_EQ(GpOptions{}.tpe_after, 200);
  EXPECT_EQ(gp_options_from_json({{"tpe_after", 0}})->tpe_after, 0);
  EXPECT_FALSE(gp_options_from_json({{"tpe_after", -1}}).has_value());
}

TEST(GpSampler, ParsesOptionsAndNamesUnknownKeys) {
  auto o = gp_options_from_json({{"type", "gp"},
                                 {"seed", 3},
                                 {"n_startup_trials", 5},
                                 {"constant_liar", false},
                                 {"max_trials", 50}});
  ASSERT_TRUE(o.has_value()) << o.error();
  EXPECT_EQ(*o->seed, 3U);
  EXPECT_EQ(o->n_startup_trials, 5);
  EXPECT_FALSE(o->constant_liar);
  EXPECT_EQ(o->max_trials, 50);
  auto bad = gp_options_from_json({{"type", "gp"}, {"n_ei_candidates", 3}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("sampler.n_ei_candidates"), std::string::npos) << bad.error();
  EXPECT_FALSE(gp_options_from_json({{"max_trials", 1}}).has_value());
  auto built = make_sampler({{"type", "gp"}, {"seed", 1}}, k_plane);
  ASSERT_TRUE(built.has_value()) << built.error();
}

}  // namespace
}  // namespace tune::search
