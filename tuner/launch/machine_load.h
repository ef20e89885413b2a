// The machine's CPU load around a trial: busy CPU time (/proc/stat), the trial tree's share
// (the keeper's accounting), and so the load of other work (issue 36). C and C++ standard
// libraries only (the keeper links it statically). Stateless; thread-safe.
// Design: docs/design-notes.md#tunerlaunchmachine_loadh
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tune::tuner {

// Busy CPU time of the CPUs this process may run on, from /proc/stat: user, nice, system, irq
// and softirq (not idle, iowait or steal: time stolen by a hypervisor is not used on this
// machine). `lines` says how many /proc/stat lines were summed: each is counted in clock ticks
// (USER_HZ), so a difference of two readings is exact to one tick per line.
struct BusyCpu {
  std::uint64_t ns = 0;
  int lines = 0;
  // Each CPU summed, by its number (its own line, in ns): what a trial's ranks' CPUs alone used
  // is summed from these (tuner/run/load_check.h).
  std::vector<std::pair<int, std::uint64_t>> per_cpu;
};
// The CPUs this process (and so a trial it starts) may run on (sched_getaffinity); empty when
// the mask cannot be read.
std::vector<int> allowed_cpus();
// The aggregate line when this process may use every CPU, else the sum of its CPUs' own lines;
// none when /proc/stat cannot be read. With `cpus`: the sum of those CPUs' lines.
std::optional<BusyCpu> read_busy_cpu();
std::optional<BusyCpu> read_busy_cpu(const std::vector<int>& cpus);
// `after` less `before`, CPU by CPU (per_cpu; none when a counter went back).
std::optional<BusyCpu> busy_since(const BusyCpu& before, const BusyCpu& after);
// The same from /proc/stat's text and the CPUs allowed (none: every CPU), for tests.
std::optional<BusyCpu> parse_busy_cpu(const std::string& proc_stat, const std::vector<int>* allowed,
                                      double tick_ns);

// One clock tick (USER_HZ) in nanoseconds.
double clock_tick_ns();

// CPU time (user + system) of this process's children that were waited for, and of the
// processes below it still alive or not yet reaped (with their own waited-for children): the
// whole tree's use so far, for the keeper.
std::uint64_t tree_cpu_ns();
// This process's own CPU time (all its threads).
std::uint64_t self_cpu_ns();

// What the keeper reports at its program's exit, plus tune's own share (seconds over the span
// from the keeper's start of the trial to that exit).
struct TrialCpu {
  double window_s = 0;   // the span measured
  double busy_s = 0;     // the machine's busy CPU time over it (read_busy_cpu)
  int busy_lines = 1;    // /proc/stat lines summed (the reading's resolution: a tick each)
  double tree_s = 0;     // the trial's process tree (tree_cpu_ns)
  double keeper_s = 0;   // the keeper itself (copying the trial's output)
  double tune_s = 0;     // tune itself over the trial: its monitor, watcher and waiting threads
  double tick_s = 0.01;  // one /proc/stat tick
  // The busy time of each CPU tune may use over the span (CPU number, seconds); empty from a
  // keeper that did not send it.
  std::vector<std::pair<int, double>> per_cpu_busy_s;
};

// The keeper's line: "cpu WINDOW_NS BUSY_NS LINES TREE_NS KEEPER_NS TICK_NS CPU:NS,CPU:NS..."
// (no newline; the last word lists each CPU's busy time, busy.per_cpu).
std::string keeper_cpu_line(std::uint64_t window_ns, const BusyCpu& busy, std::uint64_t tree_ns,
                            std::uint64_t keeper_ns);
// The figures of such a line (its words after "cpu"); none when it does not parse.
std::optional<TrialCpu> parse_keeper_cpu_line(const std::string& words);

// CPU used outside the study during the trial, in CPUs' worth (CPU seconds per second):
// busy - tree - keeper - tune, over the window. `uncertainty` is what the clock-tick resolution
// of the busy time allows (a tick per line summed, at each end), in the same unit: a trial of
// 50 ms cannot tell 0.2 CPUs of load from none.
struct ExternalLoad {
  double cpus = 0;
  double uncertainty = 0;
};
std::optional<ExternalLoad> external_load(const TrialCpu& cpu);

}  // namespace tune::tuner
