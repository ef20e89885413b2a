// What the database cannot do to a trial (issue 25): a trial's time is its job's. Another
// process holds SQLite's write lock while a 1-s trial runs (a real lock: BEGIN IMMEDIATE on its
// own connection, held by this test process while `tune` runs as a child): the stored value is
// the job's second, not the lock's duration; held past retry_for when the trial ends, `tune`
// exits 1 with the result kept in the trial's folder, and the next `tune` stores it as measured.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/run/pending_result.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;
using Clock = std::chrono::steady_clock;
using test_support::read_file;

// SQLite's write lock, held by this process from construction to release(): BEGIN IMMEDIATE
// on a connection of its own, as any other program writing the file would hold it.
class WriteLock {
 public:
  explicit WriteLock(const fs::path& db) {
    if (sqlite3_open(db.c_str(), &m_db) != SQLITE_OK) return;
    sqlite3_busy_timeout(m_db, 30000);  // tune may be writing: wait for its transaction
    m_held = sqlite3_exec(m_db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
    m_since = Clock::now();
  }
  ~WriteLock() { release(); }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;
  bool held() const { return m_held; }
  Clock::time_point since() const { return m_since; }
  // Seconds it was held.
  double release() {
    double held_s = 0;
    if (m_held) {
      sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
      held_s = std::chrono::duration<double>(Clock::now() - m_since).count();
      m_held = false;
    }
    sqlite3_close(m_db);
    m_db = nullptr;
    return held_s;
  }

 private:
  sqlite3* m_db = nullptr;
  bool m_held = false;
  Clock::time_point m_since;
};

class StorageStall : public test_support::TempDirTest {
 protected:
  StorageStall() : TempDirTest("tune-stall-") {}

  // A study whose value is the wall time of a 1-s job; the job marks its start and its end in
  // its folder. `options` go after the storage URL ("?retry_for=1s").
  std::string write_study(const std::string& options = "") {
    return test_support::write_file(
        m_dir / "study.yaml",
        "name: stall\noutput: " + (m_dir / "out").string() + "\nstorage: sqlite:///" +
            db().string() + options +
            "\ncommand: [/bin/sh, -c, 'echo > started; sleep 1; echo > done']\n"
            "objective: {wall_time: true}\n"
            "timeout: 8s\n"
            "sampler: {type: random, seed: 1}\n"
            "params:\n  x: [1, 2]\n");
  }
  fs::path db() const { return m_dir / "out" / "study.db"; }
  fs::path trial_dir(int n) const { return m_dir / "out" / "trials" / std::to_string(n); }
  bp::child start_tune(const std::string& study, const std::string& tag) {
    return bp::child(TUNE_BIN, "--trials", "1", "--quiet", study,
                     bp::std_out > (m_dir / (tag + ".out")).string(),
                     bp::std_err > (m_dir / (tag + ".err")).string());
  }
  // Waits (bounded) for `tune` to exit; whether it did.
  static bool exited(bp::child& c, std::chrono::seconds limit) {
    const auto end = Clock::now() + limit;
    std::error_code ec;
    while (Clock::now() < end) {
      if (!c.running(ec)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return !c.running(ec);
  }
};

// The lock is taken once the job runs and held 3 s in all, well past the job's end: the stored
// value is the job's second. Before, the heartbeat waited on the lock inside the launcher's
// watch loop, and the trial's time ran on until it returned (a 1-s trial stored as 40.5).
TEST_F(StorageStall, WriteLockHeldDuringATrialIsNotItsTime) {
  const auto study = write_study();
  auto tune = start_tune(study, "tune");
  ASSERT_TRUE(test_support::wait_for_file(trial_dir(0) / "started", std::chrono::seconds(30)))
      << read_file(m_dir / "tune.err");
  WriteLock lock(db());
  ASSERT_TRUE(lock.held());
  ASSERT_TRUE(test_support::wait_for_file(trial_dir(0) / "done", std::chrono::seconds(30)));
  // The fault's length, not a wait for anything: 3 s against the job's 1 s.
  std::this_thread::sleep_until(lock.since() + std::chrono::seconds(3));
  const double held_s = lock.release();
  ASSERT_TRUE(exited(tune, std::chrono::seconds(60)));
  ASSERT_EQ(tune.exit_code(), 0) << read_file(m_dir / "tune.err");
  const auto ts = test_support::stored_trials(db(), "stall");
  ASSERT_EQ(ts.size(), 1u);
  ASSERT_EQ(ts[0].state, TrialState::complete);
  EXPECT_DOUBLE_EQ(*ts[0].value, ts[0].user_attrs.at(k_attr_wall_time).get<double>());
  EXPECT_GE(*ts[0].value, 1.0);
  EXPECT_LT(*ts[0].value, 1.8) << "the lock was held " << held_s << " s";
  EXPECT_GE(held_s, 3.0);
}

// Held past retry_for (1 s) when the trial ends: tune cannot store its end, keeps it in
// trials/0/result.json, says so and exits 1, the trial still RUNNING. With the lock gone, the
// next tune stores that result exactly (COMPLETE, the measured second), marked as kept, then
// runs its own trial.
TEST_F(StorageStall, WriteLockHeldPastRetryForKeepsTheResultForTheResume) {
  const auto study = write_study("?retry_for=1s");
  auto tune = start_tune(study, "tune");
  ASSERT_TRUE(test_support::wait_for_file(trial_dir(0) / "started", std::chrono::seconds(30)))
      << read_file(m_dir / "tune.err");
  WriteLock lock(db());
  ASSERT_TRUE(lock.held());
  ASSERT_TRUE(test_support::wait_for_file(trial_dir(0) / "done", std::chrono::seconds(30)));
  const auto done = Clock::now();
  ASSERT_TRUE(exited(tune, std::chrono::seconds(30)));
  // A heartbeat under way (1 s at the most), then the trial's end (1 s): no call outlives
  // retry_for, so tune is gone in a few seconds however long the lock is held.
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - done).count(), 6.0);
  const std::string err = read_file(m_dir / "tune.err");
  EXPECT_EQ(tune.exit_code(), 1) << err;
  const auto kept_path = trial_dir(0) / k_pending_result_file;
  EXPECT_NE(err.find("database is locked"), std::string::npos) << err;
  EXPECT_NE(err.find(kept_path.string()), std::string::npos) << err;
  ASSERT_TRUE(fs::exists(kept_path)) << err;
  const auto kept = nlohmann::json::parse(read_file(kept_path));
  EXPECT_EQ(kept.at("state"), "COMPLETE");
  const double measured = kept.at("user_attrs").at(k_attr_wall_time).get<double>();
  EXPECT_GE(measured, 1.0);
  EXPECT_LT(measured, 1.8);
  EXPECT_DOUBLE_EQ(kept.at("values").at(0).get<double>(), measured);
  {
    // Read as tune trials reads (a read-only opening: the lock does not keep a reader out).
    auto reader = open_storage(db().string(), OpenMode::read_only);
    ASSERT_TRUE(reader) << reader.error();
    auto study = (*reader)->get_study("stall");
    ASSERT_TRUE(study) << study.error();
    const auto ts = (*reader)->get_all_trials(study->study_id);
    ASSERT_TRUE(ts) << ts.error();
    ASSERT_EQ(ts->size(), 1u);
    EXPECT_EQ((*ts)[0].state, TrialState::running);
  }
  lock.release();

  const auto resumed =
      test_support::run_command({TUNE_BIN, "--trials", "1", study}, m_dir, {}, "resume", 60);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("trial 0 COMPLETE"), std::string::npos) << resumed.out;
  const auto ts = test_support::stored_trials(db(), "stall");
  ASSERT_EQ(ts.size(), 2u);
  ASSERT_EQ(ts[0].state, TrialState::complete)
      << ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_DOUBLE_EQ(*ts[0].value, measured);
  EXPECT_DOUBLE_EQ(ts[0].user_attrs.at(k_attr_wall_time).get<double>(), measured);
  EXPECT_EQ(ts[0].system_attrs.value(k_attr_result_kept, std::string()), kept_path.string());
  EXPECT_FALSE(fs::exists(kept_path));  // stored: no later resume takes it again
  EXPECT_TRUE(fs::exists(trial_dir(0) / "result.stored.json"));
  EXPECT_EQ(ts[1].state, TrialState::complete);
}

}  // namespace
}  // namespace tune::tuner
