// Re-runs end to end (tuner/judge/reruns.h): after `tune confirm`, python3-optuna's best_trial
// (what its CLI and dashboard show) is the trial tune believes best, not a lucky re-run; and
// `incumbent_repeats:` re-measures each new best as the next trials. The trial command is `cat`
// of a file the test wrote for that trial number, so the noisy values are known in advance.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

class RerunE2E : public test_support::TempDirTest {
 protected:
  RerunE2E() : TempDirTest("tune-rerun-e2e-") {}

  // The study file: trial N prints values/N; `extra` is appended.
  std::string write_study(const std::map<int, double>& values, const std::string& extra = "") {
    fs::create_directories(m_dir / "values");
    for (const auto& [n, v] : values)
      std::ofstream(m_dir / "values" / std::to_string(n)) << "v=" << v << '\n';
    return test_support::write_file(
        m_dir / "study.yaml", "name: rr\noutput: " + (m_dir / "out").string() +
                                  "\ncommand: [/bin/cat, '{study_dir}/values/{trial_number}']\n"
                                  "objective: {regex: 'v=([0-9.]+)'}\n"
                                  "sampler: {type: random, seed: 3}\n"
                                  "params:\n  x: [a, b, c, d, e, f, g]\n"
                                  "enqueue: [{x: a}]\n" +
                                  extra);
  }
  test_support::CommandOutput tune(std::vector<std::string> args) {
    args.insert(args.begin(), TUNE_BIN);
    return test_support::run_command(args, m_dir, {}, "tune");
  }
  // python3-optuna's best_trial.number of the stored study.
  int optuna_best() {
    const auto py =
        test_support::run_command({"/usr/bin/python3", "-c",
                                   "import optuna, sys; print(optuna.load_study(study_name='rr', "
                                   "storage='sqlite:///' + sys.argv[1]).best_trial.number)",
                                   (m_dir / "out" / "study.db").string()},
                                  m_dir, {}, "py");
    EXPECT_EQ(py.exit_code, 0) << py.err;
    return std::atoi(py.out.c_str());
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "rr");
  }
  static bool have_optuna() {
    return std::system("/usr/bin/python3 -c 'import optuna' >/dev/null 2>&1") == 0;
  }
};

TEST_F(RerunE2E, OptunasBestAfterConfirmIsTunesBest) {
  if (!have_optuna()) GTEST_SKIP() << "python3-optuna is not installed (scripts/install-deps.sh)";
  // #0 baseline 10, search #1 5, #2 4, #3 6; confirm --top 2 re-runs #0, #2, #1 in turn (#4..#12):
  // #2 measures 4.8, 3.0 (lucky: the lowest value of all), 4.9 -> median 4.8; #1 4.5, 4.6, 4.4
  // -> median 4.5, the best.
  const auto study = write_study({{0, 10},
                                  {1, 5},
                                  {2, 4},
                                  {3, 6},
                                  {4, 10},
                                  {5, 4.8},
                                  {6, 4.5},
                                  {7, 10},
                                  {8, 3.0},
                                  {9, 4.6},
                                  {10, 10},
                                  {11, 4.9},
                                  {12, 4.4}});
  ASSERT_EQ(tune({"--trials", "4", "--quiet", study}).exit_code, 0);
  const auto confirm = tune({"confirm", study, "--repeats", "3", "--top", "2", "--quiet"});
  ASSERT_EQ(confirm.exit_code, 0) << confirm.err;
  EXPECT_NE(confirm.out.find("best: #1 (best median of 3 re-runs (spread 4.4%))"),
            std::string::npos)
      << confirm.out;
  const auto best = tune({"best", study});
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(best.out.find("best trial: #1 "), std::string::npos) << best.out;
  EXPECT_EQ(optuna_best(), 1);

  // Nothing lost: every re-run keeps its measurement, the originals their own run.
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 13u);
  EXPECT_EQ(rerun_value(ts[8]), 3.0);
  EXPECT_EQ(ts[8].state, TrialState::pruned);
  EXPECT_EQ(search_value(ts[2]), 4.0);
  EXPECT_EQ(ts[2].value, 4.8);
  EXPECT_EQ(ts[1].value, 4.5);
  EXPECT_EQ(ts[3].value, 6.0);  // never re-run: its own value
  // The report still shows the search run and the median of the re-runs.
  const auto report = tune({"report", study, "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto j = nlohmann::json::parse(report.out);
  EXPECT_EQ(j["best"]["number"], 1);
  EXPECT_EQ(j["counts"]["reruns"], 9);
  EXPECT_EQ(j["trials"][2]["value"], 4.0);
  EXPECT_EQ(j["trials"][8]["value"], 3.0);
  EXPECT_EQ(j["trials"][8]["state"], "RERUN");
  // `tune trials` lists a re-run as one, with what it measured (stored PRUNED, no value).
  const auto listed = tune({"trials", study});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::istringstream lines(listed.out);
  std::string line, eighth;
  while (std::getline(lines, line))
    if (line.starts_with("     8  ")) eighth = line;
  EXPECT_NE(eighth.find("RERUN"), std::string::npos) << listed.out;
  EXPECT_NE(eighth.find("  3  "), std::string::npos) << listed.out;
  EXPECT_NE(eighth.find("# re-run of #2"), std::string::npos) << listed.out;
}

TEST_F(RerunE2E, IncumbentRepeatsReMeasureEachNewBest) {
  // #0 baseline 10 (best: re-run as #1, #2 -> 9, 11); #3 3 (lucky: new best, re-run as #4, #5 ->
  // 7, 8, believed 7.5); #6 8 (not a new best); #7 6 (new best: re-run #8, #9 -> 6.2, 6.1).
  const auto study = write_study(
      {{0, 10}, {1, 9}, {2, 11}, {3, 3}, {4, 7}, {5, 8}, {6, 8}, {7, 6}, {8, 6.2}, {9, 6.1}},
      "incumbent_repeats: 2\n");
  const auto run = tune({"--trials", "10", study});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 10u);
  const std::map<int, int> of = {{1, 0}, {2, 0}, {4, 3}, {5, 3}, {8, 7}, {9, 7}};
  for (const auto& t : ts) {
    const auto it = of.find(t.number);
    EXPECT_EQ(rerun_of(t), it == of.end() ? std::nullopt : std::optional<int>(it->second))
        << "trial #" << t.number;
  }
  EXPECT_EQ(ts[3].value, 7.5);  // believed: the median of its re-runs
  EXPECT_EQ(search_value(ts[3]), 3.0);
  EXPECT_EQ(ts[7].value, 6.15);
  const auto best = tune({"best", study});
  EXPECT_NE(best.out.find("best trial: #7 "), std::string::npos) << best.out;
  // The report says the best was re-measured: how often, and how far apart.
  const auto report = tune({"report", study});
  EXPECT_NE(report.out.find("chosen by: best median of 2 re-runs (spread 1.6%)"), std::string::npos)
      << report.out;
}

}  // namespace
}  // namespace tune::tuner
