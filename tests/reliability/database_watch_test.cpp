// Issue 50, point 6: the study's SQLite file removed or replaced while `tune` runs. SQLite goes on
// writing to the unlinked file, so tune used to say "6 complete" and exit 0 with every result
// gone. Now the first write after it fails: tune exits 1, and the trial it holds keeps its result
// in its folder's result.json, as for a database that stopped answering.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class DatabaseWatch : public test_support::TempDirTest {
 protected:
  DatabaseWatch() : TempDirTest("tune-dbwatch-") {}

  // Trials print value=x; the one with x = 5 first runs `action` on the study's database.
  std::string write_study(const std::string& action) {
    const auto db = (m_dir / "out" / "study.db").string();
    return test_support::write_file(m_dir / "study.yaml",
                                    "name: watched\noutput: " + (m_dir / "out").string() +
                                        "\ncommand: [sh, -c, 'if [ \"$0\" = 5 ]; then " + action +
                                        "; fi; echo value=$0', "
                                        "'{x}']\n"
                                        "objective: {regex: 'value=([0-9]+)'}\n"
                                        "sampler: {type: random, seed: 3}\n"
                                        "enqueue: [{x: 1}, {x: 5}, {x: 2}]\n"
                                        "params:\n  x: {type: int, low: 1, high: 9}\n");
  }
  void expect_stopped_and_kept(const std::string& study, const std::string& what) {
    const auto run =
        test_support::run_command({TUNE_BIN, "--trials", "3", study}, m_dir, {}, "tune");
    EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
    EXPECT_NE(run.err.find(what), std::string::npos) << run.err;
    // Trial 1 (x = 5) ran; its result waits in its folder, never reported as stored.
    const auto kept = m_dir / "out" / "trials" / "1" / "result.json";
    ASSERT_TRUE(fs::exists(kept)) << run.out << run.err;
    const auto json = nlohmann::json::parse(test_support::read_file(kept));
    EXPECT_EQ(json.value("state", std::string()), "COMPLETE") << json.dump();
    EXPECT_EQ(json.value("values", std::vector<double>{}), std::vector<double>{5.0}) << json.dump();
    EXPECT_NE(run.err.find(kept.string()), std::string::npos) << run.err;
    // The third trial never ran, and nothing says it was stored.
    EXPECT_FALSE(fs::exists(m_dir / "out" / "trials" / "2")) << run.out;
    EXPECT_EQ(run.out.find("3 complete"), std::string::npos) << run.out;
  }
};

TEST_F(DatabaseWatch, ARemovedDatabaseStopsTuneAndKeepsTheResult) {
  const auto db = (m_dir / "out" / "study.db").string();
  const auto study = write_study("rm -f " + db + " " + db + "-wal " + db + "-shm");
  expect_stopped_and_kept(study, "the database file was removed while tune ran");
}

TEST_F(DatabaseWatch, AReplacedDatabaseStopsTuneAndKeepsTheResult) {
  const auto db = (m_dir / "out" / "study.db").string();
  const auto study = write_study("cp " + db + " " + db + ".new && mv " + db + ".new " + db);
  expect_stopped_and_kept(study, "the database file was replaced by another while tune ran");
}

}  // namespace
}  // namespace tune::tuner
