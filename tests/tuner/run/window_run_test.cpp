// The window objective on running jobs (tests/tuner/support/fake_progress.cpp prints progress at a
// rate known exactly): the estimate holds the true rate within its interval; the trial is stopped
// early, its whole tree with it; a job that dies mid-window fails as it died; one that ends first
// is scored on what was seen and says so; one that never prints fails at the window's startup
// limit; garbage in the output changes nothing; a Chainer log works as well; a loser is PRUNED
// with its estimate.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/window_best.h"
#include "tuner/measure/window_follower.h"
#include "tuner/run/runner.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

class WindowRun : public test_support::TempDirTest {
 protected:
  WindowRun() : TempDirTest("tune-window-run-") {}

  // Runs `trials` trials of a study whose command is fake_progress with `args` and whose
  // objective is `window`; returns the stored trials.
  std::vector<search::FrozenTrial> run(const std::string& args, const std::string& window,
                                       int trials = 1, const std::string& extra = "") {
    std::ostringstream yaml;
    yaml << "name: win\ndirection: maximize\ntimeout: 2m\n"
         << "command: [\"" << FAKE_PROGRESS << "\", " << args << "]\n"
         << "objective:\n  window: " << window << "\n"
         << "output: \"" << (m_dir / "tune-out" / "win").string() << "\"\n"
         << extra;
    const auto path = test_support::write_file(m_dir / "s.yaml", yaml.str());
    auto spec = load_study_spec(path);
    EXPECT_TRUE(spec) << spec.error();
    if (!spec) return {};
    RunOptions options;
    options.trials = trials;
    options.quiet = true;
    auto runner = StudyRunner::open(*spec, options);
    EXPECT_TRUE(runner) << runner.error();
    if (!runner) return {};
    std::ostringstream out;
    auto totals = (*runner)->run(out);
    EXPECT_TRUE(totals) << totals.error();
    return test_support::stored_trials(m_dir / "tune-out" / "win" / "study.db", "win");
  }

  static const nlohmann::json& window_of(const search::FrozenTrial& t) {
    static const nlohmann::json none;
    const auto it = t.user_attrs.find(k_attr_window);
    return it == t.user_attrs.end() ? none : *it;
  }
  static std::string reason_of(const search::FrozenTrial& t) {
    return t.system_attrs.value(k_attr_fail_reason, std::string());
  }
  static double wall_of(const search::FrozenTrial& t) {
    return t.user_attrs.value(k_attr_wall_time, -1.0);
  }
  static bool alive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }
};

// An hour-long job at 500 steps/s: the trial stops in seconds, COMPLETE, with 500 inside the
// interval (99.9%: the test must not fail one run in twenty), and no process of it is left.
TEST_F(WindowRun, StopsEarlyWithTheTrueRateInsideItsInterval) {
  const auto trials =
      run("--rate, 500, --every-ms, 20, --for, 3600, --child, --pids, \"" +
              (m_dir / "pids").string() + "\"",
          "{regex: 'step ([0-9]+)', warmup: 0.5s, min: 2s, max: 40s, target: 5%, confidence: "
          "99.9%}");
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  ASSERT_EQ(t.state, TrialState::complete) << reason_of(t) << " " << window_of(t).dump();
  const auto& w = window_of(t);
  EXPECT_EQ(w.value("status", ""), "target") << w.dump();
  ASSERT_TRUE(w.contains("low") && w.contains("high")) << w.dump();
  EXPECT_LE(w["low"].get<double>(), 500) << w.dump();
  EXPECT_GE(w["high"].get<double>(), 500) << w.dump();
  EXPECT_DOUBLE_EQ(*t.value, w["value"].get<double>());
  EXPECT_LE(w["half_width"].get<double>(), 0.05);
  EXPECT_GE(w["window_s"].get<double>(), 2.0);
  EXPECT_GE(w["batches"].get<int>(), k_min_stop_batches);
  EXPECT_GT(w["warmup_s"].get<double>(), 0.45);
  EXPECT_EQ(w.value("clock", ""), "tune");
  EXPECT_LT(wall_of(t), 60) << "stopped by its window, not by the job's end";
  // The whole tree was stopped, the child the job left sleeping included.
  std::ifstream pids(m_dir / "pids");
  pid_t job = -1, child = -1;
  pids >> job >> child;
  ASSERT_GT(child, 0);
  EXPECT_FALSE(alive(job));
  EXPECT_FALSE(alive(child));
}

TEST_F(WindowRun, AJobThatDiesMidWindowFailsAsItDied) {
  const auto trials = run("--rate, 300, --mode, die, --for, 1.5",
                          "{regex: 'step ([0-9]+)', warmup: 0.2s, min: 5s}");
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  EXPECT_EQ(t.state, TrialState::fail);
  EXPECT_TRUE(reason_of(t).contains("exit code 3")) << reason_of(t);
  EXPECT_TRUE(reason_of(t).contains("dying on purpose")) << reason_of(t);
  const auto& w = window_of(t);
  EXPECT_EQ(w.value("status", ""), "unfinished") << w.dump();
  EXPECT_GT(w["points"].get<int>(), 2) << "how far it got is kept";
}

TEST_F(WindowRun, AJobThatEndsBeforeItsWindowIsScoredOnWhatWasSeenAndSaysSo) {
  const auto trials = run("--rate, 300, --for, 1.5",
                          "{regex: 'step ([0-9]+)', warmup: 0.3s, min: 5s, confidence: 99.9%}");
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  ASSERT_EQ(t.state, TrialState::complete) << reason_of(t);
  const auto& w = window_of(t);
  EXPECT_EQ(w.value("status", ""), "ended") << w.dump();
  EXPECT_TRUE(w.value("note", "").contains("ended before its window was measured")) << w.dump();
  EXPECT_NEAR(*t.value, 300, 300 * 0.1);
}

TEST_F(WindowRun, AJobThatNeverPrintsFailsAtTheStartupLimitTreeAndAll) {
  const auto trials = run("--mode, never, --child, --pids, \"" + (m_dir / "pids").string() + "\"",
                          "{regex: 'step ([0-9]+)', startup: 1.5s}");
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  EXPECT_EQ(t.state, TrialState::fail);
  EXPECT_TRUE(reason_of(t).contains("no progress in the first 1.5 s")) << reason_of(t);
  EXPECT_TRUE(reason_of(t).contains("regex 'step ([0-9]+)' on stdout matched none of 0 line"))
      << reason_of(t);
  EXPECT_EQ(window_of(t).value("status", ""), "no_progress");
  EXPECT_LT(wall_of(t), 30) << "stopped at the window's startup limit, not the 2 min timeout";
  std::ifstream pids(m_dir / "pids");
  pid_t job = -1, child = -1;
  pids >> job >> child;
  EXPECT_FALSE(alive(job));
  EXPECT_FALSE(alive(child));
}

TEST_F(WindowRun, GarbageInTheOutputChangesNothing) {
  const auto trials = run("--rate, 400, --every-ms, 20, --mode, garbage",
                          "{regex: 'step ([-+0-9.eEnaif]+)', warmup: 0.5s, min: 2s, target: 5%, "
                          "confidence: 99.9%}");
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  ASSERT_EQ(t.state, TrialState::complete) << reason_of(t);
  const auto& w = window_of(t);
  EXPECT_LE(w["low"].get<double>(), 400) << w.dump();
  EXPECT_GE(w["high"].get<double>(), 400) << w.dump();
  EXPECT_GT(w["lines"]["refused"].get<int>(), 10) << w.dump();
  EXPECT_GT(w["lines"]["long"].get<int>(), 0) << w.dump();
}

TEST_F(WindowRun, AChainerLogIsFollowedOnTheJobsOwnClock) {
  const auto trials = run("--rate, 250, --every-ms, 25, --mode, log, --out, \"{trial_dir}\"",
                          "{log: '{trial_dir}/log', warmup: 0.3s, min: 2s, target: 1%}");
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  ASSERT_EQ(t.state, TrialState::complete) << reason_of(t);
  const auto& w = window_of(t);
  EXPECT_EQ(w.value("clock", ""), "job") << w.dump();
  EXPECT_NEAR(*t.value, 250, 250 * 0.02) << w.dump();
}

// The best (the enqueued trial, at 1000 steps/s) first; the grid's other point runs at 200: its
// interval is clear below long before it is as narrow as the target, so it is stopped and stored
// PRUNED with its estimate as its value and as its last intermediate value, as Optuna stores a
// pruned trial.
TEST_F(WindowRun, ALoserIsPrunedWithItsEstimate) {
  const auto trials =
      run("--rate, \"{rate}\", --every-ms, 20",
          "{regex: 'step ([0-9]+)', warmup: 0.3s, min: 1s, max: 4s, target: 0.5%}", 2,
          "params: {rate: [200, 1000]}\nsampler: {type: grid}\n"
          "enqueue: [{rate: 1000}]\n");
  ASSERT_EQ(trials.size(), 2u);
  const auto& best = trials[0];
  const auto& loser = trials[1];
  ASSERT_EQ(best.state, TrialState::complete) << reason_of(best);
  ASSERT_EQ(loser.state, TrialState::pruned) << reason_of(loser) << window_of(loser).dump();
  EXPECT_TRUE(reason_of(loser).contains("clear below the best's (trial 0")) << reason_of(loser);
  ASSERT_TRUE(loser.value);
  EXPECT_NEAR(*loser.value, 200, 200 * 0.1);
  ASSERT_FALSE(loser.intermediate_values.empty());
  EXPECT_DOUBLE_EQ(loser.intermediate_values.rbegin()->second, *loser.value);
  const auto& w = window_of(loser);
  EXPECT_EQ(w.value("status", ""), "pruned");
  EXPECT_EQ(w["best"]["trial"].get<int>(), 0);
  EXPECT_LT(w["high"].get<double>(), w["best"]["low"].get<double>());
}

// What a loser must fall below: the best's own window, widened by its re-runs' windows (a
// re-measured best's value is their median, and the runs differ by more than one window's
// interval where the load moves).
TEST(WindowBest, ARemeasuredBestSpansAllItsWindows) {
  search::VectorStudyView study(search::Direction::maximize);
  auto& ts = study.mutable_trials();
  const auto trial = [&](int number, double value, double low, double high) {
    search::FrozenTrial t;
    t.number = number;
    t.state = TrialState::complete;
    t.value = value;
    t.user_attrs[k_attr_window] = {{"value", value}, {"low", low}, {"high", high}};
    ts.push_back(t);
    return &ts.back();
  };
  trial(0, 20, 19, 21);
  auto best = window_best(study, best_trial(study));
  ASSERT_TRUE(best);
  EXPECT_EQ(best->trial, 0);
  EXPECT_EQ(best->low, 19);
  EXPECT_EQ(best->high, 21);
  trial(1, 30, 29, 31)->user_attrs[k_attr_search_value] = 30;  // re-measured: median 30
  for (auto [n, v] : {std::pair{2, 26.0}, std::pair{3, 34.0}}) {
    auto* r = trial(n, v, v - 1, v + 1);
    r->state = TrialState::pruned;  // a completed re-run is stored PRUNED, its value aside
    r->value.reset();
    r->system_attrs[k_attr_rerun_of] = 1;
  }
  best = window_best(study, best_trial(study));
  ASSERT_TRUE(best);
  EXPECT_EQ(best->trial, 1);
  EXPECT_EQ(best->low, 25);
  EXPECT_EQ(best->high, 35);
}

}  // namespace
}  // namespace tune::tuner
