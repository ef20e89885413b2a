// One parser of /proc/PID/stat (proc(5)): the fields tune reads, after the command name, which
// may hold spaces and parentheses. Stateless; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace tune::tuner {

struct ProcStat {
  char state = '?';  // field 3: R, S, D, Z, ...
  pid_t ppid = -1;   // field 4
  // Fields 14-17 in clock ticks: user and system time, and those of its waited-for children.
  std::uint64_t utime = 0, stime = 0, cutime = 0, cstime = 0;
  std::uint64_t starttime = 0;  // field 22: ticks after boot; with the pid, names a process
};

// The fields of one stat line; nullopt when it is cut before field 22 or not a stat line.
std::optional<ProcStat> parse_proc_stat(std::string_view line);
// /proc/PID/stat of a live process, read with read(2) (a process ending meanwhile is nullopt,
// never an exception).
std::optional<ProcStat> read_proc_stat(pid_t pid);

}  // namespace tune::tuner
