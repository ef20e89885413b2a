#include "tuner/launch/oom_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace tune::tuner {
namespace {

// The number after `key` ("oom_kill 3") in a cgroup file of "key value" lines.
std::optional<std::uint64_t> counter_in(const std::string& path, std::string_view key) {
  std::ifstream in(path);
  std::string name;
  std::uint64_t value = 0;
  while (in >> name >> value) {
    if (name == key) return value;
  }
  return std::nullopt;
}

std::int64_t to_us(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

// The file of this process's memory cgroup that counts its OOM kills (key oom_kill):
// cgroup v2's memory.events (counting the cgroups below too), else v1's memory.oom_control;
// "" where there is none. A process stays in its cgroup, so this is found once.
std::string oom_counter_file() {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1;
  while (std::getline(in, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1)
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        const std::string file = std::string(root) + path + "/memory.events";
        if (counter_in(file, "oom_kill")) return file;
      }
    } else if (controllers == "memory") {
      v1 = "/sys/fs/cgroup/memory" + path + "/memory.oom_control";
    }
  }
  return v1;
}

}  // namespace

std::optional<std::uint64_t> cgroup_oom_kills() {
  // Read before every trial: the cgroup's file is looked up once, only the counter each time.
  static const std::string file = oom_counter_file();
  if (file.empty()) return std::nullopt;
  return counter_in(file, "oom_kill");
}

std::string oom_kills_in_log(std::string_view records, std::int64_t from_us, std::int64_t to_us) {
  std::string first;
  int count = 0;
  std::size_t at = 0;
  while (at < records.size()) {
    auto end = records.find('\n', at);
    if (end == std::string_view::npos) end = records.size();
    const std::string_view record = records.substr(at, end - at);
    at = end + 1;
    // PRIO,SEQ,TIME_US,FLAGS;MESSAGE
    const auto semi = record.find(';');
    if (semi == std::string_view::npos) continue;
    const std::string_view head = record.substr(0, semi);
    const std::string_view message = record.substr(semi + 1);
    const auto c1 = head.find(',');
    const auto c2 = c1 == std::string_view::npos ? c1 : head.find(',', c1 + 1);
    const auto c3 = c2 == std::string_view::npos ? c2 : head.find(',', c2 + 1);
    if (c3 == std::string_view::npos) continue;
    std::int64_t us = 0;
    const auto time = head.substr(c2 + 1, c3 - c2 - 1);
    if (std::from_chars(time.data(), time.data() + time.size(), us).ec != std::errc{}) continue;
    if (us < from_us || us > to_us) continue;
    // "Out of memory: Killed process 1234 (python3) total-vm:..." and, for a cgroup's limit,
    // "Memory cgroup out of memory: Killed process 1234 (python3) ..."
    constexpr std::string_view killed = "Killed process ";
    const auto k = message.find(killed);
    if (k == std::string_view::npos || !message.substr(0, k).contains("ut of memory")) continue;
    std::string_view what = message.substr(k + killed.size());
    if (const auto close = what.find(')'); close != std::string_view::npos)
      what = what.substr(0, close + 1);
    if (count++ == 0) first = std::string(what);
  }
  if (count == 0) return "";
  return count == 1 ? fmt::format("the kernel's OOM killer killed process {}", first)
                    : fmt::format("the kernel's OOM killer killed process {} and {} more", first,
                                  count - 1);
}

std::string logged_oom_kills(std::chrono::steady_clock::time_point from,
                             std::chrono::steady_clock::time_point to) {
  const int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  std::string records;
  std::vector<char> buf(8192);
  while (true) {
    // One record per read; EPIPE: records were overwritten meanwhile (read on); EAGAIN: the end.
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n > 0) {
      records.append(buf.data(), static_cast<std::size_t>(n));
      if (records.back() != '\n') records += '\n';
    } else if (n < 0 && (errno == EPIPE || errno == EINTR)) {
      continue;
    } else {
      break;
    }
  }
  close(fd);
  // The log's clock runs next to steady_clock, not on it: a second's slack at the end.
  return oom_kills_in_log(records, to_us(from), to_us(to) + 1'000'000);
}

}  // namespace tune::tuner
