// Issue 25, points 3 and 4, met the way an operator meets them.
//
// 3: an output folder on a full (or read-only) file system. Trials failed with "objective regex
// matched nothing in stdout", exit status 0, and "no space" appeared nowhere: the keeper dropped
// what it could not write. Now each trial fails naming the error and the path, and max_failures
// stops the study (exit 1) with that reason; the database, elsewhere, holds every trial.
// 4: a worker suspended past the heartbeat grace, whose trial another worker failed meanwhile,
// printed COMPLETE and wrote attributes into the FAIL trial. Now the storage refuses the writes
// and the worker says the trial was taken from it.
// Point 2 (acknowledged means durable): a worker whose trial row is gone (only a creation that was
// not durable, synchronous=normal then a crash, or a deletion does that) exited 1 on the write it
// could not make. Now it says the trial is gone, keeps its folder and goes on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <string>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;
using std::chrono::seconds;

// Runs tune to its end with its stdout and stderr in m_dir; its exit status.
int run_tune_in(const fs::path& dir, const std::vector<std::string>& args) {
  bp::child c(TUNE_BIN, bp::args = args, bp::std_out > (dir / "tune.out").string(),
              bp::std_err > (dir / "tune.err").string());
  c.wait();
  return c.exit_code();
}

// m_dir/out is a 64 KiB tmpfs (mounted as root can), unmounted after the test even when it
// fails; the study's database is in m_dir, outside it.
class FullOutput : public test_support::TempDirTest {
 protected:
  FullOutput() : TempDirTest("tune-writeerr-") {}
  void SetUp() override {
    TempDirTest::SetUp();
    m_out = m_dir / "out";
    fs::create_directories(m_out);
    if (mount("tmpfs", m_out.c_str(), "tmpfs", 0, "size=64k") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs on " << m_out << " (" << std::strerror(errno)
                   << "): these tests need root, or CAP_SYS_ADMIN";
    }
    m_mounted = true;
  }
  void TearDown() override {
    if (m_mounted) umount2(m_out.c_str(), MNT_DETACH);
    TempDirTest::TearDown();
  }

  std::string write_study(const std::string& command) {
    return test_support::write_file(m_dir / "study.yaml",
                                    "name: full\noutput: " + m_out.string() + "\nstorage: " +
                                        (m_dir / "study.db").string() + "\ncommand: " + command +
                                        "\nobjective: {regex: 'value=([0-9]+)'}\n"
                                        "sampler: {type: random, seed: 3}\n"
                                        "params:\n  x: {type: float, low: 1, high: 10}\n");
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "study.db", "full");
  }
  std::string err() { return test_support::read_file(m_dir / "tune.err"); }
  std::string out() { return test_support::read_file(m_dir / "tune.out"); }

  fs::path m_out;
  bool m_mounted = false;
};

// A job that writes 200 KB (more than the file system holds) and then its value.
constexpr const char* k_big_job =
    "[sh, -c, 'head -c 200000 /dev/zero | tr \"\\000\" x; echo; echo value=1']";

TEST_F(FullOutput, NoSpaceFailsEveryTrialWithTheErrorAndPathThenStopsTheStudy) {
  const auto study = write_study(k_big_job);
  EXPECT_EQ(run_tune_in(m_dir, {"--trials", "6", study}), 1) << out() << err();
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 3u) << "max_failures is 3 by default: three trials, all stored";
  for (const auto& t : ts) {
    EXPECT_EQ(t.state, TrialState::fail);
    const auto reason = t.system_attrs.value(k_attr_fail_reason, "");
    const auto stdout_path = (m_out / "trials" / std::to_string(t.number) / "stdout").string();
    EXPECT_NE(reason.find("writing " + stdout_path + ": No space left on device"),
              std::string::npos)
        << reason;
  }
  // The study stopped with the reason on the screen.
  EXPECT_NE(err().find("3 trials in a row failed"), std::string::npos) << err();
  EXPECT_NE(err().find("No space left on device"), std::string::npos) << err();
}

// A trial whose output fits still completes on the same small file system.
TEST_F(FullOutput, SmallOutputStillCompletes) {
  const auto study = write_study("[sh, -c, 'echo value=7']");
  ASSERT_EQ(run_tune_in(m_dir, {"--trials", "2", study}), 0) << out() << err();
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) EXPECT_EQ(t.state, TrialState::complete) << t.system_attrs.dump();
}

TEST_F(FullOutput, ReadOnlyFailsEveryTrialWithTheErrorAndPathThenStopsTheStudy) {
  ASSERT_EQ(mount("tmpfs", m_out.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, "size=64k"), 0)
      << std::strerror(errno);
  const auto study = write_study("[sh, -c, 'echo value=1']");
  EXPECT_EQ(run_tune_in(m_dir, {"--trials", "6", study}), 1) << out() << err();
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 3u) << out() << err();
  for (const auto& t : ts) {
    EXPECT_EQ(t.state, TrialState::fail);
    const auto reason = t.system_attrs.value(k_attr_fail_reason, "");
    EXPECT_NE(reason.find((m_out / "trials").string()), std::string::npos) << reason;
    EXPECT_NE(reason.find("Read-only file system"), std::string::npos) << reason;
  }
  EXPECT_NE(err().find("Read-only file system"), std::string::npos) << err();
}

// The database itself on a file system remounted read-only (issue 37): a new run says so, not
// that the user may not write it; reading it still works.
TEST_F(FullOutput, ADatabaseOnAReadOnlyFileSystemIsCalledThat) {
  ASSERT_EQ(mount("tmpfs", m_out.c_str(), nullptr, MS_REMOUNT, "size=4m"), 0)  // room for it
      << std::strerror(errno);
  const auto db = m_out / "study.db";
  const auto study = test_support::write_file(
      m_dir / "ro.yaml", "name: full\noutput: " + (m_dir / "out2").string() + "\nstorage: " +
                             db.string() + "\ncommand: [sh, -c, 'echo value=1']\n"
                             "objective: {regex: 'value=([0-9]+)'}\n"
                             "sampler: {type: random, seed: 3}\nparams:\n  x: [1, 2]\n");
  ASSERT_EQ(run_tune_in(m_dir, {"--trials", "1", study}), 0) << out() << err();
  ASSERT_EQ(mount("tmpfs", m_out.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, "size=4m"), 0)
      << std::strerror(errno);
  EXPECT_NE(run_tune_in(m_dir, {"--trials", "1", study}), 0);
  EXPECT_TRUE(err().contains(db.string() + ": the database is on a read-only file system"))
      << err();
  EXPECT_FALSE(err().contains("may not write")) << err();
  EXPECT_EQ(run_tune_in(m_dir, {"trials", study}), 0) << err();
}

// Point 4: worker A is suspended (SIGSTOP) while its trial runs; "worker B" fails the trial as
// stale through the storage (as its recovery does once A's heartbeat is past the grace period);
// A is resumed. The trial stays FAIL with B's reason, A writes nothing more into it, says so,
// and goes on with its next trial.
class LostTrial : public test_support::TempDirTest {
 protected:
  LostTrial() : TempDirTest("tune-lost-") {}
};

TEST_F(LostTrial, ResumedWorkerWritesNothingIntoATrialAnotherWorkerFailed) {
  const auto release = m_dir / "release";
  const auto db = m_dir / "study.db";
  const auto study = test_support::write_file(
      m_dir / "study.yaml",
      "name: lost\noutput: " + (m_dir / "out").string() + "\nstorage: " + db.string() +
          "\ncommand: [sh, -c, 'touch started; while [ ! -e " + release.string() +
          " ]; do sleep 0.02; done; echo value=1']\nobjective: {regex: 'value=([0-9]+)'}\n"
          "sampler: {type: random, seed: 3}\nparams:\n  x: {type: float, low: 1, high: 10}\n");
  bp::child worker(TUNE_BIN, bp::args = {"--trials", "2", study},
                   bp::std_out > (m_dir / "tune.out").string(),
                   bp::std_err > (m_dir / "tune.err").string());
  const auto started = m_dir / "out" / "trials" / "0" / "started";
  ASSERT_TRUE(test_support::wait_for_file(started, seconds(60), 0));
  ASSERT_EQ(kill(worker.id(), SIGSTOP), 0);

  // Worker B: the trial's owner looks dead; it is failed with B's reason.
  const std::string theirs = "the tune process running it died; marked FAIL on resume";
  nlohmann::json user_before, system_before;
  {
    auto s = SqliteStorage::open(db.string());
    ASSERT_TRUE(s) << s.error();
    auto info = (*s)->get_study("lost");
    ASSERT_TRUE(info) << info.error();
    auto all = (*s)->get_all_trials(info->study_id);
    ASSERT_TRUE(all && all->size() == 1u);
    const auto id = all->front().trial_id;
    ASSERT_EQ(all->front().state, TrialState::running);
    ASSERT_TRUE((*s)->set_trial_system_attr(id, k_attr_fail_reason, theirs));
    auto set = (*s)->set_trial_state_values(id, TrialState::fail, std::nullopt);
    ASSERT_TRUE(set && *set);
    auto t = (*s)->get_trial(id);
    ASSERT_TRUE(t);
    user_before = t->user_attrs;
    system_before = t->system_attrs;
  }
  test_support::write_file(release, "go");  // the job may now end, COMPLETE as A would see it
  ASSERT_EQ(kill(worker.id(), SIGCONT), 0);
  worker.wait();
  const auto out = test_support::read_file(m_dir / "tune.out");
  const auto err = test_support::read_file(m_dir / "tune.err");
  EXPECT_EQ(worker.exit_code(), 0) << out << err;

  const auto ts = test_support::stored_trials(db, "lost");
  ASSERT_EQ(ts.size(), 2u) << out << err;
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_EQ(ts[0].system_attrs.value(k_attr_fail_reason, ""), theirs);
  EXPECT_EQ(ts[0].user_attrs, user_before) << "written after it was failed";
  EXPECT_EQ(ts[0].system_attrs, system_before) << "written after it was failed";
  EXPECT_FALSE(ts[0].value.has_value());
  EXPECT_EQ(ts[1].state, TrialState::complete) << ts[1].system_attrs.dump();
  // One story: the live line says FAIL, by whom, and that this run's result is discarded.
  EXPECT_NE(out.find("trial 0 FAIL  # failed by another worker while this one was suspended; its "
                     "result is discarded (its reason there: " +
                     theirs + ")"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("trial 0 COMPLETE"), std::string::npos) << out;
}

// The row of a running trial disappears (deleted here, as a crash of the database would take a
// creation that was not durable): the worker stops it, says `GONE`, keeps its folder, exits 0
// after its next trial, which takes the number again in a folder of its own.
TEST_F(LostTrial, AWorkerWhoseTrialRowIsGoneSaysSoAndGoesOn) {
  const auto release = m_dir / "release";
  const auto db = m_dir / "study.db";
  const auto study = test_support::write_file(
      m_dir / "study.yaml",
      "name: gone\noutput: " + (m_dir / "out").string() + "\nstorage: " + db.string() +
          "\ncommand: [sh, -c, 'touch started; while [ ! -e " + release.string() +
          " ]; do sleep 0.02; done; echo value=1']\nobjective: {regex: 'value=([0-9]+)'}\n"
          "sampler: {type: random, seed: 3}\nparams:\n  x: {type: float, low: 1, high: 10}\n");
  bp::child worker(TUNE_BIN, bp::args = {"--trials", "2", "--quiet", study},
                   bp::std_out > (m_dir / "tune.out").string(),
                   bp::std_err > (m_dir / "tune.err").string());
  ASSERT_TRUE(
      test_support::wait_for_file(m_dir / "out" / "trials" / "0" / "started", seconds(60), 0));
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    sqlite3_busy_timeout(raw, 60000);
    char* error = nullptr;
    const int rc = sqlite3_exec(raw,
                                "BEGIN IMMEDIATE; "
                                "DELETE FROM trial_params; DELETE FROM trial_heartbeats; "
                                "DELETE FROM trial_system_attributes; "
                                "DELETE FROM trial_user_attributes; DELETE FROM trials; COMMIT",
                                nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(raw);
  }
  test_support::write_file(release, "go");
  worker.wait();
  const auto out = test_support::read_file(m_dir / "tune.out");
  const auto err = test_support::read_file(m_dir / "tune.err");
  EXPECT_EQ(worker.exit_code(), 0) << out << err;
  EXPECT_NE(out.find("trial 0 GONE  # its row is gone from the database"), std::string::npos)
      << out;
  const auto ts = test_support::stored_trials(db, "gone");
  ASSERT_EQ(ts.size(), 1u) << out << err;
  EXPECT_EQ(ts[0].number, 0);
  EXPECT_EQ(ts[0].state, TrialState::complete);
  EXPECT_TRUE(fs::is_directory(m_dir / "out" / "trials" / "0"));  // kept, with what it wrote
  EXPECT_TRUE(fs::is_directory(m_dir / "out" / "trials" / "0.1"));
}

}  // namespace
}  // namespace tune::tuner
