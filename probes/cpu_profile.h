// Where a process's CPU time goes, by library: instruction pointers sampled per CPU
// (perf_event_open) and attributed to the mapping of /proc/PID/maps that holds them.
// Needs perf_event_paranoid <= 0 or CAP_PERFMON. A CpuProfile is used by one thread at a time.
// Design: docs/design-notes.md#probescpu_profileh
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune::probes {

// One executable mapping of a process: [start, end) and the library it names.
struct CodeMapping {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::string library;
};

// The name a mapping's path gives its library: the file's base name without its version suffix
// ("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0" -> "libgomp", "libopenblasp-r0.3.21.so" ->
// "libopenblas", "/usr/bin/python3.11" -> "python3.11", "_multiarray_umath.cpython-311-x86_64-
// linux-gnu.so" -> "_multiarray_umath"); "[anon]" for anonymous or JIT code (no path, "[heap]",
// memfd), "[vdso]" as is.
std::string library_name(std::string_view path);

// The executable mappings of /proc/PID/maps's text, sorted by address.
std::vector<CodeMapping> parse_code_mappings(std::string_view maps_text);

// The library whose mapping holds `ip`, or nullptr.
const CodeMapping* mapping_of(const std::vector<CodeMapping>& mappings, std::uint64_t ip);

struct IpSample {
  pid_t pid = 0;
  pid_t tid = 0;
  std::uint64_t ip = 0;
};

// Samples per library; an IP outside every known mapping counts as "[unknown]".
std::map<std::string, long> attribute_samples(
    const std::vector<IpSample>& samples, const std::map<pid_t, std::vector<CodeMapping>>& maps);

struct LibraryShare {
  std::string library;
  double share = 0;  // of the samples, 0..1
  long samples = 0;
};

// The `top` libraries with the most samples, largest first, then "other" for the rest (when any).
std::vector<LibraryShare> top_shares(const std::map<std::string, long>& counts,
                                     std::size_t top = 4);

// "71% libopenblas, 12% libgomp, 9% python3.11, 5% libmpi".
std::string shares_text(const std::vector<LibraryShare>& shares);

class CpuProfile {
 public:
  struct Options {
    double frequency_hz = 99;       // samples per second of CPU time, per thread
    std::size_t max_events = 1024;  // CPUs sampled at most (one fd and ring buffer each)
    std::size_t ring_pages = 4;     // data pages per ring buffer (a power of two): 680 samples
  };
  CpuProfile();
  explicit CpuProfile(Options options);
  ~CpuProfile();
  CpuProfile(const CpuProfile&) = delete;
  CpuProfile& operator=(const CpuProfile&) = delete;

  // Who a caller believes a pid is, as /proc/PID/stat gives it: a pid that names another
  // process now (reused), or a test's invented one, is not sampled.
  struct ProcessId {
    std::uint64_t start_ticks = 0;
    std::string comm;
  };
  // Counts thread `tid` of process `pid` (and, until they are added, the process's other threads)
  // for `owner` (a rank's pid; 0: `pid`); the first call opens the CPUs' events. A thread
  // already added is left as is. False when not sampled (refused, not `expected`).
  bool add_thread(pid_t pid, pid_t tid, pid_t owner = 0, const ProcessId* expected = nullptr);
  // The samples since the last drain, per owner and library.
  std::map<pid_t, std::map<std::string, long>> drain();
  // Forgets the threads not in `alive` (exited: drain first, for their last samples).
  void retain(const std::set<pid_t>& alive);
  void close();  // every fd and ring buffer; idempotent

  std::size_t open_events() const { return m_events.size(); }  // CPUs sampled
  std::size_t threads() const { return m_threads.size(); }
  bool refused() const { return m_refused; }  // perf_event_open was not permitted: nothing sampled
  bool limit_hit() const { return m_limit_hit; }
  long lost() const { return m_lost; }  // samples the kernel dropped (a ring buffer was full)
  // "" or one line: why nothing (or not everything) was sampled.
  std::string note() const;

 private:
  struct Event;
  struct Thread {
    pid_t pid = 0;
    pid_t owner = 0;
  };
  bool open_cpus();  // once: false when refused or none opened
  std::vector<IpSample> read_ring(Event& e);
  void read_maps(pid_t pid);

  Options m_options;
  bool m_opened = false;
  std::size_t m_cpu_count = 0;
  std::vector<std::unique_ptr<Event>> m_events;      // one per CPU
  std::map<pid_t, Thread> m_threads;                 // by tid
  std::map<pid_t, std::vector<CodeMapping>> m_maps;  // by pid
  std::map<pid_t, bool> m_pid_ok;                    // identity checked: sample or not
  bool m_refused = false;
  bool m_limit_hit = false;
  long m_lost = 0;
  std::string m_problem;
};

// What a verdict says of its CPU time per library (written by Verdict::to_json): per rank its
// line, and the verdict's note (not sampled and why, the bound hit).
struct CpuTimeRead {
  struct Rank {
    int rank = 0;
    long samples = 0;
    std::vector<LibraryShare> shares;
  };
  bool present = false;  // the verdict has a "cpu_time" (schema 3 and later, the option on)
  std::vector<Rank> ranks;
  std::string note;
  // "CPU time per library: rank 0: 71% libopenblas, 12% libgomp; rank 1: ..." (the note after),
  // or "CPU time per library: not sampled (...)"; "" when the verdict says nothing of it (schema
  // 2 and older).
  std::string line() const;
};
CpuTimeRead read_cpu_time(const nlohmann::json& verdict);

}  // namespace tune::probes
