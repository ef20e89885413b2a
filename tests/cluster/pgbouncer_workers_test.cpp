// `tune` workers through PgBouncer in transaction pooling mode (issue 27): more workers than
// the pool has server connections (eight workers, two connections), so every worker's
// transactions run on whichever server connection is free. The study comes out whole: numbers
// 0..N-1 once each, every trial COMPLETE with the value its run printed, none left RUNNING, and
// python3-optuna reads the same study through the pooler.
#include <gtest/gtest.h>

#include <boost/process.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/cluster/pgbouncer_fixture.h"
#include "tests/cluster/postgres_fixture.h"
#include "tests/common/test_support.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;

class PgBouncerWorkers : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    if (auto skip = tune::testing::start_shared_pgbouncer(&error); !skip.empty())
      GTEST_SKIP() << skip;
    ASSERT_EQ(error, "");
    m_db = tune::testing::test_database_name();
    ASSERT_EQ(tune::testing::shared_postgres()->create_database(m_db), "");
    m_dir = fs::temp_directory_path() / ("tune-pgbouncer-" + m_db);
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    if (!HasFailure() && !m_dir.empty()) fs::remove_all(m_dir);
  }
  std::string pooled_url() const { return tune::testing::shared_pgbouncer()->url(m_db); }

  std::string m_db;
  fs::path m_dir;
};

TEST_F(PgBouncerWorkers, EightWorkersThroughTwoServerConnectionsShareOneStudy) {
  constexpr int k_workers = 8, k_trials = 6;
  const auto study = m_dir / "study.yaml";
  std::ofstream(study) << "name: pooled\noutput: " << (m_dir / "out").string()
                       << "\nstorage: " << pooled_url()
                       << "\ncommand: ['" FAKE_TRIAL
                          "', --out, '{trial_dir}', --value, '{x}']\n"
                          "sampler: {type: tpe, seed: 1, constant_liar: true, "
                          "n_startup_trials: 4}\n"
                          "params:\n  x: {type: float, low: 1, high: 10}\n";
  std::vector<bp::child> workers;
  for (int w = 0; w < k_workers; ++w) {
    workers.emplace_back(
        TUNE_BIN, bp::args({"--trials", std::to_string(k_trials), "--quiet", study.string()}),
        bp::std_out > bp::null,
        bp::std_err > (m_dir / ("w" + std::to_string(w) + ".err")).string());
  }
  for (int w = 0; w < k_workers; ++w) {
    workers[w].wait();
    EXPECT_EQ(workers[w].exit_code(), 0)
        << test_support::read_file(m_dir / ("w" + std::to_string(w) + ".err"));
  }
  auto storage = open_storage(pooled_url(), OpenMode::read_only);
  ASSERT_TRUE(storage) << storage.error();
  auto info = (*storage)->get_study("pooled");
  ASSERT_TRUE(info) << info.error();
  auto trials = (*storage)->get_all_trials(info->study_id);
  ASSERT_TRUE(trials) << trials.error();
  ASSERT_EQ(trials->size(), std::size_t{k_workers * k_trials});
  std::set<int> numbers;
  for (const auto& t : *trials) {
    EXPECT_TRUE(numbers.insert(t.number).second) << "number " << t.number << " twice";
    EXPECT_EQ(t.state, TrialState::complete) << "trial " << t.number;
    ASSERT_TRUE(t.value && t.params.contains("x")) << "trial " << t.number;
    EXPECT_NEAR(*t.value, t.params.at("x"), 1e-5) << "trial " << t.number;
  }
  EXPECT_EQ(*numbers.rbegin(), k_workers * k_trials - 1);
  // python3-optuna (SQLAlchemy, psycopg2) through the same pooler sees the same study.
  const char* k_check =
      "import optuna, sys\n"
      "t = optuna.load_study(study_name='pooled', storage=sys.argv[1]).trials\n"
      "assert sorted(x.number for x in t) == list(range(int(sys.argv[2]))), len(t)\n"
      "assert all(x.state.name == 'COMPLETE' for x in t)\n";
  const auto log = m_dir / "optuna.log";
  EXPECT_EQ(tune::testing::run_argv({"/usr/bin/python3", "-c", k_check, pooled_url(),
                                     std::to_string(k_workers * k_trials)},
                                    log),
            0)
      << test_support::read_file(log);
}

}  // namespace
}  // namespace tune::tuner
