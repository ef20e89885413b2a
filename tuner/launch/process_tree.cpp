#include "tuner/launch/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace tune::tuner {
namespace {

// The parent pid in the text of /proc/PID/stat, or -1. The command name is in parentheses and
// may itself hold spaces and parentheses, so the fields are read after the last ')'.
pid_t parent_of(const char* stat) {
  const char* close = std::strrchr(stat, ')');
  if (close == nullptr || close[1] != ' ' || close[2] == '\0' || close[3] != ' ') return -1;
  char* end = nullptr;
  const long ppid = std::strtol(close + 4, &end, 10);
  return end == close + 4 ? -1 : static_cast<pid_t>(ppid);
}

}  // namespace

std::vector<pid_t> descendants(pid_t root) {
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  if (DIR* proc = opendir("/proc")) {
    while (const dirent* entry = readdir(proc)) {
      const char* name = entry->d_name;
      if (name[0] < '0' || name[0] > '9') continue;
      char path[sizeof "/proc//stat" + sizeof entry->d_name];
      std::snprintf(path, sizeof path, "/proc/%s/stat", name);
      const int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;  // ended since readdir
      char stat[512];
      const ssize_t n = read(fd, stat, sizeof stat - 1);
      close(fd);
      if (n <= 0) continue;
      stat[n] = '\0';
      const pid_t ppid = parent_of(stat);
      if (ppid >= 0) children[ppid].push_back(static_cast<pid_t>(std::atol(name)));
    }
    closedir(proc);
  }
  std::vector<pid_t> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    const auto it = children.find(p);
    if (it == children.end()) continue;
    for (pid_t c : it->second) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

}  // namespace tune::tuner
