#include "probes/system_source.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>

#include "probes/proc_files.h"

namespace tune::probes {
namespace {

// /proc/<pid>/stat: "pid (comm) state ppid ..." where comm may hold spaces and parentheses, so
// the fields after it are counted from the last ')'.
struct StatFields {
  std::string comm;
  char state = '?';
  pid_t ppid = 0;
  double cpu_s = 0;
  int num_threads = 0;
  std::uint64_t start_ticks = 0;
  int processor = -1;
};

bool parse_stat(const std::string& text, StatFields* f) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  f->comm = text.substr(open + 1, close - open - 1);
  // Fields from 3 (state) on; index k here is field k+3 of proc(5).
  std::string_view rest(text);
  rest.remove_prefix(close + 2);
  static const long ticks = ::sysconf(_SC_CLK_TCK);
  std::uint64_t utime = 0, stime = 0;
  int k = 0;
  while (!rest.empty()) {
    const auto sp = rest.find(' ');
    const std::string_view tok = rest.substr(0, sp);
    auto num = [&](auto* v) { std::from_chars(tok.data(), tok.data() + tok.size(), *v); };
    switch (k) {
      case 0:
        f->state = tok.empty() ? '?' : tok[0];
        break;
      case 1:
        num(&f->ppid);
        break;
      case 11:
        num(&utime);
        break;
      case 12:
        num(&stime);
        break;
      case 17:
        num(&f->num_threads);
        break;
      case 19:
        num(&f->start_ticks);
        break;
      case 36:
        num(&f->processor);
        break;
    }
    if (k == 36 || sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
    ++k;
  }
  f->cpu_s = static_cast<double>(utime + stime) / static_cast<double>(ticks > 0 ? ticks : 100);
  return k >= 12;
}

// /proc/<pid>/task/<tid>/schedstat: "<ns on a CPU> <ns waiting on a run queue> <timeslices>".
void read_schedstat(const std::string& text, ThreadSample* t) {
  unsigned long long on_cpu = 0, waiting = 0;
  if (std::sscanf(text.c_str(), "%llu %llu", &on_cpu, &waiting) != 2) return;
  t->has_wait = true;
  t->wait_s = static_cast<double>(waiting) * 1e-9;
}

// The three lines of /proc/<pid>/task/<tid>/status the monitor needs.
void parse_status(const std::string& text, ThreadSample* t) {
  auto value_of = [&](std::string_view key) -> std::string_view {
    const auto at = text.find(key);
    if (at == std::string::npos) return {};
    auto start = at + key.size();
    while (start < text.size() && (text[start] == ' ' || text[start] == '\t')) ++start;
    const auto end = text.find('\n', start);
    return std::string_view(text).substr(start, end == std::string::npos ? end : end - start);
  };
  auto num = [](std::string_view v, std::uint64_t* out) {
    std::from_chars(v.data(), v.data() + v.size(), *out);
  };
  num(value_of("\nvoluntary_ctxt_switches:"), &t->voluntary_switches);
  num(value_of("\nnonvoluntary_ctxt_switches:"), &t->nonvoluntary_switches);
  t->cpus_allowed = parse_cpu_list(std::string(value_of("\nCpus_allowed_list:")));
}

class LiveSource : public SystemSource {
 public:
  std::expected<Topology, std::string> topology() override {
    std::lock_guard lock(m_topology_mutex);
    if (!m_topology) {
      auto t = read_cpu_topology();  // a trial's probes need no I/O devices
      if (!t) return t;
      m_topology = std::move(*t);
    }
    return *m_topology;
  }

  std::vector<pid_t> process_tree(pid_t root) override {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d", root);
    if (::access(path, F_OK) != 0) return {};
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", root, root);
    if (::access(path, R_OK) == 0) return tree_by_children(root);
    return tree_by_scan(root);
  }

  std::optional<ProcessSample> read_process(pid_t pid, bool with_threads) override {
    return read(pid, with_threads, /*with_status=*/true);
  }

  std::optional<ProcessSample> read_process_threads(pid_t pid, bool with_status) override {
    return read(pid, /*with_threads=*/true, with_status);
  }

  std::optional<ProcessSample> read(pid_t pid, bool with_threads, bool with_status) {
    char path[96];
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    std::string text;
    StatFields f;
    if (!read_proc_file(path, &text) || !parse_stat(text, &f)) return std::nullopt;
    ProcessSample p;
    p.pid = pid;
    p.ppid = f.ppid;
    p.comm = std::move(f.comm);
    p.state = f.state;
    p.cpu_s = f.cpu_s;
    p.num_threads = f.num_threads;
    p.start_ticks = f.start_ticks;
    if (!with_threads) return p;
    std::snprintf(path, sizeof path, "/proc/%d/task", pid);
    for (pid_t tid : numeric_entries(path)) {
      ThreadSample t;
      t.tid = tid;
      std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
      StatFields tf;
      if (!read_proc_file(path, &text) || !parse_stat(text, &tf)) continue;  // thread exited
      t.comm = std::move(tf.comm);
      t.state = tf.state;
      t.processor = tf.processor;
      t.cpu_s = tf.cpu_s;
      std::snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
      if (read_proc_file(path, &text)) read_schedstat(text, &t);
      std::snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, tid);
      if (with_status && read_proc_file(path, &text)) {
        parse_status(text, &t);
        t.has_status = true;
      }
      p.threads.push_back(std::move(t));
    }
    return p;
  }

  std::optional<std::string> read_environ(pid_t pid, const std::string& name) override {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/environ", pid);
    std::string text;
    if (!read_proc_file(path, &text)) return std::nullopt;
    const std::string key = name + "=";
    std::size_t pos = 0;
    while (pos < text.size()) {
      const auto end = text.find('\0', pos);
      const std::string_view entry(text.data() + pos,
                                   (end == std::string::npos ? text.size() : end) - pos);
      if (entry.starts_with(key)) return std::string(entry.substr(key.size()));
      if (end == std::string::npos) break;
      pos = end + 1;
    }
    return std::nullopt;
  }

  double now_s() override {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }

 private:
  std::mutex m_topology_mutex;
  std::optional<Topology> m_topology;

  // Children of every thread (a child forked by a worker thread is listed under that thread).
  std::vector<pid_t> tree_by_children(pid_t root) {
    std::vector<pid_t> out;
    std::deque<pid_t> todo{root};
    char path[96];
    std::string text;
    while (!todo.empty() && out.size() < 100000) {
      const pid_t pid = todo.front();
      todo.pop_front();
      out.push_back(pid);
      std::snprintf(path, sizeof path, "/proc/%d/task", pid);
      for (pid_t tid : numeric_entries(path)) {
        std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, tid);
        if (!read_proc_file(path, &text)) continue;
        std::string_view rest(text);
        while (!rest.empty()) {
          const auto sp = rest.find(' ');
          pid_t child = 0;
          const auto tok = rest.substr(0, sp);
          if (std::from_chars(tok.data(), tok.data() + tok.size(), child).ec == std::errc() &&
              child > 0)
            todo.push_back(child);
          if (sp == std::string_view::npos) break;
          rest.remove_prefix(sp + 1);
        }
      }
    }
    return out;
  }

  // Without CONFIG_PROC_CHILDREN: one pass over /proc to learn every parent.
  std::vector<pid_t> tree_by_scan(pid_t root) {
    std::multimap<pid_t, pid_t> children;
    char path[64];
    std::string text;
    for (pid_t pid : numeric_entries("/proc")) {
      std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
      StatFields f;
      if (read_proc_file(path, &text) && parse_stat(text, &f)) children.emplace(f.ppid, pid);
    }
    std::vector<pid_t> out;
    std::deque<pid_t> todo{root};
    while (!todo.empty()) {
      const pid_t pid = todo.front();
      todo.pop_front();
      out.push_back(pid);
      auto [a, b] = children.equal_range(pid);
      for (auto it = a; it != b; ++it) todo.push_back(it->second);
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<SystemSource> make_live_source() { return std::make_unique<LiveSource>(); }

}  // namespace tune::probes
