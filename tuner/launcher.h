// Launcher: runs one trial's command as a child process and waits for it.
//
// The command is an argv vector (never a shell string), run with the parent's environment plus
// the trial's variables, stdout/stderr going to files in the trial directory. The child leads a
// process group of its own, so a timeout, a pruning decision or Ctrl-C stops mpirun and every
// rank together: SIGTERM to the group and to every descendant found in /proc, then SIGKILL after
// a grace period. The wait is a poll() on a pidfd (no polling loop), so a trial's end is seen at
// once; a watcher callback runs every tick for log following, heartbeats and pruning.
// The child also gets PR_SET_PDEATHSIG so that a tune killed with -9 takes its trial with it.
//
// run() blocks the calling thread; one trial at a time per Launcher. The interrupt flag is
// process-wide (SIGINT/SIGTERM handlers installed by install_interrupt_handlers()).
#pragma once

#include <sys/types.h>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tune::tuner {

struct LaunchRequest {
  std::vector<std::string> argv;               // argv[0] is looked up in PATH when it has no '/'
  std::map<std::string, std::string> env_set;  // added to / replacing the parent's environment
  std::vector<std::string> env_unset;          // removed from the parent's environment
  std::string workdir;                         // working directory; empty = inherit
  std::string stdout_path;                     // empty = /dev/null
  std::string stderr_path;                     // empty = /dev/null
  std::optional<double> timeout_s;             // wall-clock limit; none = no limit
  double kill_grace_s = 3.0;                   // SIGTERM -> SIGKILL delay
  double tick_s = 1.0;                         // watcher period
};

enum class StopReason { none, timeout, interrupted, watcher };

struct LaunchResult {
  bool started = false;
  std::string error;   // why the command could not start
  int exit_code = -1;  // when it exited normally
  int signal = 0;      // when a signal ended it
  StopReason stopped = StopReason::none;
  std::string stop_detail;  // watcher's reason
  double wall_s = 0;        // spawn to reap
  pid_t pid = -1;
};

// Called every tick while the child runs, and once right after it has started (with the pid):
// returning a non-empty string stops the trial with that reason.
using Watcher = std::function<std::string(pid_t pid)>;

LaunchResult run_process(const LaunchRequest& request, const Watcher& watcher = {});

// SIGINT/SIGTERM set a process-wide flag that run_process() reacts to at once.
void install_interrupt_handlers();
bool interrupted();
void clear_interrupted();  // tests

// True when this process runs as root (mpirun then needs --allow-run-as-root).
bool running_as_root();

// Every descendant pid of `root` (children, grandchildren, ...), read from /proc.
std::vector<pid_t> descendants(pid_t root);

}  // namespace tune::tuner
