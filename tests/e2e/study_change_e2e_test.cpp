// Issue 37 point 3: a study file edited between runs of the same study, run through the real
// `tune` binary against the study's real SQLite database. A change Optuna would refuse or that
// would mix values under one name is a study-file error (exit 2, FILE:LINE: key); a widened
// range goes on with a note.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/common/test_support.h"

namespace tune::tuner {
namespace {

using test_support::write_file;

class StudyChangeE2E : public test_support::TempDirTest {
 protected:
  StudyChangeE2E() : TempDirTest("tune-study-change-e2e-") {}

  // The study file with `params` (lines 8 on) and `direction` (line 2).
  std::string study(const std::string& params, const std::string& direction = "minimize",
                    const std::string& objective = "{regex: 'v=([0-9]+)'}") {
    return write_file(m_dir / "study.yaml",
                      "name: changes\n"  // 1
                      "direction: " +
                          direction +
                          "\n"  // 2
                          "output: " +
                          (m_dir / "out").string() +           // 3
                          "\ncommand: [sh, -c, 'echo v=3']\n"  // 4
                          "objective: " +
                          objective +
                          "\n"                                  // 5
                          "probes: {enabled: false}\n"          // 6
                          "sampler: {type: random, seed: 1}\n"  // 7
                          "params:\n" +                         // 8
                          params);                              // 9...
  }
  test_support::CommandOutput tune(const std::string& study_file) {
    return test_support::run_command({TUNE_BIN, "--trials", "2", "--quiet", study_file}, m_dir, {},
                                     "tune");
  }
  std::size_t stored() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "changes").size();
  }
};

TEST_F(StudyChangeE2E, ARefusedChangeIsAStudyFileErrorAndAWidenedRangeANote) {
  const std::string x = "  x: {type: int, low: 1, high: 4}\n";
  const std::string c = "  c: [a, b]\n";
  const auto first = tune(study(x + c));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  ASSERT_EQ(stored(), 2u);

  // Choices changed: stored trials keep theirs by position.
  auto o = tune(study(x + "  c: [a, b, c]\n"));
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_NE(o.err.find("study.yaml:10: key 'params.c': the study's 2 trials drew it as "
                       "categorical [\"a\",\"b\"], the file now gives the choices "
                       "[\"a\",\"b\",\"c\"]"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("give it another 'name:'"), std::string::npos) << o.err;
  // int -> float.
  o = tune(study("  x: {type: float, low: 1, high: 4}\n" + c));
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("study.yaml:9: key 'params.x': the study's 2 trials drew it as int [1, "
                       "4], the file now as float [1, 4]: Optuna refuses"),
            std::string::npos)
      << o.err;
  // A parameter removed.
  o = tune(study(x));
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("study.yaml:8: key 'params.c': the study's 2 trials set it"),
            std::string::npos)
      << o.err;
  // The direction flipped: named at its line, not only by the database.
  o = tune(study(x + c, "maximize"));
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("study.yaml:2: key 'direction': study 'changes' was created to minimize; "
                       "the file says maximize"),
            std::string::npos)
      << o.err;
  // The objective reads another number.
  o = tune(study(x + c, "minimize", "{regex: 'w=([0-9]+)'}"));
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("study.yaml:5: key 'objective.regex': the study's trials measured"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(stored(), 2u) << "a refused file ran nothing";

  // Widened: the run goes on, with one line saying so.
  o = tune(study("  x: {type: int, low: 1, high: 8}\n" + c));
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("note: " + (m_dir / "study.yaml").string() +
                       ":9: key 'params.x': int [1, 4] in the study's 2 trials, int [1, 8] in "
                       "the file (widened)\n"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(stored(), 4u);
}

}  // namespace
}  // namespace tune::tuner
