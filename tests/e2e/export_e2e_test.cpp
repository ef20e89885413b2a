// `tune export` ships what the study showed (issue 36 point 5), end to end: a study run for real
// and confirmed (each trial `cat`s a value the test wrote for its number, so the values are
// known), then the `tune` binary's export. A best within the noise of the baseline (the report
// says so) is not shipped: stderr's first line and the script's header say why, and the script
// runs the baseline's setting; a best beyond the noise is shipped with the median of its re-runs;
// `--trial N` writes any completed trial and refuses a missing one or a re-run with exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/common/test_support.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using test_support::read_file;

class ExportE2E : public test_support::TempDirTest {
 protected:
  ExportE2E() : TempDirTest("tune-export-e2e-") {}

  // A study in `dir`: trial N prints values/N. The three settings are enqueued, a (the
  // baseline, #0), b (#1) and c (#2), so the trial numbers are known.
  std::string write_study(const fs::path& dir, const std::map<int, double>& values) {
    fs::create_directories(dir / "values");
    for (const auto& [n, v] : values)
      std::ofstream(dir / "values" / std::to_string(n)) << "v=" << v << '\n';
    return test_support::write_file(
        dir / "study.yaml", "name: ex\noutput: " + (dir / "out").string() +
                                "\ncommand: [/bin/cat, '{study_dir}/values/{trial_number}']\n"
                                "env: {X: '{x}'}\n"
                                "objective: {regex: 'v=([0-9.]+)'}\n"
                                "params:\n  x: [a, b, c]\n"
                                "enqueue: [{x: a}, {x: b}, {x: c}]\n");
  }
  test_support::CommandOutput tune(std::vector<std::string> args) {
    args.insert(args.begin(), TUNE_BIN);
    return test_support::run_command(args, m_dir, {}, "tune");
  }
  // The three trials, then `tune confirm --repeats 3 --top 1`: re-runs #3..#8 alternate between
  // the baseline #0 (#3, #5, #7) and the best (#4, #6, #8).
  void run_and_confirm(const std::string& study) {
    const auto run = tune({"--trials", "3", "--quiet", study});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto confirm = tune({"confirm", study, "--repeats", "3", "--top", "1", "--quiet"});
    ASSERT_EQ(confirm.exit_code, 0) << confirm.err;
  }
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST_F(ExportE2E, ABestWithinTheNoiseExportsTheBaselineAndSaysSo) {
  // #2 (c) ran a lucky 9.1; re-run it measures 9.9, 10.3, 9.6 against the baseline's 10.0,
  // 10.4, 9.8: 1.01x, within the noise.
  const auto study =
      write_study(m_dir / "within", {{0, 10.2}, {1, 10.6}, {2, 9.1}, {3, 10.0}, {4, 9.9},
                                     {5, 10.4}, {6, 10.3}, {7, 9.8}, {8, 9.6}});
  run_and_confirm(study);
  if (HasFatalFailure()) return;
  const auto report = tune({"report", study});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  ASSERT_TRUE(report.out.contains("within the noise: not shown to be faster than the baseline"))
      << report.out;

  const auto script = m_dir / "within.sh";
  auto e = tune({"export", study, "-o", script.string()});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(first_line(e.err),
            "tune: the best (trial 2, 1.010x the baseline) is within the noise of the baseline: "
            "exporting the baseline (trial 0); pass --trial 2 to export the best anyway");
  const auto text = read_file(script);
  EXPECT_TRUE(text.contains("\n# Exported by `tune export` from study 'ex', trial #0.\n"
                            "# The baseline, not the best: the best, trial #2, against it: 1.010x,"))
      << text;
  EXPECT_TRUE(text.contains("\n# Measured: value = 10 (median of 3 runs: its re-runs)\n")) << text;
  EXPECT_TRUE(text.contains("\nexport X=a\n")) << text;
  // The script runs the baseline's trial: it prints the baseline's value file.
  const auto ran = test_support::run_command({"bash", script.string()}, m_dir,
                                             {{"TUNE_OUT", (m_dir / "run").string()}}, "script");
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "v=10.2\n");

  // --trial N: the best anyway, said to be within the noise; a slower one; bad numbers exit 2.
  e = tune({"export", study, "--trial", "2", "--format", "env"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(first_line(e.err),
            "tune: trial 2 (1.010x the baseline) is within the noise of the baseline (trial 0): "
            "exporting it as asked");
  EXPECT_TRUE(e.out.contains("\n# Trial #2 (--trial), not shown to beat the baseline (trial #0): "))
      << e.out;
  EXPECT_TRUE(e.out.contains("\nX=c\n")) << e.out;
  e = tune({"export", study, "--trial", "1", "--format", "mpirun"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_TRUE(first_line(e.err).starts_with("tune: trial 1 (0.943x the baseline) ")) << e.err;
  EXPECT_TRUE(e.out.contains("X=b")) << e.out;
  e = tune({"export", study, "--trial", "99"});
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_EQ(e.err, "tune: error: --trial 99: no such trial in study 'ex' (9 trials)\n");
  e = tune({"export", study, "--trial", "4"});
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_EQ(e.err,
            "tune: error: --trial 4: trial #4 is a re-run of trial #2 (its run counts toward "
            "#2's value); export --trial 2\n");
}

TEST_F(ExportE2E, ABestBeyondTheNoiseIsExportedWithTheMedianOfItsRuns) {
  // #2 (c) ran 7.5; re-run it measures 8.0, 8.05, 7.95 against the baseline's 10.0, 10.1, 9.9.
  const auto study =
      write_study(m_dir / "beyond", {{0, 10.2}, {1, 10.6}, {2, 7.5}, {3, 10.0}, {4, 8.0},
                                     {5, 10.1}, {6, 8.05}, {7, 9.9}, {8, 7.95}});
  run_and_confirm(study);
  if (HasFatalFailure()) return;
  const auto e = tune({"export", study, "--format", "slurm"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.err, "") << "nothing to warn about";
  EXPECT_TRUE(e.out.contains("\n# Exported by `tune export` from study 'ex', trial #2.\n"
                             "# The best trial: against the baseline (trial #0) 1.250x, 95% CI ["))
      << e.out;
  EXPECT_TRUE(e.out.contains("\n# Measured: value = 8 (median of 3 runs: its re-runs)\n")) << e.out;
  EXPECT_FALSE(e.out.contains("= 7.5")) << "never the lucky search run's value\n" << e.out;
  EXPECT_TRUE(e.out.contains("\nexport X=c\n")) << e.out;
}

}  // namespace
}  // namespace tune::tuner
