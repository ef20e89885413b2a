// What the kernel recorded of out-of-memory kills while a trial ran (/dev/kmsg, the memory
// cgroup's oom_kill count), so a trial ended by SIGKILL is said to have run out of memory.
// Plain functions; thread-safe.
// Design: docs/design-notes.md#tunerlaunchoom_recordh
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tune::tuner {

// The oom_kill counter of this process's memory cgroup; nullopt where none is readable.
std::optional<std::uint64_t> cgroup_oom_kills();

// The kernel log's OOM kills between `from` and `to` (steady_clock, the kernel's monotonic
// clock), as one line: "the kernel's OOM killer killed process 1234 (python3)" (the first and
// a count when there are more); "" when none was logged or the log cannot be read.
std::string logged_oom_kills(std::chrono::steady_clock::time_point from,
                             std::chrono::steady_clock::time_point to);

// The same over records already read: each "PRIO,SEQ,TIME_US,FLAGS;MESSAGE" as /dev/kmsg gives
// them, separated by newlines; times in microseconds of the monotonic clock.
std::string oom_kills_in_log(std::string_view records, std::int64_t from_us, std::int64_t to_us);

}  // namespace tune::tuner
