#include "tuner/launch/machine_load.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tuner/base/proc_stat.h"
#include "tuner/launch/process_tree.h"

namespace tune::tuner {
namespace {

// A whole small file (/proc files report a size of 0, so read until the end).
std::string read_proc_file(const char* path) {
  std::string text;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  return text;
}

std::uint64_t timeval_ns(const timeval& tv) {
  return static_cast<std::uint64_t>(tv.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(tv.tv_usec) * 1000ull;
}

// user + system of /proc/PID/stat with its waited-for children's (utime stime cutime cstime), in
// ticks; 0 when it is gone.
std::uint64_t process_ticks(pid_t pid) {
  const auto st = read_proc_stat(pid);
  return st ? st->utime + st->stime + st->cutime + st->cstime : 0;
}

}  // namespace

double clock_tick_ns() {
  const long hz = sysconf(_SC_CLK_TCK);
  return 1e9 / static_cast<double>(hz > 0 ? hz : 100);
}

std::optional<BusyCpu> parse_busy_cpu(const std::string& proc_stat, const std::vector<int>* allowed,
                                      double tick_ns) {
  std::istringstream in(proc_stat);
  std::optional<std::uint64_t> aggregate;
  std::vector<std::pair<int, std::uint64_t>> per_cpu;
  std::uint64_t allowed_ticks = 0;
  int cpu_lines = 0, allowed_lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu", 0) != 0) continue;
    std::istringstream words(line);
    std::string name;
    words >> name;
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    std::uint64_t f[8] = {};
    int read = 0;
    while (read < 8 && words >> f[read]) ++read;
    if (read < 7) continue;
    const std::uint64_t busy = f[0] + f[1] + f[2] + f[5] + f[6];
    if (name == "cpu") {
      aggregate = busy;
      continue;
    }
    ++cpu_lines;
    const int index = std::atoi(name.c_str() + 3);
    if (allowed == nullptr || std::find(allowed->begin(), allowed->end(), index) != allowed->end()) {
      allowed_ticks += busy;
      ++allowed_lines;
      per_cpu.emplace_back(index, static_cast<std::uint64_t>(static_cast<double>(busy) * tick_ns));
    }
  }
  // Every CPU allowed: the aggregate line, rounded once instead of once per CPU.
  if (allowed == nullptr || allowed_lines == cpu_lines) {
    if (!aggregate) return std::nullopt;
    return BusyCpu{static_cast<std::uint64_t>(static_cast<double>(*aggregate) * tick_ns), 1,
                   std::move(per_cpu)};
  }
  if (allowed_lines == 0) return std::nullopt;
  return BusyCpu{static_cast<std::uint64_t>(static_cast<double>(allowed_ticks) * tick_ns),
                 allowed_lines, std::move(per_cpu)};
}

std::optional<BusyCpu> busy_since(const BusyCpu& before, const BusyCpu& after) {
  if (after.ns < before.ns) return std::nullopt;
  BusyCpu used{after.ns - before.ns, after.lines, {}};
  for (const auto& [cpu, ns] : after.per_cpu) {
    const auto was = std::find_if(before.per_cpu.begin(), before.per_cpu.end(),
                                  [cpu](const auto& p) { return p.first == cpu; });
    if (was == before.per_cpu.end() || ns < was->second) continue;
    used.per_cpu.emplace_back(cpu, ns - was->second);
  }
  return used;
}

std::vector<int> allowed_cpus() {
  std::vector<int> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) allowed.push_back(i);
  }
  return allowed;
}

std::optional<BusyCpu> read_busy_cpu() {
  const std::vector<int> allowed = allowed_cpus();
  return parse_busy_cpu(read_proc_file("/proc/stat"), allowed.empty() ? nullptr : &allowed,
                        clock_tick_ns());
}

std::optional<BusyCpu> read_busy_cpu(const std::vector<int>& cpus) {
  if (cpus.empty()) return read_busy_cpu();
  return parse_busy_cpu(read_proc_file("/proc/stat"), &cpus, clock_tick_ns());
}

std::uint64_t tree_cpu_ns() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  std::uint64_t ns = timeval_ns(ru.ru_utime) + timeval_ns(ru.ru_stime);
  // What still runs below: orphans are re-parented to the subreaper, so with no child of its own
  // left nothing is (one small read, where the walk of /proc costs milliseconds per trial).
  std::uint64_t ticks = 0;
  if (access("/proc/thread-self/children", R_OK) != 0 ||
      !read_proc_file("/proc/thread-self/children").empty()) {
    for (pid_t p : descendants(getpid())) ticks += process_ticks(p);
  }
  return ns + static_cast<std::uint64_t>(static_cast<double>(ticks) * clock_tick_ns());
}

std::uint64_t self_cpu_ns() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return timeval_ns(ru.ru_utime) + timeval_ns(ru.ru_stime);
}

std::string keeper_cpu_line(std::uint64_t window_ns, const BusyCpu& busy, std::uint64_t tree_ns,
                            std::uint64_t keeper_ns) {
  std::string line = "cpu " + std::to_string(window_ns) + " " + std::to_string(busy.ns) + " " +
                     std::to_string(busy.lines) + " " + std::to_string(tree_ns) + " " +
                     std::to_string(keeper_ns) + " " +
                     std::to_string(static_cast<std::uint64_t>(clock_tick_ns()));
  for (std::size_t i = 0; i < busy.per_cpu.size(); ++i)
    line += (i == 0 ? " " : ",") + std::to_string(busy.per_cpu[i].first) + ":" +
            std::to_string(busy.per_cpu[i].second);
  return line;
}

std::optional<TrialCpu> parse_keeper_cpu_line(const std::string& words) {
  std::istringstream in(words);
  std::uint64_t window = 0, busy = 0, tree = 0, keeper = 0, tick = 0;
  int lines = 0;
  if (!(in >> window >> busy >> lines >> tree >> keeper >> tick) || window == 0 || lines < 1)
    return std::nullopt;
  TrialCpu cpu;
  cpu.window_s = static_cast<double>(window) / 1e9;
  cpu.busy_s = static_cast<double>(busy) / 1e9;
  cpu.busy_lines = lines;
  cpu.tree_s = static_cast<double>(tree) / 1e9;
  cpu.keeper_s = static_cast<double>(keeper) / 1e9;
  cpu.tick_s = static_cast<double>(tick) / 1e9;
  // Each CPU's busy time, "CPU:NS,CPU:NS": a word that does not parse leaves the list empty.
  std::string list;
  if (in >> list) {
    std::istringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      const auto colon = item.find(':');
      char* end = nullptr;
      const long index = colon == std::string::npos ? -1 : std::strtol(item.c_str(), &end, 10);
      if (index < 0 || end != item.c_str() + colon) {
        cpu.per_cpu_busy_s.clear();
        break;
      }
      cpu.per_cpu_busy_s.emplace_back(static_cast<int>(index),
                                      std::strtod(item.c_str() + colon + 1, nullptr) / 1e9);
    }
  }
  return cpu;
}

std::optional<ExternalLoad> external_load(const TrialCpu& cpu) {
  if (!(cpu.window_s > 0)) return std::nullopt;
  const double outside = cpu.busy_s - cpu.tree_s - cpu.keeper_s - cpu.tune_s;
  ExternalLoad load;
  // Never below none: the tree's accounting is exact where /proc/stat is counted in ticks, so a
  // quiet machine may read a little under zero.
  load.cpus = std::max(0.0, outside / cpu.window_s);
  // Each end of the busy time is truncated to a tick per line summed.
  load.uncertainty = 2.0 * cpu.busy_lines * cpu.tick_s / cpu.window_s;
  return load;
}

}  // namespace tune::tuner
