#include "tests/common/fake_source.h"

#include <algorithm>
#include <deque>

namespace tune::probes {

std::vector<pid_t> FakeSource::process_tree(pid_t root) {
  std::vector<pid_t> out;
  if (!m_procs.contains(root)) return out;
  std::deque<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t pid = todo.front();
    todo.pop_front();
    out.push_back(pid);
    for (const auto& [child, proc] : m_procs)
      if (proc.sample.ppid == pid && child != pid) todo.push_back(child);
  }
  return out;
}

std::optional<ProcessSample> FakeSource::read_process_threads(pid_t pid, bool with_status) {
  auto p = read_process(pid, /*with_threads=*/true);
  if (p && !with_status) --m_status_reads;
  if (p && !with_status) {
    for (ThreadSample& t : p->threads) {
      t.has_status = false;
      t.voluntary_switches = t.nonvoluntary_switches = 0;
      t.cpus_allowed.clear();
    }
  }
  return p;
}

std::optional<ProcessSample> FakeSource::read_process(pid_t pid, bool with_threads) {
  ++m_reads;
  auto it = m_procs.find(pid);
  if (it == m_procs.end()) return std::nullopt;
  if (with_threads) ++m_status_reads;
  ProcessSample p = it->second.sample;
  p.cpu_s = it->second.dead_threads_cpu_s;
  for (const ThreadSample& t : p.threads) p.cpu_s += t.cpu_s;
  p.num_threads = static_cast<int>(p.threads.size());
  if (!with_threads) p.threads.clear();
  return p;
}

std::optional<std::string> FakeSource::read_environ(pid_t pid, const std::string& name) {
  auto it = m_procs.find(pid);
  if (it == m_procs.end()) return std::nullopt;
  auto e = it->second.environ.find(name);
  if (e == it->second.environ.end()) return std::nullopt;
  return e->second;
}

void FakeSource::add_process(pid_t pid, pid_t ppid, std::string comm, std::vector<int> cpus_allowed,
                             std::map<std::string, std::string> environ) {
  Proc p;
  p.sample.pid = pid;
  p.sample.ppid = ppid;
  p.sample.comm = std::move(comm);
  p.sample.state = 'S';
  p.sample.start_ticks = static_cast<std::uint64_t>(m_now * 100);
  p.environ = std::move(environ);
  ThreadSample main;
  main.tid = pid;
  main.comm = p.sample.comm;
  main.has_status = true;
  main.state = 'S';
  main.cpus_allowed = std::move(cpus_allowed);
  p.sample.threads.push_back(std::move(main));
  m_procs[pid] = std::move(p);
}

void FakeSource::add_thread(pid_t pid, pid_t tid, std::vector<int> cpus_allowed) {
  Proc& p = m_procs.at(pid);
  ThreadSample t;
  t.tid = tid;
  t.comm = p.sample.comm;
  t.has_status = true;
  t.state = 'S';
  t.cpus_allowed = cpus_allowed.empty() ? p.sample.threads.front().cpus_allowed : cpus_allowed;
  p.sample.threads.push_back(std::move(t));
}

void FakeSource::remove_process(pid_t pid) { m_procs.erase(pid); }

void FakeSource::set_thread_name(pid_t tid, std::string comm) {
  if (Proc* p = owner_of(tid))
    for (ThreadSample& t : p->sample.threads)
      if (t.tid == tid) t.comm = comm;
}

void FakeSource::remove_thread(pid_t pid, pid_t tid) {
  Proc& p = m_procs.at(pid);
  auto& ts = p.sample.threads;
  for (auto it = ts.begin(); it != ts.end(); ++it) {
    if (it->tid == tid) {
      p.dead_threads_cpu_s += it->cpu_s;
      ts.erase(it);
      return;
    }
  }
}

FakeSource::Proc* FakeSource::owner_of(pid_t tid) {
  for (auto& [pid, proc] : m_procs)
    for (const ThreadSample& t : proc.sample.threads)
      if (t.tid == tid) return &proc;
  return nullptr;
}

void FakeSource::run_thread(pid_t tid, double cpu_s, char state, int processor,
                            std::uint64_t nonvoluntary, std::uint64_t voluntary) {
  Proc* p = owner_of(tid);
  if (p == nullptr) return;
  for (ThreadSample& t : p->sample.threads) {
    if (t.tid != tid) continue;
    t.cpu_s += cpu_s;
    t.state = state;
    t.processor = processor;
    t.nonvoluntary_switches += nonvoluntary;
    t.voluntary_switches += voluntary;
  }
}

void FakeSource::wait_thread(pid_t tid, double wait_s) {
  Proc* p = owner_of(tid);
  if (p == nullptr) return;
  for (ThreadSample& t : p->sample.threads) {
    if (t.tid != tid) continue;
    t.has_wait = true;
    t.wait_s += wait_s;
  }
}

}  // namespace tune::probes
