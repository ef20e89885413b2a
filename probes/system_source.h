// The operating system behind a seam (like LevelDB's Env): topology, process tree, /proc
// counters and a clock; make_live_source() is the real one, FakeSource the tests'. The live
// source may be shared (a mutex guards its cached topology); the fake is not thread-safe.
// Design: docs/design-notes.md#probessystem_sourceh
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probes/topology.h"

namespace tune::probes {

// One thread, from /proc/<pid>/task/<tid>/stat and .../status.
struct ThreadSample {
  pid_t tid = 0;
  std::string comm;    // the thread's name (15 characters; a new thread inherits its creator's)
  char state = '?';    // R running/runnable, S sleeping, D disk wait, ...
  int processor = -1;  // CPU it last ran on (stat field 39)
  double cpu_s = 0;    // utime + stime, seconds
  bool has_status = false;  // the three fields below were read (status is read less often)
  std::uint64_t voluntary_switches = 0;
  std::uint64_t nonvoluntary_switches = 0;
  std::vector<int> cpus_allowed;  // Cpus_allowed_list
  // Run-queue delay: time spent runnable but waiting for a CPU, from /proc/.../schedstat (its
  // second field; present on kernels with CONFIG_SCHED_INFO, nearly all). The direct measure of
  // what oversubscription costs, where sampled thread states only estimate it.
  bool has_wait = false;
  double wait_s = 0;
};

// One process, from /proc/<pid>/stat, with its threads when asked for.
struct ProcessSample {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;  // the kernel's 15-character name
  char state = '?';
  double cpu_s = 0;  // utime + stime of all its live threads, seconds
  int num_threads = 0;
  std::uint64_t start_ticks = 0;  // starttime: tells a reused pid from the old one
  std::vector<ThreadSample> threads;
};

class SystemSource {
 public:
  virtual ~SystemSource() = default;
  virtual std::expected<Topology, std::string> topology() = 0;
  // `root` and all its descendants (children of any thread), root first; empty when root is gone.
  virtual std::vector<pid_t> process_tree(pid_t root) = 0;
  // nullopt when the process has gone (a normal race while sampling). With threads, each
  // thread's stat and status are read.
  virtual std::optional<ProcessSample> read_process(pid_t pid, bool with_threads) = 0;
  // The same without the threads' status files (context switches, Cpus_allowed_list) when
  // `with_status` is false: the monitor reads those about once a second, halving its cost.
  // Sources that do not override it read everything.
  virtual std::optional<ProcessSample> read_process_threads(pid_t pid, bool with_status) {
    (void)with_status;
    return read_process(pid, /*with_threads=*/true);
  }
  // One variable of the process's initial environment (/proc/<pid>/environ), e.g. the MPI rank.
  virtual std::optional<std::string> read_environ(pid_t pid, const std::string& name) = 0;
  // Monotonic seconds.
  virtual double now_s() = 0;
};

// hwloc and /proc. The topology is read once, on first use, and then served from memory (hwloc's
// discovery with PCI devices costs tens of milliseconds; the machine does not change).
std::unique_ptr<SystemSource> make_live_source();

}  // namespace tune::probes
