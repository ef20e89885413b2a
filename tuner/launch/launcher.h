// Launcher: runs one trial's command as a child process and waits for it.
//
// The command is an argv vector (never a shell string), run with the parent's environment plus
// the trial's variables, stdout/stderr going to files in the trial directory.
//
// Containment: the command runs under a tune-keeper process (tuner/launch/keeper.h), a subreaper
// that every process of the trial stays below (double-forked and setsid() ones too) and that ends
// only when none is left; it also stops the whole tree when `tune` dies, SIGKILL included. So
// when run_process() returns, no process of the trial is alive, and none survives `tune`. A
// timeout, a pruning decision or Ctrl-C asks the keeper to SIGTERM the tree, then SIGKILL after
// a grace period. Without a keeper binary (LaunchResult::containment says so), the command is
// the direct child, leads its own process group and gets PR_SET_PDEATHSIG; `tune` itself is a
// subreaper and sweeps what is left after each trial, which covers everything but a SIGKILL of
// `tune`. The wait is a poll() on a pidfd, so a trial's end is seen at once; a watcher callback
// runs every tick for log following, heartbeats and pruning.
//
// A trial's time is its job's: the clock starts at the spawn and stops when the child is seen to
// exit (its pidfd readable), and the timeout is enforced by the waiting thread. The watcher runs
// on a thread of its own, so a watcher that blocks (a storage call waiting on a stalled
// database) neither extends wall_s nor delays the timeout, an interrupt or the SIGKILL; its
// verdict stops the trial when it comes. run_process() returns only after the watcher's last
// call has returned (it is never abandoned mid-call).
//
// run_process() blocks the calling thread; one trial at a time per process. The watcher runs on
// another thread but never at the same time as the caller's code (the caller is inside
// run_process() all the while), so it may use what the caller owns (its storage connection)
// provided nothing else does meanwhile. The interrupt flag is process-wide (SIGINT/SIGTERM/SIGHUP
// handlers installed by install_interrupt_handlers(), which also ignores SIGPIPE so that a
// closed terminal or pipe cannot kill `tune` mid-trial).
#pragma once

#include <sys/types.h>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/launch/machine_load.h"

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
  // Bytes kept of each of stdout and stderr (the first and last half; the middle is cut with a
  // marker line). 0 = unlimited. Needs the keeper.
  std::size_t output_cap_bytes = 0;
};

enum class StopReason { none, timeout, interrupted, watcher };

struct LaunchResult {
  bool started = false;
  std::string error;   // why the command could not start
  int exit_code = -1;  // when it exited normally
  int signal = 0;      // when a signal ended it
  StopReason stopped = StopReason::none;
  std::string stop_detail;  // watcher's reason
  // Spawn to the command's own exit (the keeper's word, else the child's exit on its pidfd);
  // never the time spent stopping what it left behind, which is cleanup_s.
  double wall_s = 0;
  double cleanup_s = 0;  // the command's exit to the end of its last leftover (keeper's sweep)
  std::optional<std::chrono::steady_clock::time_point> program_exited;  // the keeper's "exited"
  // For a trial ended by a signal or a non-zero exit: the kernel's record of an out-of-memory
  // kill while it ran ("the kernel's OOM killer killed process 1234 (python3)",
  // tuner/launch/oom_record.h); "" when none was recorded or none is readable.
  std::string oom_kill;
  // The machine's CPU time around the trial, from the keeper's start of it to its program's
  // exit (the keeper's "cpu" line, with tune's own CPU time over the trial added): what other
  // work used meanwhile is external_load(*cpu). None without a keeper or /proc/stat.
  std::optional<TrialCpu> cpu;
  pid_t pid = -1;           // the command's own pid (below the keeper when there is one)
  // How the trial's processes were contained: "keeper" or "subreaper" (see the top of this file).
  std::string containment;
  std::map<std::string, std::uint64_t> output_cut;  // stream -> bytes cut from its middle
  // The trial's output that could not be written, in the order it happened: "writing
  // /…/trials/3/stdout: No space left on device" (the keeper's write failed; the rest of that
  // stream was dropped).
  std::vector<std::string> write_errors;
};

// Called on a thread of its own once right after the child has started (with the pid), then
// every tick while the child runs: returning a non-empty string stops the trial with that
// reason (and ends the calls). It may block: the trial's timeout and end do not wait for it.
using Watcher = std::function<std::string(pid_t pid)>;

LaunchResult run_process(const LaunchRequest& request, const Watcher& watcher = {});

// The environment a trial's processes start with: this process's own without tune's database
// credentials (PGPASSWORD, PGPASSFILE, ...: is_database_credential_env_var), `env_unset` removed,
// then `env_set` added (so a study file's env that names PGPASSWORD gives the trial its value).
// The one composition: run_process starts the trial with it, and what the trial runs
// (tuner/launch/program_identity.h) and what the probes predict from read the same.
std::map<std::string, std::string> trial_environment(
    const std::map<std::string, std::string>& env_set, const std::vector<std::string>& env_unset);
inline std::map<std::string, std::string> trial_environment(const LaunchRequest& request) {
  return trial_environment(request.env_set, request.env_unset);
}

// A short helper run whose output is wanted (an interpreter's --version, torch's pool sizes):
// `request` is run as run_process runs it, its stdout and stderr going to a temporary folder
// that is removed after; the last `max_bytes` of each are returned. `request`'s own output paths
// are ignored. Blocks the calling thread.
struct CapturedRun {
  LaunchResult result;
  std::string out, err;
};
CapturedRun run_captured(LaunchRequest request, std::size_t max_bytes = 4096);

// SIGINT/SIGTERM/SIGHUP set a process-wide flag that run_process() reacts to at once.
void install_interrupt_handlers();
bool interrupted();
int interrupt_signal();    // the signal that set the flag (0 when none)

// True when this process runs as root (mpirun then needs --allow-run-as-root).
bool running_as_root();

}  // namespace tune::tuner
