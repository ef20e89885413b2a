#include "tuner/launch/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "tuner/base/proc_stat.h"

namespace tune::tuner {
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
      const auto st = parse_proc_stat(std::string_view(stat, static_cast<std::size_t>(n)));
      if (st && st->ppid >= 0) children[st->ppid].push_back(static_cast<pid_t>(std::atol(name)));
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
