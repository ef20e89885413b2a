// A stored value is what the job printed, or the trial fails, with the real `tune`: `tune init`
// on a job printing Python's `{:,}` (`throughput: 12,345.6 samples/s`) or a decimal comma
// (`time: 1,75 s`), then a trial of the study it wrote, stores 12345.6 and 1.75; a hand-written
// regex that reads 12 of 12,345.6 fails the trial naming the text (so does a window's progress
// regex that reads 12 of `samples 12,345`, and `number: grouped` measures it whole); and a
// result file the job deleted is reported as deleted, not as never written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;
using test_support::read_file;
using test_support::write_file;

class NumberE2E : public test_support::TempDirTest {
 protected:
  NumberE2E() : TempDirTest("tune-number-e2e-") {}

  test_support::CommandOutput tune(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run_command(argv, m_dir, {}, "tune");
  }
  // `tune init` on `command`, then one trial of the study it wrote: that trial.
  search::FrozenTrial init_then_one_trial(const std::vector<std::string>& command,
                                          std::string& study_text) {
    std::vector<std::string> args = {"init", "--no-input", "-o", "study.yaml", "--"};
    args.insert(args.end(), command.begin(), command.end());
    const auto made = tune(args);
    EXPECT_EQ(made.exit_code, 0) << made.out << made.err;
    study_text = read_file(m_dir / "study.yaml");
    const auto spec = load_study_spec((m_dir / "study.yaml").string());
    EXPECT_TRUE(spec) << spec.error() << "\n" << study_text;
    if (!spec) return {};
    const auto ran = tune({"--trials", "1", "--quiet", "study.yaml"});
    EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;
    auto ts = test_support::stored_trials(m_dir / "tune-out" / spec->name / "study.db", spec->name);
    std::erase_if(ts, [](const auto& t) { return t.state == TrialState::waiting; });
    EXPECT_EQ(ts.size(), 1u) << study_text;
    return ts.empty() ? search::FrozenTrial{} : ts.front();
  }
  // One trial of a hand-written study whose job is `sh -c script` and whose objective is
  // `objective` (YAML); the trial.
  search::FrozenTrial one_trial(const std::string& script, const std::string& objective,
                                const std::string& extra = "") {
    const auto study = write_file(m_dir / "s.yaml", "name: n\noutput: " + (m_dir / "out").string() +
                                                        "\ncommand: [sh, -c, '" + script +
                                                        "']\n"
                                                        "direction: maximize\n"
                                                        "objective: " +
                                                        objective + "\n" + extra);
    const auto ran = tune({"--trials", "1", "--quiet", study});
    EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;
    const auto ts = test_support::stored_trials(m_dir / "out" / "study.db", "n");
    EXPECT_EQ(ts.size(), 1u);
    return ts.empty() ? search::FrozenTrial{} : ts.front();
  }
  static std::string reason(const search::FrozenTrial& t) {
    return t.system_attrs.value(k_attr_fail_reason, std::string());
  }
};

TEST_F(NumberE2E, InitReadsPythonsGroupedThousandsWholeAndTheTrialStoresThem) {
  std::string text;
  const auto t = init_then_one_trial(
      {"/usr/bin/python3", "-c", "print(f'throughput: {12345.6:,} samples/s')"}, text);
  EXPECT_TRUE(text.contains("  number: grouped\n")) << text;
  EXPECT_FALSE(text.contains("throughput 12 ")) << text;
  ASSERT_EQ(t.state, TrialState::complete) << reason(t) << "\n" << text;
  ASSERT_TRUE(t.value);
  EXPECT_EQ(*t.value, 12345.6);
}

TEST_F(NumberE2E, InitReadsADecimalCommaAsOneNumber) {
  std::string text;
  const auto t = init_then_one_trial({"/usr/bin/python3", "-c", "print('time: 1,75 s')"}, text);
  EXPECT_TRUE(text.contains("  number: decimal_comma\n")) << text;
  EXPECT_TRUE(text.contains("direction: minimize")) << text;
  ASSERT_EQ(t.state, TrialState::complete) << reason(t) << "\n" << text;
  ASSERT_TRUE(t.value);
  EXPECT_EQ(*t.value, 1.75);
}

TEST_F(NumberE2E, ARegexThatReadsPartOfTheNumberFailsTheTrialNamingTheText) {
  const auto t =
      one_trial("echo \"throughput: 12,345.6 samples/s\"", "{regex: \"throughput: ([0-9]+)\"}");
  EXPECT_EQ(t.state, TrialState::fail);
  EXPECT_FALSE(t.value) << "a made-up value was stored: " << *t.value;
  EXPECT_TRUE(
      reason(t).contains("objective regex matched '12', only part of the number "
                         "'12,345.6' in 'throughput: 12,345.6 samples/s'"))
      << reason(t);
}

TEST_F(NumberE2E, AResultFileTheJobDeletedIsToldFromOneNeverWritten) {
  // Written, kept while the job works on (tune looks every 0.5 s), then removed by the job.
  const auto deleted = one_trial("echo v=7 > result.txt; sleep 2; rm result.txt",
                                 "{file: result.txt, regex: \"v=([0-9]+)\"}");
  EXPECT_EQ(deleted.state, TrialState::fail);
  EXPECT_TRUE(reason(deleted).contains("result.txt was deleted during the trial: seen "))
      << reason(deleted);
  EXPECT_TRUE(reason(deleted).contains("(4 bytes), gone at its end")) << reason(deleted);
  fs::remove_all(m_dir / "out");

  // Never written: said so, and how it was looked for.
  const auto never = one_trial("sleep 1", "{file: result.txt, regex: \"v=([0-9]+)\"}");
  EXPECT_EQ(never.state, TrialState::fail);
  EXPECT_TRUE(
      reason(never).contains("result.txt was not written (looked for regex "
                             "'v=([0-9]+)'; not there at launch nor at any of "))
      << reason(never);
  fs::remove_all(m_dir / "out");

  // A file there when the trial starts (workdir: the study's folder), removed by the job at once.
  write_file(m_dir / "result.txt", "v=9\n");
  const auto at_launch =
      one_trial("rm result.txt", "{file: result.txt, regex: \"v=([0-9]+)\"}", "workdir: study\n");
  EXPECT_EQ(at_launch.state, TrialState::fail);
  EXPECT_TRUE(
      reason(at_launch).contains("result.txt was deleted during the trial: there at launch"))
      << reason(at_launch);
  EXPECT_TRUE(reason(at_launch).contains("(4 bytes), gone at its end")) << reason(at_launch);
}

// A job that prints progress as `step 3 samples 37,035 time 0.3` (samples per step 12,345; its
// own clock 0.1 s a step), 81 steps, so that the samples stay below 1,000,000.
constexpr const char* k_grouped_progress =
    "i=1; while [ $i -le 81 ]; do s=$((i*12345)); printf \"step %d samples %d,%03d time "
    "%d.%d\\n\" $i $((s/1000)) $((s%1000)) $((i/10)) $((i%10)); i=$((i+1)); sleep 0.02; done";

// The window reads progress lines while the job runs: `samples ([0-9]+)` would read 12 of
// 12,345, a made-up counter; the trial fails naming the line instead, and nothing is stored.
TEST_F(NumberE2E, AWindowThatReadsPartOfAProgressNumberFailsTheTrialNamingTheLine) {
  const auto t = one_trial(k_grouped_progress,
                           "{window: {regex: \"samples ([0-9]+)\", warmup: 0, min: 1s, max: 5s}}");
  EXPECT_EQ(t.state, TrialState::fail);
  EXPECT_FALSE(t.value) << "a made-up value was stored: " << *t.value;
  EXPECT_TRUE(
      reason(t).contains("the window's regex 'samples ([0-9]+)' on stdout matched '12', only "
                         "part of the number '12,345' in 'step 1 samples 12,345 time 0.1'"))
      << reason(t);
  ASSERT_TRUE(t.user_attrs.contains(k_attr_window));
  const auto& w = t.user_attrs.at(k_attr_window);
  EXPECT_EQ(w.value("status", ""), "partial_number") << w.dump();
  EXPECT_EQ(w["lines"].value("points", -1), 0) << w.dump();
  EXPECT_GE(w["lines"].value("refused", 0), 1) << w.dump();
}

// With `number: grouped` and a regex that takes the ',', the same lines read whole: 12,345
// samples every 0.1 s of the job's clock is 123,450 samples/s.
TEST_F(NumberE2E, AWindowWithNumberGroupedMeasuresTheWholeCounter) {
  const auto t = one_trial(k_grouped_progress,
                           "{window: {regex: \"samples ([0-9,]+) time (?P<time>[0-9.]+)\", "
                           "number: grouped, warmup: 0, min: 1s, max: 5s}}");
  ASSERT_EQ(t.state, TrialState::complete) << reason(t);
  ASSERT_TRUE(t.value);
  EXPECT_NEAR(*t.value, 123450, 1e-6);
  const auto& w = t.user_attrs.at(k_attr_window);
  EXPECT_EQ(w.value("clock", ""), "job") << w.dump();
  EXPECT_EQ(w["lines"].value("refused", -1), 0) << w.dump();

  // A number: style the file does not know is a load error naming its line, exit 2.
  write_file(m_dir / "bad.yaml",
             "name: b\ncommand: [sh, -c, 'true']\ndirection: maximize\nobjective:\n  window:\n"
             "    regex: 'samples ([0-9,]+)'\n    number: thousands\n");
  const auto bad = tune({"--trials", "1", "bad.yaml"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_TRUE(
      bad.err.contains("bad.yaml:7: key 'objective.window.number': 'thousands' is not a "
                       "number style"))
      << bad.err;
}

}  // namespace
}  // namespace tune::tuner
