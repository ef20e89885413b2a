// Every process `tune` starts through a remote shell is contained: the node watchers of a
// multi-host trial (tuner/probing/node_watchers.h) run their remote shell under a tune-keeper, so
// what that shell forks (an ssh ProxyCommand, a site wrapper's helper, a setsid'd one, one that
// ignores SIGTERM) ends when the watchers are collected or stopped, and when `tune` is SIGKILLed.
//
// The remote shell here is a local script used as mpirun's plm_rsh_agent would be: it forks
// helpers that sleep long, records their pids, then runs the real `tune probe --watch` as ssh
// would run it on the node (its words joined into one shell line).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/test_support.h"
#include "tuner/base/text.h"
#include "tuner/probing/node_watchers.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using test_support::read_file;
using test_support::wait_for_file;

// A process as first seen: its pid and its start time (/proc/PID/stat's field 22), so that a pid
// reused by another process is not taken for it.
struct Seen {
  pid_t pid = -1;
  std::string started;
};

// The fields of /proc/PID/stat after the command name (state first); empty when it is gone. A
// process that ends while its file is read fails the read (ESRCH), which libstdc++'s filebuf
// throws from (seen once in CI): gone as well.
std::vector<std::string> stat_fields(pid_t pid) {
  std::string stat;
  try {
    stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const std::exception&) {
    return {};
  }
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream in(stat.substr(close + 1));
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Running (a zombie has ended: only its parent's wait is missing).
bool alive(const Seen& p) {
  const auto f = stat_fields(p.pid);
  return f.size() > 19 && f[0] != "Z" && f[19] == p.started;
}

bool wait_until(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::yield();
  }
  return done();
}

class WatcherContainment : public test_support::TempDirTest {
 protected:
  WatcherContainment() : TempDirTest("tune-watchers-") {}

  void TearDown() override {
    for (const Seen& p : m_seen)
      if (alive(p)) kill(p.pid, SIGKILL);  // a failed test leaves no sleeper for minutes
    TempDirTest::TearDown();
  }

  // The remote shell: `wrapper HOST WORD...`. It forks a helper (in its group), a setsid'd one
  // (out of its group and session) and one that ignores SIGTERM, writes each pid and its own to
  // a file, then runs `then` (the remote command when empty, as ssh runs it on HOST).
  std::string remote_shell(const std::string& then = "") {
    const std::string dir = shell_quote(m_dir.string());
    std::string script = "#!/bin/sh\nshift  # the host\nd=" + dir + "\n";
    script +=
        "put() { echo \"$2\" > \"$d/$1.tmp\" && mv \"$d/$1.tmp\" \"$d/$1.pid\"; }\n"
        "put shell $$\n"
        "sleep 600 </dev/null >/dev/null 2>&1 &\n"
        "put helper $!\n"
        "setsid sleep 601 </dev/null >/dev/null 2>&1 &\n"
        "put session $!\n"
        "(trap '' TERM; exec sleep 602) </dev/null >/dev/null 2>&1 &\n"
        "put stubborn $!\n";
    script += then.empty() ? std::string("exec sh -c \"$*\"\n") : then + "\n";
    const fs::path path = m_dir / "remote-shell";
    test_support::write_file(path, script);
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }

  // The processes the remote shell recorded, once it has recorded them all.
  std::vector<Seen> recorded() {
    std::vector<Seen> out;
    for (const char* name : {"shell", "helper", "session", "stubborn"}) {
      const fs::path file = m_dir / (std::string(name) + ".pid");
      EXPECT_TRUE(wait_for_file(file, std::chrono::seconds(20))) << file;
      Seen p;
      p.pid = static_cast<pid_t>(std::atol(read_file(file).c_str()));
      const auto f = stat_fields(p.pid);
      if (f.size() > 19) p.started = f[19];
      EXPECT_TRUE(alive(p)) << name << " " << p.pid << " is not running";
      out.push_back(p);
      m_seen.push_back(p);
    }
    return out;
  }

  static std::string still_running(const std::vector<Seen>& processes) {
    std::string out;
    for (const Seen& p : processes)
      if (alive(p)) out += std::to_string(p.pid) + " ";
    return out;
  }

  std::string tag() const { return "watchers-" + std::to_string(getpid()); }

  std::vector<Seen> m_seen;
};

// The watcher reports through the forking remote shell; once collect() returns, nothing the
// remote shell started is left (before: the helpers ran on, the setsid'd one for good).
TEST_F(WatcherContainment, WhatTheRemoteShellForkedEndsWhenTheWatchersAreCollected) {
  NodeWatchers watchers;
  watchers.start({remote_shell()}, {{"node-b", {1}}}, TUNE_BIN, tag(), 0.05);
  const auto processes = recorded();
  const auto seen = watchers.collect(10.0);
  ASSERT_EQ(seen.size(), 1u);
  // The real watcher ran through the wrapper and its report came back (it finds no trial
  // tagged so: an error naming the tag, with this machine's hostname).
  EXPECT_FALSE(seen[0].hostname.empty()) << seen[0].error;
  EXPECT_NE(seen[0].error.find(tag()), std::string::npos) << seen[0].error;
  EXPECT_EQ(still_running(processes), "");
}

// Watchers stopped without a report (the trial was skipped or the probes ended): the whole tree
// goes, the one that ignores SIGTERM by SIGKILL after the grace.
TEST_F(WatcherContainment, StoppedWatchersTakeTheirWholeTreeWithThem) {
  std::vector<Seen> processes;
  {
    NodeWatchers watchers;
    // An ssh that hangs (an unreachable node's), so nothing ends by itself.
    watchers.start({remote_shell("exec sleep 603")}, {{"node-b", {1}}}, TUNE_BIN, tag(), 0.05);
    processes = recorded();
  }
  EXPECT_EQ(still_running(processes), "");
}

// `tune` SIGKILLed while its watchers run: the keeper's lifeline ends, and it stops their trees.
TEST_F(WatcherContainment, WatchersDieWithTune) {
  const std::string shell = remote_shell("exec sleep 603");
  const pid_t tune = fork();
  ASSERT_GE(tune, 0);
  if (tune == 0) {  // stands for tune: starts its watchers and is killed while they run
    {
      NodeWatchers watchers;
      watchers.start({shell}, {{"node-b", {1}}}, TUNE_BIN, tag(), 0.05);
      for (;;) pause();
    }
  }
  const auto processes = recorded();
  ASSERT_EQ(kill(tune, SIGKILL), 0);
  ASSERT_EQ(waitpid(tune, nullptr, 0), tune);
  EXPECT_TRUE(
      wait_until([&] { return still_running(processes).empty(); }, std::chrono::seconds(20)))
      << "still running after tune was killed: " << still_running(processes);
}

}  // namespace
}  // namespace tune::tuner
