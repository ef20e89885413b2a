// Workers that start together on a database nobody created yet: each one must get its trials
// stored, none may fail with "database is locked" (SQLite answers SQLITE_BUSY at once, without
// the busy handler, to one of two connections that both switch a new file to WAL). Seen in CI
// under load on ce6ca72's TuneE2E.TwoProcessesShareOneDatabase.
#include <gtest/gtest.h>

#include <boost/process.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;

TEST(Concurrency, EightWorkersStartingTogetherOnANewDatabase) {
  const auto dir = fs::temp_directory_path() / "tune-concurrency";
  constexpr int k_workers = 8;
  // Eight workers on two cores are each other's load: judged, each would mark and re-run the
  // trials the others slowed (load_check.h), and this test counts the trials the workers made.
  setenv("TUNE_LOAD_CHECK", "off", 0);
  for (int round = 0; round < 3; ++round) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto study = (dir / "study.yaml").string();
    std::ofstream(study) << "name: together\noutput: " << (dir / "out").string()
                         << "\ncommand: ['" FAKE_TRIAL
                            "', --out, '{trial_dir}', --value, '{x}']\n"
                            "params:\n  x: {type: float, low: 1, high: 10}\n";
    std::vector<bp::child> workers;
    for (int w = 0; w < k_workers; ++w) {
      workers.emplace_back(TUNE_BIN, "--trials", "2", "--quiet", study, bp::std_out > bp::null,
                           bp::std_err > (dir / ("w" + std::to_string(w) + ".err")).string());
    }
    for (int w = 0; w < k_workers; ++w) {
      workers[w].wait();
      std::ifstream err(dir / ("w" + std::to_string(w) + ".err"));
      EXPECT_EQ(workers[w].exit_code(), 0) << "round " << round << " worker " << w << ": "
                                           << std::string(std::istreambuf_iterator<char>(err), {});
    }
    auto s = SqliteStorage::open((dir / "out" / "study.db").string());
    ASSERT_TRUE(s) << s.error();
    auto info = (*s)->get_study("together");
    ASSERT_TRUE(info) << info.error();
    auto trials = (*s)->get_all_trials(info->study_id);
    ASSERT_TRUE(trials);
    std::set<int> numbers;
    for (const auto& t : *trials) numbers.insert(t.number);
    EXPECT_EQ(numbers.size(), 2u * k_workers) << "round " << round;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tune::tuner
