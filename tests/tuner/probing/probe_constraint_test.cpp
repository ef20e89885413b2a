// The runner records the probes' constraint of every trial, run or skipped: constrained TPE ranks
// a trial without constraint values after every trial with them, so a feasible trial that ran
// without one would rank below the infeasible ones the probes skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tuner/base/trial_attrs.h"
#include "tuner/run/runner.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

TEST(ProbeConstraint, RunAndSkippedTrialsBothCarryTheirConstraint) {
  const auto dir = fs::temp_directory_path() / "tune-probe-constraint";
  fs::remove_all(dir);
  fs::create_directories(dir);
  StudySpec spec;
  spec.file = (dir / "s.yaml").string();
  spec.name = "pc";
  spec.output = dir.string();
  spec.command = {FAKE_TRIAL, "--out", "{trial_dir}", "--value", "2"};
  RunOptions options;
  options.trials = 2;
  options.quiet = true;
  auto runner = StudyRunner::open(spec, options);
  ASSERT_TRUE(runner) << runner.error();
  TrialHooks hooks;
  int calls = 0;
  std::vector<std::vector<search::FrozenTrial>::size_type> history;
  hooks.study_history = [&](const search::StudyView& study) {
    history.push_back(study.trials().size());
  };
  hooks.before_launch = [&](const search::FrozenTrial&, const RenderedLaunch&) {
    return nlohmann::json{{k_hook_constraint, calls++ == 0 ? -0.25 : 0.5}};
  };
  (*runner)->set_hooks(std::move(hooks));
  std::ostringstream out;
  ASSERT_TRUE((*runner)->run(out)) << out.str();
  const auto& trials = (*runner)->cache().trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, search::TrialState::complete);
  EXPECT_EQ(trials[0].constraints, std::vector<double>{-0.25});
  EXPECT_EQ(trials[1].state, search::TrialState::pruned);  // skipped: predicted oversubscribed
  EXPECT_EQ(trials[1].constraints, std::vector<double>{0.5});
  // The hooks saw the study's trials before each prediction, the trial being asked included.
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0], 1u);
  EXPECT_EQ(history[1], 2u);
  runner->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tune::tuner
