// Launcher: runs one trial's command (an argv, never a shell string) as a child process and waits
// for it, its whole tree contained ("keeper": under tune-keeper; else "subreaper": tune sweeps
// what is left). run_process() blocks, one trial at a time per process; its watcher runs on a
// thread of its own. The interrupt flag is process-wide.
// Design: docs/design-notes.md#tunerlaunchlauncherh
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
