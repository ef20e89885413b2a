// Issue 12, point 1: no process of a trial outlives it, however `tune` ends (normal exit,
// SIGKILL, SIGHUP, a closed stdout), and a killed `tune` never changes a finished trial.
//
// This test process makes itself a child subreaper, so whatever `tune` leaves behind is
// re-parented here rather than to init; and every trial carries a marker variable in its
// environment, so /proc tells which processes belong to this test's trials.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/launcher.h"
#include "tuner/storage/sqlite_storage.h"

extern char** environ;

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

extern "C" void on_alarm(int) {}

// Processes (other than this one) whose environment holds NAME=VALUE.
std::vector<pid_t> processes_with_env(const std::string& name, const std::string& value) {
  const std::string needle = name + "=" + value;
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const auto pid_text = entry.path().filename().string();
    if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(pid_text);
    if (pid == getpid()) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(in, var, '\0')) {
      if (var == needle) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

using test_support::read_file;
using test_support::wait_for_file;

class Containment : public test_support::TempDirTest {
 protected:
  Containment() : TempDirTest("tune-reliability-") {}

  void SetUp() override {
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    struct sigaction sa {};
    sa.sa_handler = on_alarm;  // no SA_RESTART: a blocked waitpid() returns EINTR
    sigaction(SIGALRM, &sa, nullptr);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_mark = fmt_mark(info->name());
    TempDirTest::SetUp();
  }
  void TearDown() override {
    for (pid_t p : processes_with_env("TUNE_TEST_MARK", m_mark)) kill(p, SIGKILL);
    reap_everything(10);
    TempDirTest::TearDown();
  }
  static std::string fmt_proc(pid_t pid) { return "/proc/" + std::to_string(pid) + "/comm"; }
  static std::string fmt_mark(const std::string& test) {
    return test + "-" + std::to_string(getpid());
  }

  // The study: `command` under the given launch section, every trial marked.
  std::string write_study(const std::string& command, const std::string& launch = "") {
    return test_support::write_file(
        m_dir / "study.yaml", "name: contain\noutput: " + (m_dir / "out").string() + "\n" + launch +
                                  "command: " + command + "\n" + "env: {TUNE_TEST_MARK: '" +
                                  m_mark + "'}\n" +
                                  "sampler: {type: random, seed: 3}\n"
                                  "params:\n  x: {type: float, low: 1, high: 10}\n");
  }

  // Starts tune with stdout/stderr to files (or stdout to `stdout_fd`); returns its pid.
  pid_t spawn_tune(const std::vector<std::string>& args, int stdout_fd = -1) {
    std::vector<std::string> argv{TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdout_fd >= 0) {
      posix_spawn_file_actions_adddup2(&fa, stdout_fd, STDOUT_FILENO);
    } else {
      posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, (m_dir / "tune.out").c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, (m_dir / "tune.err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, TUNE_BIN, &fa, nullptr, cargv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
  }

  // Waits for tune; returns its wait status and fills `usage` (its own and its children's).
  static int wait_tune(pid_t pid, rusage* usage = nullptr) {
    int status = 0;
    rusage ru{};
    EXPECT_EQ(wait4(pid, &status, 0, &ru), pid);
    if (usage) *usage = ru;
    return status;
  }

  // Reaps every process re-parented to us until none is left; returns false when some were
  // still alive after `limit_s` (they are killed then, so later tests start clean).
  static bool reap_everything(unsigned limit_s) {
    alarm(limit_s);
    bool ok = true;
    while (true) {
      const pid_t p = waitpid(-1, nullptr, 0);
      if (p > 0) continue;
      if (errno == ECHILD) break;
      if (errno == EINTR) {  // the alarm: something is still running
        ok = false;
        std::ifstream in(fs::path("/proc/self/task") / std::to_string(getpid()) / "children");
        for (pid_t c; in >> c;) kill(c, SIGKILL);
        alarm(5);
      }
    }
    alarm(0);
    return ok;
  }

  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "contain");
  }

  std::string m_mark;
};

// A trial that exits 0 leaving `sleep &`, a setsid'd and a double-forked process behind.
TEST_F(Containment, WhatATrialLeavesBehindDiesWithIt) {
  LaunchRequest req;
  req.argv = {"sh", "-c", "sleep 300 & setsid -f sleep 301; (sleep 302 &); exit 0"};
  req.env_set["TUNE_TEST_MARK"] = m_mark;
  req.stdout_path = (m_dir / "out").string();
  req.stderr_path = (m_dir / "err").string();
  const auto r = run_process(req);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.containment, "keeper");
  EXPECT_EQ(processes_with_env("TUNE_TEST_MARK", m_mark), std::vector<pid_t>{});
}

// A job that exits at once but leaves a child that ignores SIGTERM (issue 37): its wall time
// ends when its own process exits; the grace the keeper then waits before SIGKILL is counted
// apart (cleanup_s) and never in the wall time, which `objective: {wall_time: true}` scores.
TEST_F(Containment, TheSweepOfLeftoversIsNotPartOfTheWallTime) {
  LaunchRequest req;
  // TERM ignored before the fork, so the leftover inherits it from its first instruction.
  req.argv = {"sh", "-c", "trap '' TERM; sleep 300 & exit 0"};
  req.env_set["TUNE_TEST_MARK"] = m_mark;
  req.kill_grace_s = 2.0;
  const auto r = run_process(req);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.containment, "keeper");
  EXPECT_GE(r.cleanup_s, req.kill_grace_s);  // TERM ignored: the whole grace, then SIGKILL
  EXPECT_GT(r.wall_s, 0);
  EXPECT_LT(r.wall_s, req.kill_grace_s);
  EXPECT_EQ(processes_with_env("TUNE_TEST_MARK", m_mark), std::vector<pid_t>{});
}

// A memory cgroup of its own below this process's, limited to `limit` bytes (cgroup v1's
// memory controller, else v2's memory.max); "" with `why` set where none can be made (no
// permission, no memory controller).
std::string limited_memory_cgroup(const std::string& name, const std::string& limit,
                                  std::string& why) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::vector<std::pair<std::string, std::string>> candidates;  // folder, limit file
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const auto controllers = line.substr(a + 1, b - a - 1);
    const auto path = line.substr(b + 1);
    if (controllers == "memory")
      candidates.emplace_back("/sys/fs/cgroup/memory" + path, "memory.limit_in_bytes");
    if (controllers.empty())
      for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"})
        candidates.emplace_back(root + path, "memory.max");
  }
  for (const auto& [parent, file] : candidates) {
    const fs::path dir = fs::path(parent) / name;
    std::error_code ec;
    if (!fs::create_directory(dir, ec) && ec) continue;
    std::ofstream limit_file(dir / file);
    limit_file << limit << std::flush;
    if (limit_file) {
      // No swap either, where the controller has that limit: else the allocation could swap.
      const std::pair<const char*, std::string> swap_limits[] = {
          {"memory.memsw.limit_in_bytes", limit}, {"memory.swap.max", "0"}};
      for (const auto& [swap, value] : swap_limits)
        if (fs::exists(dir / swap)) std::ofstream(dir / swap) << value;
      return dir.string();
    }
    fs::remove(dir, ec);
  }
  why = "no memory cgroup can be made here (it needs write access to a cgroup's memory controller)";
  return "";
}

// A real out-of-memory kill (issue 37): the trial moves itself into a memory cgroup limited to
// 64 MiB and allocates 512 MiB; the kernel kills it with SIGKILL, and its reason says that it ran
// out of memory, naming the process, from the kernel's record.
TEST_F(Containment, AnOutOfMemoryKillIsReportedAsOne) {
  std::string why;
  const auto cgroup = limited_memory_cgroup(m_mark, std::to_string(64 << 20), why);
  if (cgroup.empty()) GTEST_SKIP() << why;
  LaunchRequest req;
  req.argv = {"sh", "-c",
              "echo $$ > \"$0/cgroup.procs\" && exec python3 -c 'b = bytearray(512 << 20)'",
              cgroup};
  req.env_set["TUNE_TEST_MARK"] = m_mark;
  const auto r = run_process(req);
  std::error_code ec;
  fs::remove(cgroup, ec);
  ASSERT_TRUE(r.started) << r.error;
  if (r.signal != SIGKILL)
    GTEST_SKIP() << "the cgroup's 64 MiB limit did not end the allocation here (exit code "
                 << r.exit_code << ", signal " << r.signal << "): no OOM kill to report";
  if (r.oom_kill.empty())
    GTEST_SKIP() << "the OOM kill happened, but neither the kernel log (/dev/kmsg) nor the memory "
                    "cgroup's oom_kill counter can be read here";
  EXPECT_TRUE(r.oom_kill.starts_with("the kernel's OOM killer killed process") ||
              r.oom_kill.starts_with("the memory cgroup's OOM killer"))
      << r.oom_kill;
  if (r.oom_kill.starts_with("the kernel's")) EXPECT_TRUE(r.oom_kill.contains("(python3)"));
}

// The keeper reports the command's own status: exit codes and signals pass through.
TEST_F(Containment, TheKeeperPassesTheTrialsStatusThrough) {
  LaunchRequest req;
  req.argv = {"sh", "-c", "exit 7"};
  EXPECT_EQ(run_process(req).exit_code, 7);
  req.argv = {"sh", "-c", "kill -SEGV $$"};
  const auto r = run_process(req);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.exit_code, -1);
}

// The watcher's first call (the probes start there) sees the trial's own program, not the
// keeper's forked copy of itself before exec.
TEST_F(Containment, TheWatcherSeesTheTrialsProgramFromTheStart) {
  LaunchRequest req;
  req.argv = {"sleep", "0.3"};
  std::string first_comm;
  const auto r = run_process(req, [&](pid_t pid) {
    if (first_comm.empty()) std::getline(std::ifstream(fmt_proc(pid)), first_comm);
    return std::string();
  });
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(first_comm, "sleep");
}

TEST_F(Containment, KillNineOfTuneLeavesNoTrialProcess) {
  const auto started = m_dir / "started";
  const auto study = write_study("[sh, -c, 'setsid -f sleep 300; sleep 301 & touch " +
                                 started.string() + "; wait']");
  const pid_t tune = spawn_tune({"--trials", "2", study});
  ASSERT_TRUE(wait_for_file(started, std::chrono::seconds(30), 0));  // made by touch
  ASSERT_EQ(kill(tune, SIGKILL), 0);
  wait_tune(tune);
  EXPECT_TRUE(reap_everything(20)) << "processes of the trial outlived tune -9";
  EXPECT_EQ(processes_with_env("TUNE_TEST_MARK", m_mark), std::vector<pid_t>{});
}

TEST_F(Containment, SighupStopsTheTrialAndTheStudyRecordsIt) {
  const auto started = m_dir / "started";
  const auto study = write_study("[sh, -c, 'sleep 300 & touch " + started.string() + "; wait']");
  const pid_t tune = spawn_tune({"--trials", "2", study});
  ASSERT_TRUE(wait_for_file(started, std::chrono::seconds(30), 0));  // made by touch
  ASSERT_EQ(kill(tune, SIGHUP), 0);
  const int status = wait_tune(tune);
  ASSERT_TRUE(WIFEXITED(status)) << "tune died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_TRUE(reap_everything(20));
  EXPECT_EQ(processes_with_env("TUNE_TEST_MARK", m_mark), std::vector<pid_t>{});
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_NE(ts[0].system_attrs.value(k_attr_fail_reason, "").find("SIGHUP"), std::string::npos);
}

TEST_F(Containment, AClosedStdoutDoesNotKillTune) {
  const auto study = write_study("['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}']");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);  // nobody reads: every write to tune's stdout fails with EPIPE
  const pid_t tune = spawn_tune({"--trials", "3", study}, fds[1]);
  close(fds[1]);
  const int status = wait_tune(tune);
  ASSERT_TRUE(WIFEXITED(status)) << "tune died of signal " << WTERMSIG(status);
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 3u);
  for (const auto& t : ts) EXPECT_EQ(t.state, TrialState::complete);
}

class MpiContainment : public Containment {};

// SIGKILL at 30 random points under `mpirun -n 2`: no process of any trial is left after any
// of them, COMPLETE trials never change, the database stays intact, and a last run finishes
// the study with nothing left RUNNING. Every other round the ranks hang (until killed), so a
// rank that outlived tune could not go unnoticed by finishing on its own.
TEST_F(MpiContainment, ThirtyRandomKillsLeaveNoProcessAndChangeNoFinishedTrial) {
  const auto hang_flag = m_dir / "hang";
  const auto study =
      write_study("['" FAKE_TRIAL
                  "', --out, '{trial_dir}', --value, '{x}', --steps, '3', "
                  "--step-ms, '60', --hang-if-exists, '" +
                      hang_flag.string() + "']",
                  "launch: {mpirun: {n: 2, oversubscribe: true, mca: {pml: '^cm'}}}\n");
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> kill_after_ms(0, 1500);
  std::map<int, nlohmann::json> finished;  // number -> what a COMPLETE trial must keep
  auto snapshot = [](const search::FrozenTrial& t) {
    return nlohmann::json{{"value", *t.value},
                          {"params", t.params},
                          {"user_attrs", t.user_attrs},
                          {"state", search::to_string(t.state)}};
  };
  for (int kill_no = 0; kill_no < 30; ++kill_no) {
    if (kill_no % 2) {
      std::ofstream(hang_flag) << "1";
    } else {
      fs::remove(hang_flag);
    }
    const pid_t tune = spawn_tune({"--trials", "3", study});
    // The random kill point is the experiment here, not a synchronisation.
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms(rng)));
    kill(tune, SIGKILL);
    wait_tune(tune);
    ASSERT_TRUE(reap_everything(30)) << "kill " << kill_no << ": processes outlived tune -9";
    ASSERT_EQ(processes_with_env("TUNE_TEST_MARK", m_mark), std::vector<pid_t>{})
        << "kill " << kill_no;
    for (const auto& t : trials()) {
      if (t.state != TrialState::complete) continue;
      const auto now = snapshot(t);
      auto [it, fresh] = finished.emplace(t.number, now);
      if (!fresh) {
        EXPECT_EQ(it->second, now) << "kill " << kill_no << " changed trial " << t.number;
      }
    }
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((m_dir / "out" / "study.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);

  fs::remove(hang_flag);
  const pid_t tune = spawn_tune({"--trials", "1", study});
  EXPECT_EQ(wait_tune(tune), 0) << read_file(m_dir / "tune.err");
  EXPECT_TRUE(reap_everything(30));
  int complete = 0;
  for (const auto& t : trials()) {
    EXPECT_NE(t.state, TrialState::running) << "trial " << t.number;
    complete += t.state == TrialState::complete;
    if (auto it = finished.find(t.number); it != finished.end()) {
      EXPECT_EQ(it->second, snapshot(t));
    }
  }
  EXPECT_GE(complete, 1);
  std::cout << "30 kills: " << trials().size() << " trials, " << complete << " complete\n";
}

}  // namespace
}  // namespace tune::tuner
