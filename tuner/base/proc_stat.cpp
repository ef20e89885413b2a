#include "tuner/base/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

namespace tune::tuner {

std::optional<ProcStat> parse_proc_stat(std::string_view line) {
  // The command name is in parentheses and may itself hold spaces and ')': the fields are read
  // after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  ProcStat st;
  for (int field = 3; field <= 22; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const auto end = rest.find_first_of(" \n");
    const std::string_view word = rest.substr(0, end);
    if (word.empty()) return std::nullopt;
    rest.remove_prefix(word.size());
    if (field == 3) {
      st.state = word.front();
      continue;
    }
    std::uint64_t* into = nullptr;
    switch (field) {
      case 14:
        into = &st.utime;
        break;
      case 15:
        into = &st.stime;
        break;
      case 16:
        into = &st.cutime;
        break;
      case 17:
        into = &st.cstime;
        break;
      case 22:
        into = &st.starttime;
        break;
      default:
        break;
    }
    if (field == 4) {
      long ppid = 0;
      if (std::from_chars(word.data(), word.data() + word.size(), ppid).ec != std::errc())
        return std::nullopt;
      st.ppid = static_cast<pid_t>(ppid);
    } else if (into != nullptr &&
               std::from_chars(word.data(), word.data() + word.size(), *into).ec != std::errc()) {
      return std::nullopt;
    }
  }
  return st;
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  // A stat line is a few hundred bytes; the command name is at most 64.
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n <= 0) return std::nullopt;
  return parse_proc_stat(std::string_view(buf, static_cast<std::size_t>(n)));
}

}  // namespace tune::tuner
