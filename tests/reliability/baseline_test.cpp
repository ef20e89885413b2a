// Issue 50, point 2: the baseline survives any cut. A study is created with its baselines in one
// step, a baseline cut by --time-limit is run again by the next `tune`, a baseline that fails twice
// alike is left alone with every report saying what to do, and `tune confirm` runs it again once
// the cause is fixed. Each test drives the real `tune` binary on a real study.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

class BaselineCut : public test_support::TempDirTest {
 protected:
  BaselineCut() : TempDirTest("tune-baseline-") {}

  // The baseline is x = 1; a trial sleeps while the file `hang` exists, and fails (exit 3) with
  // x = 1 while the file `broken` exists.
  std::string write_study() {
    const auto hang = (m_dir / "hang").string(), broken = (m_dir / "broken").string();
    return test_support::write_file(
        m_dir / "study.yaml",
        "name: cut\noutput: " + (m_dir / "out").string() + "\ncommand: [sh, -c, 'if [ -e " + hang +
            " ]; then sleep 60; fi; if [ -e " + broken +
            " ] && [ \"$0\" = 1 ]; then echo broken >&2; exit 3; fi; echo value=$0', '{x}']\n"
            "objective: {regex: 'value=([0-9]+)'}\n"
            "sampler: {type: random, seed: 3}\n"
            "enqueue: [{x: 1}]\n"
            "params:\n  x: {type: int, low: 1, high: 9}\n");
  }
  test_support::CommandOutput tune(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv{TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run_command(argv, m_dir, env, "tune");
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "cut");
  }
};

TEST_F(BaselineCut, ABaselineCutByTheTimeLimitRunsAgainAtTheNextRun) {
  const auto study = write_study();
  test_support::write_file(m_dir / "hang", "");
  const auto cut = tune({"--trials", "3", "--time-limit", "2s", study});
  auto ts = trials();
  ASSERT_EQ(ts.size(), 1u) << cut.out << cut.err;
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_EQ(ts[0].system_attrs.value(k_attr_cut_short, false), true) << ts[0].system_attrs.dump();
  // Until it runs again, the report says the next run will.
  const auto before = tune({"report", study});
  EXPECT_NE(before.out.find("the baseline trial #0 did not complete"), std::string::npos)
      << before.out;
  EXPECT_NE(before.out.find("next `tune` run runs it again"), std::string::npos) << before.out;

  fs::remove(m_dir / "hang");
  const auto again = tune({"--trials", "2", study});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("the baseline (trial 0) did not complete (stopped: the study's "
                           "--time-limit was reached); running it again as trial 1"),
            std::string::npos)
      << again.out;
  ts = trials();
  ASSERT_EQ(ts.size(), 3u) << again.out;
  EXPECT_EQ(ts[1].state, TrialState::complete);
  EXPECT_EQ(ts[1].system_attrs.value(k_attr_retry_of, -1), 0);
  EXPECT_EQ(ts[1].params.at("x"), 1.0);
  // The re-run stands for the baseline: the report has a speedup over it.
  const auto report = tune({"report", "-f", "json", study});
  const auto json = nlohmann::json::parse(report.out);
  EXPECT_EQ(json["baseline"]["number"], 1) << report.out;
  // A third run has nothing to run again.
  const auto third = tune({"--trials", "1", study});
  EXPECT_EQ(third.out.find("running it again"), std::string::npos) << third.out;
}

TEST_F(BaselineCut, ABaselineFailingTwiceAlikeIsLeftAloneAndConfirmRunsItOnceFixed) {
  const auto study = write_study();
  test_support::write_file(m_dir / "broken", "");
  tune({"--trials", "1", study});
  const auto second = tune({"--trials", "1", study});
  EXPECT_NE(second.out.find("running it again as trial 1"), std::string::npos) << second.out;
  const auto third = tune({"--trials", "1", study});
  EXPECT_NE(third.out.find("note: the baseline failed twice with the same reason (trial 1: exit "
                           "code 3: broken); it is not run again"),
            std::string::npos)
      << third.out;
  auto ts = trials();
  int baselines = 0;
  for (const auto& t : ts) baselines += t.params.count("x") && t.params.at("x") == 1.0 ? 1 : 0;
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_EQ(ts[1].state, TrialState::fail);
  // Every report names it and what to do.
  for (const std::string format : {"text", "markdown", "json", "html"}) {
    const auto report = tune({"report", "-f", format, study});
    EXPECT_NE(report.out.find("failed twice in a row"), std::string::npos) << format << report.out;
    EXPECT_NE(report.out.find("tune confirm"), std::string::npos) << format;
  }
  const auto exported = tune({"export", study});
  EXPECT_NE(exported.err.find("failed twice in a row"), std::string::npos) << exported.err;

  // Fixed: `tune confirm` runs the baseline once more, and it stands for the setting.
  fs::remove(m_dir / "broken");
  const auto confirm = tune({"confirm", "--repeats", "1", "--top", "0", study});
  EXPECT_EQ(confirm.exit_code, 0) << confirm.out << confirm.err;
  EXPECT_NE(confirm.out.find("the baseline trial #1 did not complete; it is run once more first"),
            std::string::npos)
      << confirm.out;
  ts = trials();
  const auto retried = std::find_if(ts.begin(), ts.end(), [](const search::FrozenTrial& t) {
    return t.system_attrs.value(k_attr_retry_of, -1) == 1;
  });
  ASSERT_NE(retried, ts.end());
  EXPECT_EQ(retried->state, TrialState::complete);
  const auto report = tune({"report", "-f", "json", study});
  EXPECT_EQ(nlohmann::json::parse(report.out)["baseline"]["number"], retried->number);
}

// The study, its baselines and its rule trials are one step: a TMPDIR that names no folder (which
// used to throw between them) costs none of them, and where a temporary folder is needed the
// error names TMPDIR.
TEST_F(BaselineCut, ABadTmpdirLeavesTheStudyWithAllItsBaselines) {
  const auto study = test_support::write_file(
      m_dir / "rules.yaml", "name: cut\noutput: " + (m_dir / "out").string() +
                                "\ncommand: [sh, -c, 'echo value=$0', '{threads}']\n"
                                "objective: {regex: 'value=([0-9]+)'}\n"
                                "sampler: {type: random, seed: 3}\n"
                                "enqueue: [{threads: 4}]\n"
                                "rules: [cores_per_rank]\n"
                                "knobs: {threads: {pool: openmp}}\n"
                                "params:\n  threads: {type: int, low: 1, high: 8}\n");
  const auto run = tune({"--trials", "2", study}, {{"TMPDIR", (m_dir / "nope").string()}});
  const auto ts = trials();
  ASSERT_GE(ts.size(), 2u) << run.out << run.err;
  EXPECT_TRUE(ts[0].system_attrs.contains(k_attr_fixed_params));
  EXPECT_TRUE(ts[1].system_attrs.contains(k_attr_rules)) << ts[1].system_attrs.dump();
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  // Where a temporary folder is needed (init's probe run), the reason names TMPDIR and the path.
  const auto init = tune({"init", "--no-input", "--probe-for", "1s", "--", "sh", "-c", "echo 1"},
                         {{"TMPDIR", (m_dir / "nope").string()}});
  EXPECT_NE(init.err.find("cannot make a temporary folder in " + (m_dir / "nope").string() +
                          " (the folder TMPDIR names): No such file or directory"),
            std::string::npos)
      << init.err;
}

// The seed is written with the study, once: a second creation finds the study and adds nothing.
TEST(StudySeed, IsWrittenWithTheStudyOnce) {
  const auto path = fs::temp_directory_path() / "tune-seed-test.db";
  fs::remove(path);
  auto s = SqliteStorage::open(path.string());
  ASSERT_TRUE(s) << s.error();
  StudySeed seed;
  seed.user_attrs["k"] = "v";
  seed.waiting_trials = {{{"fixed_params", {{"x", 1}}}}, {{"rules", {"openmpi"}}}};
  bool created = false;
  auto study = (*s)->get_or_create_study("s", {search::Direction::minimize}, &created, seed);
  ASSERT_TRUE(study);
  EXPECT_TRUE(created);
  auto again = (*s)->get_or_create_study("s", {search::Direction::minimize}, &created, seed);
  ASSERT_TRUE(again);
  EXPECT_FALSE(created);
  const auto ts = (*s)->get_all_trials(study->study_id);
  ASSERT_TRUE(ts);
  ASSERT_EQ(ts->size(), 2u);
  EXPECT_EQ((*ts)[0].number, 0);
  EXPECT_EQ((*ts)[0].state, TrialState::waiting);
  EXPECT_EQ((*ts)[0].system_attrs["fixed_params"]["x"], 1);
  EXPECT_EQ((*ts)[1].system_attrs["rules"][0], "openmpi");
  EXPECT_EQ((*(*s)->get_study_user_attrs(study->study_id))["k"], "v");
  // A keyed creation adds a trial once.
  auto one = (*s)->create_trial_unless(study->study_id, TrialState::waiting, {{"tune:retry_of", 0}},
                                       "tune:retry_of");
  ASSERT_TRUE(one);
  EXPECT_TRUE(one->has_value());
  auto two = (*s)->create_trial_unless(study->study_id, TrialState::waiting, {{"tune:retry_of", 0}},
                                       "tune:retry_of");
  ASSERT_TRUE(two);
  EXPECT_FALSE(two->has_value());
  fs::remove(path);
}

}  // namespace
}  // namespace tune::tuner
