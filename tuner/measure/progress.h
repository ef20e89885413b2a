// Reading a running job's progress for the window objective: what it appended to a stream, a file
// or a Chainer log since the last poll, as progress points (tuner/measure/rate_window.h). The
// output is untrusted: reads are bounded, refused matches counted. One reader per trial; not
// thread-safe (the trial's watcher thread owns it).
// Design: docs/design-notes.md#tunermeasureprogressh
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/study/study_file.h"

namespace re2 {
class RE2;
}

namespace tune::tuner {

inline constexpr std::size_t k_progress_line_bytes = 64u << 10;
inline constexpr std::size_t k_progress_read_bytes = 4u << 20;
// A log larger than this is not re-read while the trial runs (it is rewritten whole each time).
inline constexpr std::uintmax_t k_progress_log_bytes = 64u << 20;

struct ProgressPoint {
  double t = 0;      // seconds: the job's clock, or the poll's
  double value = 0;  // the counter, the number of lines so far, or the rate
};

struct ProgressCounts {
  std::uint64_t lines = 0;          // complete lines read (a log: entries)
  std::uint64_t points = 0;         // progress points given
  std::uint64_t refused = 0;        // matched, but no finite number (or time) in it
  std::uint64_t partial = 0;        // ... of which a group held only part of a number
  std::uint64_t long_lines = 0;     // longer than k_progress_line_bytes: skipped
  std::uint64_t skipped_bytes = 0;  // not read: more than k_progress_read_bytes in one poll
  std::uintmax_t bytes = 0;         // the source's size when last seen
  bool job_clock = false;           // some point carried the job's own time
};

class ProgressReader {
 public:
  // `path`: the file to follow (absolute); it may not exist yet.
  ProgressReader(const WindowSpec& spec, std::string path);
  ~ProgressReader();
  ProgressReader(const ProgressReader&) = delete;
  ProgressReader& operator=(const ProgressReader&) = delete;

  // The points added since the last call, in order; `now_s` is the time of this read.
  std::vector<ProgressPoint> poll(double now_s);

  const ProgressCounts& counts() const { return m_counts; }
  const std::string& path() const { return m_path; }
  // "regex 'step ([0-9]+)' on stdout", "key 'iteration' of log PATH": for messages.
  std::string describe() const;
  // Why the first line whose group held only part of a number was refused, quoting the match,
  // the number and the line (objective.h's partial_number_reason); "" when none was.
  const std::string& partial_number() const { return m_partial_number; }
  // Why the last other refused line was, quoting its match; "" when none was.
  const std::string& last_refused() const { return m_last_refused; }

 private:
  void read_lines(double now_s, std::vector<ProgressPoint>& out);
  void read_log_entries(double now_s, std::vector<ProgressPoint>& out);
  void take_line(std::string_view line, double now_s, std::vector<ProgressPoint>& out);
  // The number a group's match `m` (a piece of `line`) writes, or nullopt when it is refused
  // (counted, and why kept); `what` names the group for the message.
  std::optional<double> group_number(std::string_view line, std::string_view m, const char* what);

  WindowSpec m_spec;
  std::string m_path;
  std::unique_ptr<re2::RE2> m_re;
  int m_value_group = 0;  // 1-based group of the number; 0 = the whole match
  int m_time_group = 0;   // 1-based group named `time`; 0 = none
  std::uintmax_t m_offset = 0;
  std::string m_partial;           // the unfinished last line
  bool m_in_long = false;          // inside a line being skipped
  std::uint64_t m_line_count = 0;  // matching lines so far (measure: lines)
  std::size_t m_entries_seen = 0;  // log entries taken
  std::filesystem::file_time_type m_log_mtime{};
  ProgressCounts m_counts;
  std::string m_partial_number;
  std::string m_last_refused;
};

}  // namespace tune::tuner
