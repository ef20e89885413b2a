// What the database cannot do to a trial (issue 25), on a real throwaway PostgreSQL server
// (postgres_fixture.h): the server stopped with SIGSTOP, postmaster and backends (it stops
// answering and keeps its sockets open, as a hung host does), or shut down and started again,
// while `tune` runs a 1-s trial whose value is its wall time. The stored value and timeout are
// the job's; a call during the stop returns within retry_for; past retry_for, tune exits 1 with
// the result kept, and the next tune stores it.
#include <gtest/gtest.h>

#include <signal.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/cluster/postgres_fixture.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/process_tree.h"
#include "tuner/run/pending_result.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;
using Clock = std::chrono::steady_clock;

using test_support::read_file;

// SIGSTOP to the postmaster and every process below it (backends, background workers) from
// construction to resume(), which SIGCONTs the same processes; the destructor resumes, so a
// failed assertion never leaves the shared server stopped for the next test.
class StoppedServer {
 public:
  explicit StoppedServer(pid_t postmaster) : m_since(Clock::now()) {
    if (postmaster <= 0) return;
    m_pids = descendants(postmaster);
    m_pids.insert(m_pids.begin(), postmaster);
    for (pid_t p : m_pids) kill(p, SIGSTOP);
  }
  ~StoppedServer() { resume(); }
  StoppedServer(const StoppedServer&) = delete;
  StoppedServer& operator=(const StoppedServer&) = delete;
  bool stopped() const { return !m_pids.empty(); }
  Clock::time_point since() const { return m_since; }
  // Seconds it was stopped.
  double resume() {
    if (m_pids.empty()) return 0;
    for (pid_t p : m_pids) kill(p, SIGCONT);
    m_pids.clear();
    return std::chrono::duration<double>(Clock::now() - m_since).count();
  }

 private:
  std::vector<pid_t> m_pids;
  Clock::time_point m_since;
};

class PostgresStall : public tune::testing::PostgresTest {
 protected:
  void SetUp() override {
    PostgresTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    m_dir = tune::testing::pg_fs::temp_directory_path() / ("tune-pg-stall-" + m_db);
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    if (!HasFailure() && !m_dir.empty()) fs::remove_all(m_dir);
  }
  // A 1-s job (or `job`) scored by its wall time, `timeout` its limit; `options` go after the
  // URL ("?retry_for=2s").
  std::string write_study(const std::string& options, const std::string& timeout,
                          const std::string& job = "sleep 1") {
    const auto path = (m_dir / "study.yaml").string();
    std::ofstream(path) << "name: stall\noutput: " << (m_dir / "out").string()
                        << "\nstorage: " << url() << options
                        << "\ncommand: [/bin/sh, -c, 'echo > started; " << job
                        << "; echo > done']\n"
                           "objective: {wall_time: true}\n"
                           "timeout: "
                        << timeout
                        << "\nsampler: {type: random, seed: 1}\n"
                           "params:\n  x: [1, 2]\n";
    return path;
  }
  fs::path trial_dir(int n) const { return m_dir / "out" / "trials" / std::to_string(n); }
  bp::child start_tune(const std::string& study, const std::string& tag) {
    return bp::child(TUNE_BIN, "--trials", "1", "--quiet", study,
                     bp::std_out > (m_dir / (tag + ".out")).string(),
                     bp::std_err > (m_dir / (tag + ".err")).string());
  }
  static bool wait_file(const fs::path& p) {
    return test_support::wait_for_file(p, std::chrono::seconds(30));
  }
  static bool exited(bp::child& c, std::chrono::seconds limit) {
    const auto end = Clock::now() + limit;
    std::error_code ec;
    while (Clock::now() < end) {
      if (!c.running(ec)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return !c.running(ec);
  }
  std::vector<search::FrozenTrial> trials() {
    auto s = open_storage(url());
    EXPECT_TRUE(s) << s.error();
    if (!s) return {};
    auto study = (*s)->get_study("stall");
    if (!study) return {};
    auto all = (*s)->get_all_trials(study->study_id);
    EXPECT_TRUE(all) << all.error();
    return all ? *all : std::vector<search::FrozenTrial>();
  }
  fs::path m_dir;
};

// The case: the server stops answering for longer than the trial's own timeout (3 s)
// while a 1-s trial runs. Before, the heartbeat's PQexec hung in the watch loop, and the trial
// was stored COMPLETE with the stop's length as its value, past its timeout.
TEST_F(PostgresStall, ServerStoppedDuringATrialIsNotItsTime) {
  const auto study = write_study("", "3s");
  auto tune = start_tune(study, "tune");
  ASSERT_TRUE(wait_file(trial_dir(0) / "started")) << read_file(m_dir / "tune.err");
  double stopped_s = 0;
  {
    StoppedServer stop(server().pid());
    ASSERT_TRUE(stop.stopped());
    ASSERT_TRUE(wait_file(trial_dir(0) / "done"));
    // The fault's length, not a wait for anything: 4.5 s, past the 3-s timeout.
    std::this_thread::sleep_until(stop.since() + std::chrono::milliseconds(4500));
    stopped_s = stop.resume();
  }
  ASSERT_TRUE(exited(tune, std::chrono::seconds(60)));
  ASSERT_EQ(tune.exit_code(), 0) << read_file(m_dir / "tune.err");
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  ASSERT_EQ(ts[0].state, TrialState::complete)
      << ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_DOUBLE_EQ(*ts[0].value, ts[0].user_attrs.at(k_attr_wall_time).get<double>());
  EXPECT_GE(*ts[0].value, 1.0);
  EXPECT_LT(*ts[0].value, 1.8) << "the server was stopped " << stopped_s << " s";
}

// A job that would run 60 s, limited to 2 s, while the server is stopped for 4 s: the trial is
// stopped at its limit by the launcher, whatever the storage is waiting on, and stored so.
TEST_F(PostgresStall, TimeoutHoldsWhileTheServerIsStopped) {
  const auto study = write_study("", "2s", "sleep 60");
  auto tune = start_tune(study, "tune");
  ASSERT_TRUE(wait_file(trial_dir(0) / "started")) << read_file(m_dir / "tune.err");
  {
    StoppedServer stop(server().pid());
    ASSERT_TRUE(stop.stopped());
    std::this_thread::sleep_until(stop.since() + std::chrono::seconds(4));  // the fault
  }
  ASSERT_TRUE(exited(tune, std::chrono::seconds(60)));
  ASSERT_EQ(tune.exit_code(), 0) << read_file(m_dir / "tune.err");
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_EQ(ts[0].system_attrs.value(k_attr_fail_reason, std::string()).rfind(k_timed_out_reason),
            0u)
      << ts[0].system_attrs.dump();
  const double wall = ts[0].user_attrs.at(k_attr_wall_time).get<double>();
  EXPECT_GE(wall, 2.0);
  EXPECT_LT(wall, 3.0);  // stopped at 2 s (SIGTERM ends sh and sleep at once), not at 4 s
  EXPECT_FALSE(fs::exists(trial_dir(0) / "done"));
}

// One call while the server is stopped returns within retry_for, with an error of kind
// unreachable naming the database, instead of hanging on a socket that stays open.
TEST_F(PostgresStall, ACallToAStoppedServerReturnsWithinRetryFor) {
  auto storage = open_storage(url() + "?retry_for=1s");
  ASSERT_TRUE(storage) << storage.error();
  bool created = false;
  auto study = (*storage)->get_or_create_study("stall", search::Direction::minimize, &created);
  ASSERT_TRUE(study) << study.error();
  auto trial = (*storage)->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(trial) << trial.error();
  StoppedServer stop(server().pid());
  ASSERT_TRUE(stop.stopped());
  for (int call = 0; call < 2; ++call) {  // on the open connection, then on a new one
    const auto t0 = Clock::now();
    auto r = (*storage)->record_heartbeat(trial->trial_id);
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    ASSERT_FALSE(r) << "call " << call;
    EXPECT_EQ(r.error().kind, StorageErrorKind::unreachable) << r.error();
    EXPECT_NE(r.error().message.find("retry_for"), std::string::npos) << r.error();
    EXPECT_NE(r.error().message.find("127.0.0.1"), std::string::npos) << r.error();
    EXPECT_GE(took, 0.9);
    EXPECT_LT(took, 1.6) << "call " << call << ": " << r.error();
  }
  stop.resume();
  EXPECT_TRUE((*storage)->record_heartbeat(trial->trial_id));  // back with the server
}

// Stopped past retry_for (2 s) when the trial ends: tune exits 1 within a few seconds, its
// result kept in trials/0/result.json, the trial RUNNING; once the server answers again, the
// next tune stores exactly that result.
TEST_F(PostgresStall, ServerStoppedPastRetryForKeepsTheResultForTheResume) {
  const auto study = write_study("?retry_for=2s", "8s");
  auto tune = start_tune(study, "tune");
  ASSERT_TRUE(wait_file(trial_dir(0) / "started")) << read_file(m_dir / "tune.err");
  const auto kept_path = trial_dir(0) / k_pending_result_file;
  double measured = 0;
  {
    StoppedServer stop(server().pid());
    ASSERT_TRUE(stop.stopped());
    ASSERT_TRUE(wait_file(trial_dir(0) / "done"));
    const auto done = Clock::now();
    ASSERT_TRUE(exited(tune, std::chrono::seconds(30)));
    // A heartbeat under way, then the trial's end: each gives up at 2 s.
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - done).count(), 7.0);
    const std::string err = read_file(m_dir / "tune.err");
    EXPECT_EQ(tune.exit_code(), 1) << err;
    EXPECT_NE(err.find("retry_for"), std::string::npos) << err;
    EXPECT_NE(err.find(kept_path.string()), std::string::npos) << err;
    ASSERT_TRUE(fs::exists(kept_path)) << err;
    const auto kept = nlohmann::json::parse(read_file(kept_path));
    EXPECT_EQ(kept.at("state"), "COMPLETE");
    measured = kept.at("user_attrs").at(k_attr_wall_time).get<double>();
    EXPECT_GE(measured, 1.0);
    EXPECT_LT(measured, 1.8);
  }
  {
    const auto ts = trials();
    ASSERT_EQ(ts.size(), 1u);
    EXPECT_EQ(ts[0].state, TrialState::running);
  }
  auto resumed = start_tune(study, "resume");
  ASSERT_TRUE(exited(resumed, std::chrono::seconds(60)));
  ASSERT_EQ(resumed.exit_code(), 0) << read_file(m_dir / "resume.err");
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 2u);
  ASSERT_EQ(ts[0].state, TrialState::complete)
      << ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_DOUBLE_EQ(*ts[0].value, measured);
  EXPECT_EQ(ts[0].system_attrs.value(k_attr_result_kept, std::string()), kept_path.string());
  EXPECT_EQ(ts[1].state, TrialState::complete);
}

// A clean shutdown (pg_ctl stop -m fast) while the trial runs, and a start 3 s later: the
// connection is gone, tune reconnects within retry_for (60 s), and the value is the job's.
TEST_F(PostgresStall, ServerRestartedDuringATrialIsNotItsTime) {
  const auto study = write_study("", "8s");
  auto tune = start_tune(study, "tune");
  ASSERT_TRUE(wait_file(trial_dir(0) / "started")) << read_file(m_dir / "tune.err");
  const auto stopped_at = Clock::now();
  server().stop();
  struct Restart {  // the shared server runs again whatever is asserted below
    tune::testing::PostgresServer& s;
    ~Restart() {
      if (!s.started()) s.restart();
    }
  } restart{server()};
  ASSERT_TRUE(wait_file(trial_dir(0) / "done"));
  std::this_thread::sleep_until(stopped_at + std::chrono::seconds(3));  // the fault's length
  ASSERT_TRUE(server().restart());
  ASSERT_TRUE(exited(tune, std::chrono::seconds(60)));
  ASSERT_EQ(tune.exit_code(), 0) << read_file(m_dir / "tune.err");
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  ASSERT_EQ(ts[0].state, TrialState::complete)
      << ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_GE(*ts[0].value, 1.0);
  EXPECT_LT(*ts[0].value, 1.8);
}

}  // namespace
}  // namespace tune::tuner
