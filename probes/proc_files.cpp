#include "probes/proc_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace tune::probes {

bool read_proc_file(const char* path, std::string* out) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  out->clear();
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return true;
}

std::vector<pid_t> numeric_entries(const char* path) {
  std::vector<pid_t> out;
  DIR* d = ::opendir(path);
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    pid_t v = 0;
    const char* end = e->d_name + std::strlen(e->d_name);
    auto [p, ec] = std::from_chars(e->d_name, end, v);
    if (ec == std::errc() && p == end) out.push_back(v);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tune::probes
