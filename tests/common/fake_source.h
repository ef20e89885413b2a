// An invented machine and process table for tests (a test double: built into the tests only,
// never into tune::probes): set the topology, add processes and threads,
// advance the clock and the counters, then drive TrialMonitor::sample_once() directly (no sleeps).
//
// Not thread-safe: mutate it only while no monitor thread samples it.
#pragma once

#include <map>

#include "probes/system_source.h"

namespace tune::probes {

class FakeSource : public SystemSource {
 public:
  explicit FakeSource(Topology topo) : m_topology(std::move(topo)) {}

  std::expected<Topology, std::string> topology() override { return m_topology; }
  std::vector<pid_t> process_tree(pid_t root) override;
  std::optional<ProcessSample> read_process(pid_t pid, bool with_threads) override;
  std::optional<ProcessSample> read_process_threads(pid_t pid, bool with_status) override;
  std::optional<std::string> read_environ(pid_t pid, const std::string& name) override;
  double now_s() override { return m_now; }

  // Building the scene. A process is created with its main thread (tid == pid).
  void add_process(pid_t pid, pid_t ppid, std::string comm, std::vector<int> cpus_allowed,
                   std::map<std::string, std::string> environ = {});
  void add_thread(pid_t pid, pid_t tid, std::vector<int> cpus_allowed = {});  // {} = process's
  void remove_process(pid_t pid);
  void set_environ(pid_t pid, std::map<std::string, std::string> environ) {
    m_procs.at(pid).environ = std::move(environ);
  }
  void remove_thread(pid_t pid, pid_t tid);
  void set_thread_name(pid_t tid, std::string comm);
  // Moving time: each call adds to a thread's counters; state/processor are what the next read
  // shows.
  void run_thread(pid_t tid, double cpu_s, char state, int processor,
                  std::uint64_t nonvoluntary = 0, std::uint64_t voluntary = 0);
  // Adds run-queue delay (schedstat); a thread given none reads as a kernel without schedstat.
  void wait_thread(pid_t tid, double wait_s);
  void advance(double seconds) { m_now += seconds; }

  int reads() const { return m_reads; }
  int status_reads() const { return m_status_reads; }  // process reads that included status

 private:
  struct Proc {
    ProcessSample sample;
    std::map<std::string, std::string> environ;
    double dead_threads_cpu_s = 0;  // the kernel keeps exited threads' time in the process's
  };
  Proc* owner_of(pid_t tid);

  Topology m_topology;
  std::map<pid_t, Proc> m_procs;
  double m_now = 1000.0;
  int m_reads = 0;
  int m_status_reads = 0;
};

}  // namespace tune::probes
