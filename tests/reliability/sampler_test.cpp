// Issue 12, point 8 (lost exploration): a seeded sampler used to restart its random sequence in
// every new process, so each resume of a study re-ran the points it had already run and
// concurrent workers with one seed ran identical trials in lockstep. These tests replay both at
// the search level -- a new sampler object per resume or per worker, one shared history -- for
// the random, TPE and grid samplers, and check that the same seed still reproduces a study.
// One end-to-end check runs `tune` itself, resumed, on a seeded random study.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "search/grid_sampler.h"
#include "search/random_sampler.h"
#include "search/tpe.h"
#include "tests/common/test_support.h"
#include "tests/search/study_helpers.h"
#include "tuner/launch/launcher.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::search {
namespace {

namespace fs = std::filesystem;
using testing::ask;
using testing::run_study;
using testing::tell;

using Params = std::map<std::string, double>;
using MakeSampler = std::function<std::unique_ptr<Sampler>()>;

const SearchSpace k_line = {{"x", FloatDistribution{0.0, 1.0, false, std::nullopt}}};
const SearchSpace k_plane = {{"x", FloatDistribution{-1.0, 1.0, false, std::nullopt}},
                             {"y", FloatDistribution{-1.0, 1.0, false, std::nullopt}}};

double bowl(const Params& p) {
  double v = 0.0;
  for (const auto& [name, x] : p) v += (x - 0.3) * (x - 0.3);
  return v;
}

std::unique_ptr<Sampler> tpe(std::uint64_t seed) {
  TpeOptions o;
  o.seed = seed;
  return make_tpe_sampler(o);
}

std::vector<Params> params_of(const VectorStudyView& study) {
  std::vector<Params> out;
  for (const auto& t : study.trials()) out.push_back(t.params);
  return out;
}

// n_trials run in `sessions` processes one after the other, each with a new sampler (what
// `tune` does on every resume), all on one growing history.
std::vector<Params> resumed_study(const MakeSampler& make, const SearchSpace& space, int n_trials,
                                  int sessions) {
  VectorStudyView study(Direction::minimize);
  for (int s = 0; s < sessions; ++s) {
    const int begin = n_trials * s / sessions, end = n_trials * (s + 1) / sessions;
    auto sampler = make();
    run_study(*sampler, study, space, bowl, end - begin);
  }
  return params_of(study);
}

std::vector<Params> uninterrupted_study(const MakeSampler& make, const SearchSpace& space,
                                        int n_trials) {
  VectorStudyView study(Direction::minimize);
  auto sampler = make();
  run_study(*sampler, study, space, bowl, n_trials);
  return params_of(study);
}

// `workers` samplers with one seed on one shared history: every round each worker starts a
// trial (seeing the RUNNING trials of the workers before it), then all of them finish.
std::vector<Params> concurrent_study(const MakeSampler& make, const SearchSpace& space, int workers,
                                     int rounds) {
  std::vector<std::unique_ptr<Sampler>> samplers;
  for (int w = 0; w < workers; ++w) samplers.push_back(make());
  VectorStudyView study(Direction::minimize);
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::size_t> started;
    for (auto& s : samplers) started.push_back(ask(*s, study, space));
    for (std::size_t w = 0; w < started.size(); ++w) {
      tell(*samplers[w], study, started[w], TrialState::complete,
           bowl(study.trials()[started[w]].params));
    }
  }
  return params_of(study);
}

std::size_t distinct(const std::vector<Params>& params) {
  return std::set<Params>(params.begin(), params.end()).size();
}

TEST(SamplerReliability, RandomStudyResumedThirtyTimesDrawsNewValues) {
  const MakeSampler make = [] { return make_random_sampler(7); };
  const auto resumed = resumed_study(make, k_line, 251, 30);
  ASSERT_EQ(resumed.size(), 251U);
  // Before the fix: 9 distinct values in 251 trials, every session replaying the first one's.
  EXPECT_EQ(distinct(resumed), 251U);
  // Reproducible all the same: a fresh run with the seed gives the same trials again, and a
  // trial's draw depends on the seed and its number, not on how many processes the study took.
  const auto fresh = uninterrupted_study(make, k_line, 251);
  EXPECT_EQ(fresh, uninterrupted_study(make, k_line, 251));
  EXPECT_EQ(resumed, fresh);
  EXPECT_NE(uninterrupted_study([] { return make_random_sampler(8); }, k_line, 251), fresh);
}

TEST(SamplerReliability, SeededRandomWorkersDoNotRunInLockstep) {
  const auto trials = concurrent_study([] { return make_random_sampler(7); }, k_plane, 4, 25);
  ASSERT_EQ(trials.size(), 100U);
  // Before the fix the 4 workers ran the same point in every round: 25 distinct of 100.
  EXPECT_EQ(distinct(trials), 100U);
}

TEST(SamplerReliability, TpeStudyResumedEveryThreeTrialsDrawsNewValues) {
  // Resumes during TPE's 10 random startup trials used to replay them; after startup, the EI
  // candidates restarted from the same stream on every resume.
  const MakeSampler make = [] { return tpe(3); };
  const auto resumed = resumed_study(make, k_line, 60, 20);
  ASSERT_EQ(resumed.size(), 60U);
  EXPECT_EQ(distinct(resumed), 60U);
  const auto fresh = uninterrupted_study(make, k_line, 60);
  EXPECT_EQ(fresh, uninterrupted_study(make, k_line, 60));
  EXPECT_EQ(resumed, fresh);
}

TEST(SamplerReliability, SeededTpeWorkersDrawDifferentPoints) {
  // Without the constant liar the workers of one round see the same history, so only the trial
  // number can set their startup draws and EI candidates apart.
  const auto trials = concurrent_study([] { return tpe(3); }, k_plane, 4, 15);
  ASSERT_EQ(trials.size(), 60U);
  EXPECT_EQ(distinct(trials), 60U);
}

std::unique_ptr<Sampler> grid(std::uint64_t seed) {
  const SearchSpace space = {{"a", IntDistribution{0, 6, false, 1}},
                             {"b", IntDistribution{0, 7, false, 1}}};
  auto sampler = make_grid_sampler(nlohmann::json{{"type", "grid"}, {"seed", seed}}, space);
  EXPECT_TRUE(sampler.has_value()) << (sampler ? "" : sampler.error());
  return sampler ? std::move(*sampler) : nullptr;
}
const SearchSpace k_grid_space = {{"a", IntDistribution{0, 6, false, 1}},
                                  {"b", IntDistribution{0, 7, false, 1}}};  // 56 points

TEST(SamplerReliability, GridWorkersStartingTogetherTakeDifferentPoints) {
  // Four workers start their trials at the same moment: none sees the others' RUNNING trials
  // before choosing (the race the grid's "skip running points" cannot cover). Before the fix
  // all four took the same point every round.
  std::vector<std::unique_ptr<Sampler>> workers;
  for (int w = 0; w < 4; ++w) workers.push_back(grid(5));
  VectorStudyView study(Direction::minimize);
  for (int round = 0; round < 14; ++round) {
    std::vector<FrozenTrial> started;
    for (auto& w : workers) {
      FrozenTrial t;
      t.number = static_cast<int>(study.trials().size() + started.size());
      t.trial_id = t.number;
      w->before_trial(study, t);  // the shared history holds none of this round's trials yet
      suggest_all(*w, study, t, k_grid_space);
      started.push_back(std::move(t));
    }
    for (auto& t : started) {
      t.state = TrialState::complete;
      t.value = bowl(t.params);
      study.mutable_trials().push_back(std::move(t));
    }
  }
  EXPECT_EQ(distinct(params_of(study)), 56U) << "every point of the grid exactly once";
  EXPECT_TRUE(workers[0]->exhausted(study));
}

TEST(SamplerReliability, GridResumedAndConcurrentStudiesRunEveryPointOnce) {
  const MakeSampler make = [] { return grid(5); };
  const auto whole = uninterrupted_study(make, k_grid_space, 56);
  EXPECT_EQ(distinct(whole), 56U);
  const auto resumed = resumed_study(make, k_grid_space, 56, 11);
  EXPECT_EQ(distinct(resumed), 56U);
  // The visiting order is the seed's alone: a resumed study goes on where it stopped.
  EXPECT_EQ(resumed, whole);
  EXPECT_EQ(distinct(concurrent_study(make, k_grid_space, 4, 14)), 56U);
}

// End to end: `tune` itself, resumed four times on a seeded random study, never re-runs a
// point (before the fix every run re-ran the first one's three values).
TEST(SamplerReliability, TuneResumedOnASeededRandomStudyRunsNewPoints) {
  const fs::path dir = test_support::fresh_test_dir("tune-reliability-sampler-");
  struct RemoveDir {
    fs::path path;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } cleanup{dir};
  const auto study_file = test_support::write_file(
      dir / "study.yaml", "name: resumed\noutput: " + (dir / "out").string() +
                              "\ncommand: ['" FAKE_TRIAL
                              "', --out, '{trial_dir}', --value, '{x}']\n"
                              "sampler: {type: random, seed: 1}\n"
                              "params:\n  x: {type: float, low: 1, high: 10}\n");
  for (int run = 0; run < 4; ++run) {
    const auto r =
        test_support::run_command({TUNE_BIN, "--trials", "3", study_file}, dir, {}, "tune");
    ASSERT_EQ(r.exit_code, 0) << "run " << run << ": " << r.err;
  }
  const auto trials = test_support::stored_trials(dir / "out" / "study.db", "resumed");
  std::set<double> xs;
  for (const auto& t : trials) {
    EXPECT_EQ(t.state, TrialState::complete) << "trial " << t.number;
    xs.insert(t.params.at("x"));
  }
  EXPECT_EQ(trials.size(), 12U);
  EXPECT_EQ(xs.size(), 12U);
}

}  // namespace
}  // namespace tune::search
