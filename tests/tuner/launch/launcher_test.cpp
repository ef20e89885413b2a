// Launcher: argv and environment, exit status and signals, timeouts that take the whole tree.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/common/test_support.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/oom_record.h"
#include "tuner/launch/process_tree.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class LauncherTest : public test_support::TempDirTest {
 protected:
  LauncherTest() : TempDirTest("tune-launcher-") {}
  std::string read(const std::string& name) { return test_support::read_file(m_dir / name); }
  LaunchRequest request(std::vector<std::string> argv) {
    LaunchRequest r;
    r.argv = std::move(argv);
    r.stdout_path = (m_dir / "out").string();
    r.stderr_path = (m_dir / "err").string();
    r.workdir = m_dir.string();
    return r;
  }
};

// The kernel log's OOM kills inside the trial's time (microseconds of the monotonic clock),
// global and a cgroup's; other records and other times are not.
TEST(OomRecord, TheKernelLogsKillsInsideTheTrialsTimeAreNamed) {
  const std::string log =
      "6,100,1000,-;eth0: link up\n"
      "3,101,1500,-;Out of memory: Killed process 11 (early) total-vm:1kB, anon-rss:1kB\n"
      "4,102,2500,-;python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n"
      "3,103,2600,-;Memory cgroup out of memory: Killed process 1234 (python3) total-vm:5kB\n"
      "3,104,2700,-;Out of memory: Killed process 1240 (rank 1) total-vm:5kB\n"
      "6,105,2800,-;Killed process 99 (not by the OOM killer)\n";
  EXPECT_EQ(oom_kills_in_log(log, 2000, 3000),
            "the kernel's OOM killer killed process 1234 (python3) and 1 more");
  EXPECT_EQ(oom_kills_in_log(log, 2000, 2650),
            "the kernel's OOM killer killed process 1234 (python3)");
  EXPECT_EQ(oom_kills_in_log(log, 3000, 4000), "");
  EXPECT_EQ(oom_kills_in_log("garbage\n,,;\n", 0, 1'000'000), "");
}

TEST_F(LauncherTest, RunsArgvWithoutAShell) {
  // A shell would expand $HOME and split on spaces; an argv vector passes them through.
  auto r = run_process(request({"printf", "%s|%s", "$HOME", "a b"}));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(read("out"), "$HOME|a b");
  EXPECT_GT(r.wall_s, 0);
}

// A second run into the same files replaces what the first wrote (Boost.Process alone would keep
// the longer first output's tail after the second's).
TEST_F(LauncherTest, OutputFilesHoldOnlyTheLatestRun) {
  ASSERT_TRUE(run_process(request({"printf", "a much longer first output"})).started);
  auto r = run_process(request({"printf", "short"}));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(read("out"), "short");
  EXPECT_EQ(read("err"), "");
}

TEST_F(LauncherTest, EnvironmentIsParentPlusTemplate) {
  setenv("TUNE_TEST_INHERITED", "yes", 1);
  setenv("TUNE_TEST_REMOVED", "still here", 1);
  auto req = request({"env"});
  req.env_set["TUNE_TEST_SET"] = "42";
  req.env_unset.push_back("TUNE_TEST_REMOVED");
  auto r = run_process(req);
  ASSERT_EQ(r.exit_code, 0);
  const auto out = read("out");
  EXPECT_NE(out.find("TUNE_TEST_INHERITED=yes"), std::string::npos);
  EXPECT_NE(out.find("TUNE_TEST_SET=42"), std::string::npos);
  EXPECT_EQ(out.find("TUNE_TEST_REMOVED"), std::string::npos);
}

TEST_F(LauncherTest, ExitCodeAndSignal) {
  auto crash = run_process(request({FAKE_TRIAL, "--mode", "crash"}));
  EXPECT_EQ(crash.exit_code, 3);
  EXPECT_NE(read("err").find("crashing on purpose"), std::string::npos);
  auto segv = run_process(request({FAKE_TRIAL, "--mode", "segv"}));
  EXPECT_EQ(segv.signal, SIGSEGV);
}

// The keeper's CPU figures (tuner/launch/machine_load.h): the tree's CPU time includes what the
// program's own children used (here a subshell it waited for), as the shell's `times` counts
// it, and the busy time of the machine over the same span is at least that.
TEST_F(LauncherTest, TheTreesCpuTimeIsCountedWithWhatItReaped) {
  auto r = run_process(request(
      {"/bin/sh", "-c", "( i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done ); times"}));
  ASSERT_TRUE(r.started) << r.error;
  ASSERT_EQ(r.exit_code, 0);
  ASSERT_TRUE(r.cpu) << "the keeper sent no cpu line";
  // `times`: the shell's user and system time, then its children's.
  std::istringstream times(read("out"));
  double seconds[4] = {};
  for (double& s : seconds) {
    int minutes = 0;
    char m = 0, unit = 0;
    ASSERT_TRUE(times >> minutes >> m >> s >> unit) << read("out");
    s += 60 * minutes;
  }
  const double children = seconds[2] + seconds[3];
  ASSERT_GT(children, 0.02) << read("out");
  EXPECT_GE(r.cpu->tree_s, children - 0.011);
  EXPECT_LE(r.cpu->tree_s, children + seconds[0] + seconds[1] + 0.05);
  EXPECT_GE(r.cpu->busy_s + 2 * r.cpu->busy_lines * r.cpu->tick_s, r.cpu->tree_s);
  EXPECT_GT(r.cpu->window_s, 0);
  EXPECT_LE(r.cpu->window_s, r.wall_s + 0.05);
  EXPECT_GE(r.cpu->tune_s, 0);
  EXPECT_TRUE(external_load(*r.cpu));
}

TEST_F(LauncherTest, MissingProgramIsAnError) {
  auto r = run_process(request({"tune-no-such-program-xyz"}));
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("not found"), std::string::npos);
}

TEST_F(LauncherTest, TimeoutKillsTheWholeProcessTree) {
  // The fake trial ignores SIGTERM; its grandchild copy must die too (SIGKILL after grace).
  const auto started = (m_dir / "grandchild.pid").string();
  auto req =
      request({"sh", "-c", "\"$0\" --mode hang --started \"$1\" & wait", FAKE_TRIAL, started});
  req.timeout_s = 0.5;
  req.kill_grace_s = 0.3;
  auto r = run_process(req);
  EXPECT_EQ(r.stopped, StopReason::timeout);
  EXPECT_LT(r.wall_s, 5.0);
  std::ifstream in(started);
  pid_t grandchild = 0;
  ASSERT_TRUE(in >> grandchild) << "the grandchild never started";
  // Reaped by init or dead: either way no longer signalable as a live process of ours.
  const bool gone = kill(grandchild, 0) != 0 || [&] {
    std::ifstream st("/proc/" + std::to_string(grandchild) + "/stat");
    std::string s;
    std::getline(st, s);
    return s.find(") Z") != std::string::npos;
  }();
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the timeout";
}

TEST_F(LauncherTest, WatcherCanStopTheTrial) {
  int ticks = 0;
  auto req = request({FAKE_TRIAL, "--mode", "hang"});
  req.tick_s = 0.01;
  req.kill_grace_s = 0.1;
  auto r = run_process(req, [&](pid_t) { return ++ticks >= 3 ? std::string("enough") : ""; });
  EXPECT_EQ(r.stopped, StopReason::watcher);
  EXPECT_EQ(r.stop_detail, "enough");
  EXPECT_EQ(r.signal, SIGKILL);  // it ignored SIGTERM
}

// A watcher that blocks (a storage call on a stalled database; here it blocks 1.5 s) neither
// lengthens the trial's wall time nor delays its timeout: the trial's time is its job's. The
// launcher still waits for the watcher's call before it returns, so nothing is left running.
TEST_F(LauncherTest, ABlockedWatcherDelaysNeitherTheEndNorTheTimeout) {
  using Clock = std::chrono::steady_clock;
  const auto stalled = [](pid_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the stall itself
    return std::string();
  };
  auto quick = request({"sleep", "0.2"});
  const auto t0 = Clock::now();
  auto r = run_process(quick, stalled);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.wall_s, 0.2);
  EXPECT_LT(r.wall_s, 0.8);  // not the watcher's 1.5 s
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 1.5);  // it was waited for

  auto slow = request({"sleep", "30"});
  slow.timeout_s = 0.3;
  r = run_process(slow, stalled);
  EXPECT_EQ(r.stopped, StopReason::timeout);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_GE(r.wall_s, 0.3);
  EXPECT_LT(r.wall_s, 1.0);
}

// What the watcher throws on its thread stops the trial and reaches the caller, as it did when
// the watcher ran on the caller's thread.
TEST_F(LauncherTest, AWatcherThatThrowsStopsTheTrialAndTheCallerGetsIt) {
  auto req = request({"sleep", "30"});
  req.kill_grace_s = 0.1;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(run_process(req, [](pid_t) -> std::string { throw std::runtime_error("bad"); }),
               std::runtime_error);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

// A known tree: the test forks a child, the child forks a grandchild, and both wait. The
// grandchild's pid comes back through a pipe, so the test reads /proc only once both exist.
class ProcessTree {
 public:
  ProcessTree() {
    int fds[2];
    if (pipe(fds) != 0) return;
    m_child = fork();
    if (m_child == 0) {
      close(fds[0]);
      const pid_t grandchild = fork();
      if (grandchild == 0) {
        const pid_t self = getpid();
        (void)!write(fds[1], &self, sizeof self);
        for (;;) pause();
      }
      close(fds[1]);
      int status = 0;
      waitpid(grandchild, &status, 0);  // returns when the test kills the grandchild
      _exit(0);
    }
    close(fds[1]);
    if (m_child > 0 && read(fds[0], &m_grandchild, sizeof m_grandchild) != sizeof m_grandchild)
      m_grandchild = -1;
    close(fds[0]);
  }
  // Killing the grandchild lets the child reap it and exit; without one, kill the child.
  ~ProcessTree() {
    if (m_child <= 0) return;
    kill(m_grandchild > 0 ? m_grandchild : m_child, SIGKILL);
    waitpid(m_child, nullptr, 0);
  }
  pid_t child() const { return m_child; }
  pid_t grandchild() const { return m_grandchild; }

 private:
  pid_t m_child = -1, m_grandchild = -1;
};

TEST_F(LauncherTest, DescendantsAreExactlyTheTreeBelowAPid) {
  ProcessTree tree;
  ASSERT_GT(tree.child(), 0) << "fork failed";
  ASSERT_GT(tree.grandchild(), 0) << "the grandchild never reported its pid";
  EXPECT_EQ(descendants(tree.child()), std::vector<pid_t>{tree.grandchild()});
  EXPECT_TRUE(descendants(tree.grandchild()).empty());
  // From this process: the child and, below it, the grandchild (other helpers may exist).
  const auto mine = descendants(getpid());
  EXPECT_NE(std::find(mine.begin(), mine.end(), tree.child()), mine.end());
  EXPECT_NE(std::find(mine.begin(), mine.end(), tree.grandchild()), mine.end());
  EXPECT_EQ(std::find(mine.begin(), mine.end(), getpid()), mine.end()) << "root is not its own";
}

TEST_F(LauncherTest, DescendantsOfAnUnknownPidAreNone) {
  EXPECT_TRUE(descendants(999'999'999).empty());
}

}  // namespace
}  // namespace tune::tuner
