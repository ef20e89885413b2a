// `tune` workers sharing one PostgreSQL study, as workers on many hosts would: three of them at
// once (TPE with the constant liar) each run their trials with distinct numbers, which
// python3-optuna reads back; a worker SIGKILLed mid-trial leaves a RUNNING trial that the next
// worker marks FAIL, on this host by the dead pid and from "another host" by its heartbeats.
#include <gtest/gtest.h>

#include <signal.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tests/cluster/postgres_fixture.h"
#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;

class PostgresWorkers : public tune::testing::PostgresTest {
 protected:
  void SetUp() override {
    PostgresTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    m_dir = fs::temp_directory_path() / ("tune-pg-workers-" + m_db);
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    if (!HasFailure() && !m_dir.empty()) fs::remove_all(m_dir);
  }
  // The fake trial on a study in this test's database; `extra` goes after --value.
  std::string write_study(const std::string& file, const std::string& extra = "") {
    const auto path = (m_dir / file).string();
    std::ofstream(path) << "name: shared\noutput: " << (m_dir / "out").string()
                        << "\nstorage: " << url()
                        << "\ncommand: ['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}'"
                        << extra
                        << "]\n"
                           "sampler: {type: tpe, seed: 1, constant_liar: true, "
                           "n_startup_trials: 5}\n"
                           "params:\n  x: {type: float, low: 1, high: 10}\n"
                           "  y: {type: int, low: 0, high: 8}\n";
    return path;
  }
  std::vector<search::FrozenTrial> trials() {
    auto s = open_storage(url());
    EXPECT_TRUE(s) << s.error();
    if (!s) return {};
    auto study = (*s)->get_study("shared");
    EXPECT_TRUE(study) << study.error();
    if (!study) return {};
    auto all = (*s)->get_all_trials(study->study_id);
    EXPECT_TRUE(all) << all.error();
    return all ? *all : std::vector<search::FrozenTrial>();
  }
  bp::child worker(const std::string& study, const std::string& trials, const std::string& tag,
                   const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"--trials", trials, "--quiet"};
    args.insert(args.end(), more.begin(), more.end());
    args.push_back(study);
    return bp::child(TUNE_BIN, bp::args(args), bp::std_out > bp::null,
                     bp::std_err > (m_dir / (tag + ".err")).string());
  }
  fs::path m_dir;
};

TEST_F(PostgresWorkers, ThreeWorkersShareOneStudyAndOptunaAgrees) {
  const auto study = write_study("study.yaml");
  constexpr int k_workers = 3, k_trials = 20;
  std::vector<bp::child> workers;
  for (int w = 0; w < k_workers; ++w) {
    workers.push_back(worker(study, std::to_string(k_trials), "w" + std::to_string(w)));
  }
  for (int w = 0; w < k_workers; ++w) {
    workers[w].wait();
    EXPECT_EQ(workers[w].exit_code(), 0)
        << test_support::read_file(m_dir / ("w" + std::to_string(w) + ".err"));
  }
  auto ts = trials();
  std::set<int> numbers;
  for (const auto& t : ts) {
    numbers.insert(t.number);
    EXPECT_EQ(t.state, TrialState::complete) << "trial " << t.number;
  }
  EXPECT_EQ(ts.size(), std::size_t{k_workers * k_trials});
  EXPECT_EQ(numbers.size(), std::size_t{k_workers * k_trials});
  EXPECT_EQ(*numbers.rbegin(), k_workers * k_trials - 1);
  // python3-optuna on the same URL sees the same 60 trials, numbers and values.
  const char* k_check =
      "import optuna, sys\n"
      "t = optuna.load_study(study_name='shared', storage=sys.argv[1]).trials\n"
      "assert len(t) == 60, len(t)\n"
      "assert sorted(x.number for x in t) == list(range(60))\n"
      "assert all(x.state.name == 'COMPLETE' for x in t)\n"
      "assert all(abs(x.value - x.params['x']) < 1e-5 for x in t), [(x.value, x.params) for x in "
      "t]\n"
      "assert all(isinstance(x.params['y'], int) for x in t)\n";
  const auto log = m_dir / "optuna.log";
  EXPECT_EQ(tune::testing::run_argv({"/usr/bin/python3", "-c", k_check, url()}, log), 0)
      << test_support::read_file(log);
}

// Waits (bounded) for a condition; the condition, not a fixed delay, ends the wait.
template <typename F>
bool wait_until(F&& done, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// A worker killed with SIGKILL mid-trial cannot mark its trial: the next worker to open the
// study does, as FAIL, and runs its own trial.
TEST_F(PostgresWorkers, AKilledWorkersTrialIsRecoveredAsFail) {
  for (const bool other_host : {false, true}) {
    SCOPED_TRACE(other_host ? "owner on another host" : "owner on this host");
    const auto hang = m_dir / "hang";
    const auto started = m_dir / "started";
    std::ofstream(hang) << "1";
    fs::remove(started);
    const auto hanging = write_study("hang.yaml", ", --hang-if-exists, '" + hang.string() +
                                                      "', --started, '" + started.string() + "'");
    auto a = worker(hanging, "1", "a");
    ASSERT_TRUE(wait_until([&] { return fs::exists(started) && fs::file_size(started) > 0; },
                           std::chrono::seconds(30)));
    ASSERT_EQ(kill(a.id(), SIGKILL), 0);
    a.wait();
    fs::remove(hang);
    auto ts = trials();
    ASSERT_FALSE(ts.empty());
    const auto killed = ts.back();
    ASSERT_EQ(killed.state, TrialState::running);
    std::vector<std::string> more;
    if (other_host) {
      // Then only its heartbeats (the server's clock) speak for it: past the grace period.
      auto s = std::move(*open_storage(url()));
      ASSERT_TRUE(s->set_trial_system_attr(killed.trial_id, k_attr_owner,
                                           {{"host", "elsewhere"}, {"pid", 1}, {"start", 1}}));
      ASSERT_TRUE(wait_until(
          [&] {
            auto life = s->trial_liveness(killed.trial_id);
            return life && life->since_heartbeat_s && *life->since_heartbeat_s > 1.5;
          },
          std::chrono::seconds(30)));
      more = {"--storage", url() + "?grace_period=1s"};
    }
    auto b = worker(write_study("plain.yaml"), "1", "b", more);
    b.wait();
    ASSERT_EQ(b.exit_code(), 0) << test_support::read_file(m_dir / "b.err");
    ts = trials();
    const auto& recovered = ts[static_cast<std::size_t>(killed.number)];
    EXPECT_EQ(recovered.state, TrialState::fail);
    EXPECT_NE(recovered.system_attrs.value(k_attr_fail_reason, std::string()).find("died"),
              std::string::npos);
    EXPECT_EQ(ts.back().state, TrialState::complete);
    EXPECT_EQ(ts.back().number, killed.number + 1);
  }
}

}  // namespace
}  // namespace tune::tuner
