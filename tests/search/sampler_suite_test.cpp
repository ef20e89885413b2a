// The suite every sampler passes (random, grid, TPE independent / multivariate / group, GP; and
// random, grid and multi-objective TPE on a study with two objectives):
// domains, types, steps, log ranges, categorical choices, determinism by seed (a suggestion is a
// function of seed, history and trial number, so resumes and workers go on exploring), histories
// with FAIL / RUNNING / WAITING trials, single-value distributions.
#include <cmath>
#include <functional>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/gp_sampler.h"
#include "search/grid_sampler.h"
#include "search/random_sampler.h"
#include "search/sampler.h"
#include "search/tpe.h"
#include "tests/search/study_helpers.h"

namespace tune::search {
namespace {

using testing::ask;
using testing::run_study;
using testing::tell;

struct SamplerCase {
  std::string name;
  std::function<std::unique_ptr<Sampler>(std::uint64_t seed, const SearchSpace& space)> make;
  bool log_uniform = true;     // draws log ranges log-uniformly (the grid enumerates values)
  std::size_t objectives = 1;  // 2: every study of the case has two objectives (tell's values)
};

// GoogleTest would print the case as raw bytes (and ctest would list those in every name).
void PrintTo(const SamplerCase& c, std::ostream* os) { *os << c.name; }

std::unique_ptr<Sampler> tpe(std::uint64_t seed, bool multivariate, bool group) {
  TpeOptions o;
  o.seed = seed;
  o.multivariate = multivariate;
  o.group = group;
  return make_tpe_sampler(o);
}

// The grid needs values for continuous floats: three per such parameter (a repeated value for a
// single-value range collapses to one point).
std::unique_ptr<Sampler> grid(std::uint64_t seed, const SearchSpace& space) {
  nlohmann::json config = {{"type", "grid"}, {"seed", seed}};
  nlohmann::json listed = nlohmann::json::object();
  for (const auto& [name, dist] : space) {
    if (const auto* f = std::get_if<FloatDistribution>(&dist); f && !f->step) {
      if (f->low == f->high)
        listed[name] = nlohmann::json::array({f->low});
      else
        listed[name] = f->log
                           ? nlohmann::json::array({f->low, std::sqrt(f->low * f->high), f->high})
                           : nlohmann::json::array({f->low, 0.5 * (f->low + f->high), f->high});
    }
  }
  if (!listed.empty()) config["search_space"] = listed;
  auto sampler = make_grid_sampler(config, space);
  EXPECT_TRUE(sampler.has_value()) << (sampler ? "" : sampler.error());
  return sampler ? std::move(*sampler) : nullptr;
}

const std::vector<SamplerCase>& cases() {
  static const std::vector<SamplerCase> all = {
      {"random", [](std::uint64_t s, const SearchSpace&) { return make_random_sampler(s); }},
      {"grid", grid, false},
      {"tpe", [](std::uint64_t s, const SearchSpace&) { return tpe(s, false, false); }},
      {"tpe_multivariate", [](std::uint64_t s, const SearchSpace&) { return tpe(s, true, false); }},
      {"tpe_group", [](std::uint64_t s, const SearchSpace&) { return tpe(s, true, true); }},
      {"gp",
       [](std::uint64_t s, const SearchSpace&) {
         GpOptions o;
         o.seed = s;
         return make_gp_sampler(o);
       }},
      {"motpe", [](std::uint64_t s, const SearchSpace&) { return tpe(s, false, false); }, true, 2},
      {"motpe_multivariate",
       [](std::uint64_t s, const SearchSpace&) { return tpe(s, true, false); }, true, 2},
      {"random_two_objectives",
       [](std::uint64_t s, const SearchSpace&) { return make_random_sampler(s); }, true, 2},
      {"grid_two_objectives", grid, false, 2},
  };
  return all;
}

SearchSpace mixed_space() {
  return {
      {"threads", IntDistribution{1, 8, false, 1}},
      {"bucket_mb", IntDistribution{0, 20, false, 5}},
      {"workers", IntDistribution{1, 16, true, 1}},
      {"ratio", FloatDistribution{0.0, 1.0, false, std::nullopt}},
      {"lr", FloatDistribution{1e-3, 1.0, true, std::nullopt}},
      {"scale", FloatDistribution{0.5, 2.5, false, 0.5}},
      {"algo",
       CategoricalDistribution{{std::string("ring"), std::string("tree"), std::int64_t{3}, true}}},
  };
}

double mixed_objective(const std::map<std::string, double>& p) {
  const double algo_cost[] = {0.0, 0.4, 0.8, 1.2};
  return std::pow(p.at("threads") - 6.0, 2) / 16.0 + std::abs(p.at("bucket_mb") - 10.0) / 10.0 +
         std::pow(std::log2(p.at("workers")) - 3.0, 2) / 4.0 + std::pow(p.at("ratio") - 0.3, 2) +
         std::pow(std::log10(p.at("lr")) + 2.0, 2) + std::abs(p.at("scale") - 1.0) +
         algo_cost[static_cast<int>(p.at("algo"))];
}

class SamplerSuite : public ::testing::TestWithParam<SamplerCase> {
 protected:
  // A study with the case's number of objectives, every one in `direction`.
  static VectorStudyView new_study(Direction direction) {
    return VectorStudyView(std::vector<Direction>(GetParam().objectives, direction));
  }
};

TEST_P(SamplerSuite, EverySuggestionLiesInItsDomain) {
  const SearchSpace space = mixed_space();
  auto sampler = GetParam().make(1, space);
  auto study = new_study(Direction::minimize);
  run_study(*sampler, study, space, mixed_objective, 60);
  std::set<int> algos;
  for (const auto& t : study.trials()) {
    ASSERT_EQ(t.params.size(), space.size());
    for (const auto& [name, dist] : space) {
      const double v = t.params.at(name);
      EXPECT_TRUE(contains(dist, v)) << GetParam().name << " " << name << "=" << v;
    }
    EXPECT_EQ(t.params.at("threads"), std::floor(t.params.at("threads")));
    EXPECT_EQ(std::fmod(t.params.at("bucket_mb"), 5.0), 0.0);
    EXPECT_GE(t.params.at("workers"), 1.0);
    EXPECT_LE(t.params.at("workers"), 16.0);
    EXPECT_EQ(t.params.at("workers"), std::floor(t.params.at("workers")));
    EXPECT_GE(t.params.at("lr"), 1e-3);
    EXPECT_LE(t.params.at("lr"), 1.0);
    const double k = (t.params.at("scale") - 0.5) / 0.5;
    EXPECT_NEAR(k, std::round(k), 1e-9);
    algos.insert(static_cast<int>(t.params.at("algo")));
    // External values convert back to the same internal value.
    for (const auto& [name, dist] : space) {
      auto back = to_internal(dist, to_external(dist, t.params.at(name)));
      ASSERT_TRUE(back.has_value()) << name;
      EXPECT_EQ(*back, t.params.at(name)) << name;
    }
  }
  EXPECT_EQ(algos.size(), 4U) << "every categorical choice is tried";
}

TEST_P(SamplerSuite, SameSeedSameSuggestionsOtherSeedOthers) {
  const SearchSpace space = mixed_space();
  auto run = [&](std::uint64_t seed) {
    auto sampler = GetParam().make(seed, space);
    auto study = new_study(Direction::minimize);
    run_study(*sampler, study, space, mixed_objective, 30);
    std::vector<std::map<std::string, double>> params;
    for (const auto& t : study.trials()) params.push_back(t.params);
    return params;
  };
  const auto a = run(42), b = run(42), c = run(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// The contract behind resumes and concurrent workers: same seed + same history + same trial
// number => same suggestion, whether the sampler object is fresh (a resumed run, another
// worker) or has served other trials; another trial number on the same history draws anew.
TEST_P(SamplerSuite, SameSeedHistoryAndTrialNumberSameSuggestion) {
  const SearchSpace space = mixed_space();
  for (int history : {4, 20}) {  // TPE's startup trials, then its own suggestions
    auto used = GetParam().make(42, space);
    auto study = new_study(Direction::minimize);
    run_study(*used, study, space, mixed_objective, history);
    auto suggest = [&](Sampler& sampler, int number) {
      FrozenTrial trial;
      trial.number = number;
      trial.trial_id = number;
      sampler.before_trial(study, trial);
      suggest_all(sampler, study, trial, space);
      return trial.params;
    };
    auto fresh = GetParam().make(42, space);
    const auto expected = suggest(*used, history);
    EXPECT_EQ(suggest(*fresh, history), expected) << "history " << history;
    EXPECT_EQ(suggest(*used, history), expected) << "asked again, history " << history;
    EXPECT_NE(suggest(*fresh, history + 1), expected) << "history " << history;
  }
}

TEST_P(SamplerSuite, ResumedStudyMatchesTheUninterruptedOne) {
  const SearchSpace space = mixed_space();
  auto whole = GetParam().make(8, space);
  auto uninterrupted = new_study(Direction::minimize), resumed = new_study(Direction::minimize);
  run_study(*whole, uninterrupted, space, mixed_objective, 30);
  for (int session = 0; session < 10; ++session) {  // a new process, same seed, every 3 trials
    auto sampler = GetParam().make(8, space);
    run_study(*sampler, resumed, space, mixed_objective, 3);
  }
  ASSERT_EQ(resumed.trials().size(), uninterrupted.trials().size());
  for (std::size_t i = 0; i < resumed.trials().size(); ++i) {
    EXPECT_EQ(resumed.trials()[i].params, uninterrupted.trials()[i].params) << "trial " << i;
  }
}

TEST_P(SamplerSuite, LogRangesAreCovered) {
  const SearchSpace space = {{"workers", IntDistribution{1, 64, true, 1}},
                             {"lr", FloatDistribution{1e-4, 1.0, true, std::nullopt}}};
  auto sampler = GetParam().make(3, space);
  auto study = new_study(Direction::minimize);
  // A flat objective: nothing to exploit, so the draws show the sampler's spread.
  run_study(
      *sampler, study, space, [](const auto&) { return 1.0; }, 60);
  int small_workers = 0;
  std::set<double> distinct;
  for (const auto& t : study.trials()) {
    small_workers += t.params.at("workers") <= 8.0;
    distinct.insert(t.params.at("workers"));
  }
  if (GetParam().log_uniform) {
    // Log-uniform puts half the mass at <= 8 of 1..64; linear sampling would put 1/8 there.
    EXPECT_GE(small_workers, 15) << GetParam().name;
  } else {
    EXPECT_GE(distinct.size(), 30U) << "a grid visits distinct points";
  }
}

TEST_P(SamplerSuite, HistoryWithFailedRunningAndWaitingTrials) {
  const SearchSpace space = mixed_space();
  auto sampler = GetParam().make(5, space);
  auto study = new_study(Direction::maximize);
  run_study(*sampler, study, space, mixed_objective, 12);
  auto& trials = study.mutable_trials();
  // FAIL trials with and without values, RUNNING ones with some parameters, WAITING ones with
  // none: the sampler must neither crash nor suggest outside the domain.
  for (int i = 0; i < 6; ++i) {
    FrozenTrial t = trials[static_cast<std::size_t>(i)];
    t.number = static_cast<int>(trials.size());
    t.state =
        i % 3 == 0 ? TrialState::fail : (i % 3 == 1 ? TrialState::running : TrialState::waiting);
    if (t.state != TrialState::fail || i == 3) t.value.reset();
    if (t.state == TrialState::running) t.params.erase("lr");
    if (t.state == TrialState::waiting) t.params.clear();
    trials.push_back(t);
  }
  run_study(*sampler, study, space, mixed_objective, 15);
  for (std::size_t i = 18; i < study.trials().size(); ++i) {
    for (const auto& [name, dist] : space) {
      EXPECT_TRUE(contains(dist, study.trials()[i].params.at(name))) << name;
    }
  }
}

TEST_P(SamplerSuite, SingleValueDistributionsGiveTheirValue) {
  const SearchSpace space = {{"fixed_int", IntDistribution{3, 3, false, 1}},
                             {"fixed_float", FloatDistribution{0.5, 0.5, false, std::nullopt}},
                             {"fixed_log", FloatDistribution{2.0, 2.0, true, std::nullopt}},
                             {"only", CategoricalDistribution{{std::string("only")}}},
                             {"x", IntDistribution{0, 10, false, 1}}};
  auto sampler = GetParam().make(9, space);
  auto study = new_study(Direction::minimize);
  run_study(
      *sampler, study, space, [](const auto& p) { return p.at("x"); }, 20);
  for (const auto& t : study.trials()) {
    EXPECT_EQ(t.params.at("fixed_int"), 3.0);
    EXPECT_EQ(t.params.at("fixed_float"), 0.5);
    EXPECT_EQ(t.params.at("fixed_log"), 2.0);
    EXPECT_EQ(t.params.at("only"), 0.0);
  }
}

TEST_P(SamplerSuite, EnqueuedParametersAreKept) {
  const SearchSpace space = mixed_space();
  auto sampler = GetParam().make(11, space);
  auto study = new_study(Direction::minimize);
  run_study(*sampler, study, space, mixed_objective, 15);
  FrozenTrial trial;
  trial.number = 15;
  trial.params["threads"] = 7.0;
  suggest_all(*sampler, study, trial, space);
  EXPECT_EQ(trial.params.at("threads"), 7.0);
  EXPECT_EQ(trial.params.size(), space.size());
}

INSTANTIATE_TEST_SUITE_P(AllSamplers, SamplerSuite, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tune::search
