#include "tuner/base/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdio>

namespace tune::tuner {

std::optional<ProcStat> parse_proc_stat(std::string_view line) {
  // The command name is in parentheses and may itself hold spaces and ')': the fields are read
  // after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  std::array<std::string_view, 23> field{};  // field[3] .. field[22], as proc(5) numbers them
  for (std::size_t i = 3; i < field.size(); ++i) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    field[i] = rest.substr(0, rest.find_first_of(" \n"));
    if (field[i].empty()) return std::nullopt;
    rest.remove_prefix(field[i].size());
  }
  const auto number = [&](std::size_t i, auto& into) {
    return std::from_chars(field[i].data(), field[i].data() + field[i].size(), into).ec ==
           std::errc();
  };
  ProcStat st;
  st.state = field[3].front();
  long ppid = 0;
  if (!number(4, ppid) || !number(14, st.utime) || !number(15, st.stime) ||
      !number(16, st.cutime) || !number(17, st.cstime) || !number(22, st.starttime))
    return std::nullopt;
  st.ppid = static_cast<pid_t>(ppid);
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
