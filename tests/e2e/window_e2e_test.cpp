// Issue 26's "done when", end to end: trials of seconds on jobs that would run for an hour.
//   - `tune init -- mpirun -n 2 /usr/bin/python3 ddp_long.py` on a PyTorch DDP script that would
//     train for an hour, printing "step N/TOTAL loss X" every 5 steps (tests/e2e/programs/ddp_long.py):
//     the probe run sees the progress lines and the study it writes measures their rate over a
//     window; `tune --trials 6` on it takes seconds a trial, and its best runs one torch thread
//     per rank (the script says so in its first line; two threads on each of 2 ranks of a 2-core
//     machine is the oversubscribed setting).
//   - studies/quickstart-window.yaml: the bundled trainer on a 300-epoch run, two trials.
//   - a bad key of `objective.window` through the `tune` binary: file:line:key, exit 2.
// python3-torch is a test dependency (scripts/install-deps.sh test); without it the DDP test
// fails saying so. About 2 minutes on the 2-core development machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

class WindowE2E : public test_support::TempDirTest {
 protected:
  WindowE2E() : TempDirTest("tune-window-e2e-") {}
  test_support::CommandOutput run(const std::vector<std::string>& argv) {
    return test_support::run_command(argv, m_dir, {}, "window-e2e");
  }
  std::vector<search::FrozenTrial> trials(const std::string& study) {
    return test_support::stored_trials(m_dir / "tune-out" / study / "study.db", study);
  }
};

std::string reason_of(const search::FrozenTrial& t) {
  return t.system_attrs.value(k_attr_fail_reason, std::string());
}

TEST_F(WindowE2E, InitOnAnHourLongDdpScriptTunesItAtSecondsATrial) {
  const auto torch = run({"/usr/bin/python3", "-c", "import torch"});
  ASSERT_EQ(torch.exit_code, 0)
      << "python3-torch is missing (scripts/install-deps.sh test installs it): " << torch.err;
  const auto made =
      run({TUNE_BIN, "init", "--no-input", "--probe-for", "6s", "-o", "study.yaml", "--",
           "mpirun", "-n", "2", "/usr/bin/python3",
           TUNE_SOURCE_DIR "/tests/e2e/programs/ddp_long.py"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string text = test_support::read_file(m_dir / "study.yaml");
  EXPECT_TRUE(text.contains("progress lines like \"step ")) << text;
  EXPECT_TRUE(text.contains("still running at its bound")) << text;
  const auto spec = load_study_spec((m_dir / "study.yaml").string());
  ASSERT_TRUE(spec) << spec.error() << "\n" << text;
  ASSERT_TRUE(spec->objective.window) << text;
  EXPECT_EQ(spec->direction, search::Direction::maximize);
  EXPECT_TRUE(spec->objective.window->regex.contains("step")) << spec->objective.window->regex;
  EXPECT_EQ(spec->objective.window->settings.measure, WindowMeasure::counter);

  const auto tuned = run({TUNE_BIN, "--trials", "6", "study.yaml"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  search::VectorStudyView study(spec->direction);
  study.mutable_trials() = trials(spec->name);
  const auto& ts = study.trials();
  // Six trials ran: the search's and, when init saw noise (incumbent_repeats), re-runs of each
  // new best, which count in --trials; those of a best found last wait for the next run.
  int ran = 0;
  for (const auto& t : ts) {
    if (t.state == TrialState::waiting) {
      EXPECT_TRUE(is_rerun(t)) << "trial " << t.number << " " << t.user_attrs.dump();
      continue;
    }
    ++ran;
    ASSERT_TRUE(t.state == TrialState::complete || t.state == TrialState::pruned)
        << "trial " << t.number << ": " << reason_of(t) << " " << t.user_attrs.dump();
    // An hour of training, measured in seconds (start-up, warm-up, window and stop included).
    EXPECT_LT(t.user_attrs.value(k_attr_wall_time, 1e9), 60) << "trial " << t.number;
    EXPECT_TRUE(t.user_attrs.contains(k_attr_window)) << t.number;
  }
  EXPECT_EQ(ran, 6) << text;
  const search::FrozenTrial* best = best_trial(study);  // re-runs' median when re-measured
  ASSERT_NE(best, nullptr);
  const auto out = test_support::read_file(
      fs::path(best->user_attrs.at(k_attr_trial_dir).get<std::string>()) / "stdout");
  EXPECT_TRUE(out.contains("torch threads 1\n")) << "best trial " << best->number << ":\n" << out;
}

TEST_F(WindowE2E, TheTrainersQuickstartVariantMeasuresAWindowOfAHourLongRun) {
#ifndef TUNE_TRAINER
  GTEST_FAIL() << "tune-trainer is not built (TUNE_MODULES)";
#else
  fs::copy(fs::path(TUNE_SOURCE_DIR) / "studies" / "quickstart-window.yaml", m_dir / "qw.yaml");
  const auto tuned = run({TUNE_BIN, "--trials", "2", "qw.yaml"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const auto ts = trials("quickstart-window");
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) {
    ASSERT_TRUE(t.state == TrialState::complete || t.state == TrialState::pruned)
        << "trial " << t.number << ": " << reason_of(t);
    EXPECT_LT(t.user_attrs.value(k_attr_wall_time, 1e9), 60) << "trial " << t.number;
    const auto& w = t.user_attrs.at(k_attr_window);
    EXPECT_EQ(w.value("clock", ""), "job") << w.dump();
    EXPECT_EQ(w.value("unit", ""), "samples/s") << w.dump();
    EXPECT_GT(*t.value, 100) << w.dump();  // samples/s, not iterations/s
  }
#endif
}

TEST_F(WindowE2E, ABadWindowKeyIsAFileLineKeyErrorWithExit2) {
  test_support::write_file(m_dir / "bad.yaml",
                           "name: bad\ndirection: maximize\ncommand: [/bin/true]\nobjective:\n"
                           "  window:\n    regex: 'step ([0-9]+)'\n    target: lots\n");
  const auto o = run({TUNE_BIN, "--trials", "1", "bad.yaml"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_TRUE(o.err.contains("bad.yaml:7: key 'objective.window.target': 'lots' is not a fraction"))
      << o.err;
}

}  // namespace
}  // namespace tune::tuner
