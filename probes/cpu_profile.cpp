#include "probes/cpu_profile.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tune::probes {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether /proc/PID/stat names the process `expected` describes (its comm and starttime).
bool is_process(pid_t pid, const CpuProfile::ProcessId& expected) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto open = stat.find('(');
  const auto close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  if (stat.substr(open + 1, close - open - 1) != expected.comm) return false;
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && in >> field; ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10) == expected.start_ticks;
  return false;
}

std::string paranoid_level() {
  std::string text = read_text("/proc/sys/kernel/perf_event_paranoid");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// A name's trailing version ("-r0.3.21", "-2.3"; "python3.11" and "ld-linux-x86-64" are names).
std::string without_dash_version(std::string name) {
  const auto dash = name.rfind('-');
  if (dash != std::string::npos && dash + 1 < name.size() &&
      name.find('.', dash) != std::string::npos) {
    std::size_t i = dash + 1;
    if (name[i] == 'r' || name[i] == 'v') ++i;
    if (i < name.size() && is_digit(name[i]) &&
        std::all_of(name.begin() + static_cast<long>(i), name.end(),
                    [](char c) { return is_digit(c) || c == '.'; }))
      name.erase(dash);
  }
  return name;
}

}  // namespace

std::string library_name(std::string_view path) {
  std::string p(path);
  if (const auto deleted = p.find(" (deleted)"); deleted != std::string::npos) p.erase(deleted);
  if (p == "[vdso]" || p == "[vsyscall]") return "[vdso]";
  if (p.empty() || p.front() == '[' || p.starts_with("/memfd:") || p.starts_with("/dev/zero"))
    return "[anon]";
  std::string name = p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
  // "libgomp.so.1.0.0", "libfoo.so": what precedes ".so" that ends the name or a version.
  for (std::size_t at = name.find(".so"); at != std::string::npos; at = name.find(".so", at + 1)) {
    if (at + 3 == name.size() || name[at + 3] == '.') {
      name.erase(at);
      break;
    }
  }
  // A Python extension: "_multiarray_umath.cpython-311-x86_64-linux-gnu" -> "_multiarray_umath".
  for (const char* tag : {".cpython-", ".abi3", ".pypy"})
    if (const auto at = name.find(tag); at != std::string::npos && at > 0) name.erase(at);
  name = without_dash_version(name);
  // OpenBLAS's builds: libopenblasp (pthreads), libopenblaso (OpenMP), libopenblas64_.
  if (name.starts_with("libopenblas")) return "libopenblas";
  return name.empty() ? "[anon]" : name;
}

std::vector<CodeMapping> parse_code_mappings(std::string_view maps_text) {
  std::vector<CodeMapping> out;
  std::size_t pos = 0;
  while (pos < maps_text.size()) {
    auto eol = maps_text.find('\n', pos);
    if (eol == std::string_view::npos) eol = maps_text.size();
    const std::string line(maps_text.substr(pos, eol - pos));
    pos = eol + 1;
    // "7f1c2a000000-7f1c2a200000 r-xp 00000000 08:01 1234   /usr/lib/libgomp.so.1.0.0"
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode;
    if (!(in >> range >> perms >> offset >> dev >> inode)) continue;
    if (perms.size() < 3 || perms[2] != 'x') continue;
    const auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    std::string path;
    std::getline(in >> std::ws, path);
    CodeMapping m;
    m.start = std::strtoull(range.substr(0, dash).c_str(), nullptr, 16);
    m.end = std::strtoull(range.substr(dash + 1).c_str(), nullptr, 16);
    m.library = library_name(path);
    if (m.end > m.start) out.push_back(std::move(m));
  }
  std::ranges::sort(out, {}, &CodeMapping::start);
  return out;
}

const CodeMapping* mapping_of(const std::vector<CodeMapping>& mappings, std::uint64_t ip) {
  auto it = std::upper_bound(mappings.begin(), mappings.end(), ip,
                             [](std::uint64_t x, const CodeMapping& m) { return x < m.start; });
  if (it == mappings.begin()) return nullptr;
  --it;
  return ip < it->end ? &*it : nullptr;
}

std::map<std::string, long> attribute_samples(
    const std::vector<IpSample>& samples, const std::map<pid_t, std::vector<CodeMapping>>& maps) {
  std::map<std::string, long> counts;
  for (const IpSample& s : samples) {
    const CodeMapping* m = nullptr;
    if (const auto it = maps.find(s.pid); it != maps.end()) m = mapping_of(it->second, s.ip);
    counts[m != nullptr ? m->library : "[unknown]"] += 1;
  }
  return counts;
}

std::vector<LibraryShare> top_shares(const std::map<std::string, long>& counts, std::size_t top) {
  long total = 0;
  std::vector<LibraryShare> all;
  for (const auto& [library, n] : counts) {
    if (n <= 0) continue;
    total += n;
    all.push_back({library, 0, n});
  }
  std::ranges::stable_sort(
      all, [](const LibraryShare& a, const LibraryShare& b) { return a.samples > b.samples; });
  std::vector<LibraryShare> out;
  long rest = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    // The last place goes to the library itself when it is the only one left over.
    if (i < top || (i == top && all.size() == top + 1))
      out.push_back(all[i]);
    else
      rest += all[i].samples;
  }
  if (rest > 0) out.push_back({"other", 0, rest});
  for (LibraryShare& s : out) s.share = static_cast<double>(s.samples) / static_cast<double>(total);
  return out;
}

std::string shares_text(const std::vector<LibraryShare>& shares) {
  std::string out;
  for (const LibraryShare& s : shares) {
    if (!out.empty()) out += ", ";
    out += std::to_string(std::lround(100 * s.share)) + "% " + s.library;
  }
  return out;
}

// One CPU's event: its fd and ring buffer (one metadata page, then the data pages).
struct CpuProfile::Event {
  int fd = -1;
  void* ring = MAP_FAILED;
  std::size_t ring_size = 0;
  ~Event() {
    if (ring != MAP_FAILED) ::munmap(ring, ring_size);
    if (fd >= 0) ::close(fd);
  }
};

namespace {

// The online CPUs, from /sys ("0-3,8-11"); every CPU sysconf counts where it cannot be read.
std::vector<int> online_cpus() {
  std::vector<int> out;
  std::string text = read_text("/sys/devices/system/cpu/online");
  std::stringstream in(text);
  std::string range;
  while (std::getline(in, range, ',')) {
    int first = -1, last = -1;
    if (std::sscanf(range.c_str(), "%d-%d", &first, &last) == 2 && first >= 0 && last >= first)
      for (int c = first; c <= last; ++c) out.push_back(c);
    else if (std::sscanf(range.c_str(), "%d", &first) == 1 && first >= 0)
      out.push_back(first);
  }
  if (out.empty())
    for (long c = 0; c < ::sysconf(_SC_NPROCESSORS_ONLN); ++c) out.push_back(static_cast<int>(c));
  return out;
}

}  // namespace

CpuProfile::CpuProfile() : CpuProfile(Options{}) {}
CpuProfile::CpuProfile(Options options) : m_options(options) {}
CpuProfile::~CpuProfile() { close(); }

void CpuProfile::close() {
  m_events.clear();
  m_threads.clear();
  m_maps.clear();
  m_pid_ok.clear();
  m_opened = false;
}

bool CpuProfile::open_cpus() {
  if (m_opened) return !m_events.empty();
  m_opened = true;
  const std::vector<int> cpus = online_cpus();
  m_cpu_count = cpus.size();
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = static_cast<std::uint64_t>(std::max(1.0, std::round(m_options.frequency_hz)));
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.disabled = 1;
  attr.wakeup_events = 1 << 30;  // read at each monitor sample, never woken
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (int cpu : cpus) {
    if (m_events.size() >= m_options.max_events) {
      m_limit_hit = true;
      break;
    }
    const int fd =
        static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      const int err = errno;
      if (err == EACCES || err == EPERM || err == ENOSYS || err == ENOENT || err == EOPNOTSUPP) {
        m_refused = true;
        m_problem = std::string("perf_event_open on a CPU: ") + std::strerror(err);
        const std::string level = paranoid_level();
        if (!level.empty())
          m_problem += "; /proc/sys/kernel/perf_event_paranoid is " + level +
                       ", per-CPU sampling needs 0 or less, or CAP_PERFMON";
        m_events.clear();
        return false;
      }
      m_limit_hit = true;  // EMFILE, ENFILE, ENODEV (a CPU gone offline): the rest not sampled
      m_problem = std::string("perf_event_open: ") + std::strerror(err);
      break;
    }
    auto e = std::make_unique<Event>();
    e->fd = fd;
    e->ring_size = page * (1 + std::max<std::size_t>(1, m_options.ring_pages));
    e->ring = ::mmap(nullptr, e->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (e->ring == MAP_FAILED) {
      // Past the locked memory a user's events may map (perf_event_mlock_kb): as at the bound.
      m_limit_hit = true;
      m_problem = std::string("mmap of a perf ring buffer: ") + std::strerror(errno);
      break;
    }
    m_events.push_back(std::move(e));
  }
  for (auto& e : m_events) ::ioctl(e->fd, PERF_EVENT_IOC_ENABLE, 0);
  return !m_events.empty();
}

bool CpuProfile::add_thread(pid_t pid, pid_t tid, pid_t owner, const ProcessId* expected) {
  if (m_refused) return false;
  if (m_threads.contains(tid)) return true;
  auto ok = m_pid_ok.find(pid);
  if (ok == m_pid_ok.end()) {
    const bool same = expected == nullptr || is_process(pid, *expected);
    ok = m_pid_ok.emplace(pid, same).first;
    if (same) read_maps(pid);
  }
  if (!ok->second) return false;
  if (!open_cpus()) return false;
  m_threads[tid] = {pid, owner != 0 ? owner : pid};
  return true;
}

void CpuProfile::read_maps(pid_t pid) {
  const std::string text = read_text("/proc/" + std::to_string(pid) + "/maps");
  if (!text.empty()) m_maps[pid] = parse_code_mappings(text);
}

std::vector<IpSample> CpuProfile::read_ring(Event& e) {
  std::vector<IpSample> out;
  auto* meta = static_cast<perf_event_mmap_page*>(e.ring);
  const auto* data = static_cast<const unsigned char*>(e.ring) + meta->data_offset;
  const std::uint64_t size = meta->data_size;
  const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  std::uint64_t tail = meta->data_tail;
  // Copies [at, at + n) of the ring, wrapping at its end.
  auto copy = [&](std::uint64_t at, void* to, std::size_t n) {
    const std::uint64_t off = at % size;
    const std::size_t first = static_cast<std::size_t>(std::min<std::uint64_t>(n, size - off));
    std::memcpy(to, data + off, first);
    if (first < n) std::memcpy(static_cast<unsigned char*>(to) + first, data, n - first);
  };
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header h{};
    copy(tail, &h, sizeof(h));
    if (h.size < sizeof(h) || tail + h.size > head) break;
    if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 16) {
      struct {
        std::uint64_t ip;
        std::uint32_t pid, tid;
      } body{};
      copy(tail + sizeof(h), &body, sizeof(body));
      out.push_back({static_cast<pid_t>(body.pid), static_cast<pid_t>(body.tid), body.ip});
    } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
      std::uint64_t lost[2] = {0, 0};  // id, lost
      copy(tail + sizeof(h), lost, sizeof(lost));
      m_lost += static_cast<long>(lost[1]);
    }
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  return out;
}

std::map<pid_t, std::map<std::string, long>> CpuProfile::drain() {
  std::map<pid_t, std::map<std::string, long>> out;
  std::map<pid_t, pid_t> process_owner;  // a known process's threads not yet added count too
  for (const auto& [tid, t] : m_threads) process_owner.emplace(t.pid, t.owner);
  std::set<pid_t> reread;  // a process's maps are read again at most once per drain
  for (auto& e : m_events) {
    for (const IpSample& s : read_ring(*e)) {
      // Every process on the CPU is sampled: only the threads of the processes added count.
      pid_t pid = 0, owner = 0;
      if (const auto t = m_threads.find(s.tid); t != m_threads.end()) {
        pid = t->second.pid;
        owner = t->second.owner;
      } else if (const auto p = process_owner.find(s.pid); p != process_owner.end()) {
        pid = s.pid;
        owner = p->second;
      } else {
        continue;
      }
      const auto maps = m_maps.find(pid);
      const CodeMapping* m = maps != m_maps.end() ? mapping_of(maps->second, s.ip) : nullptr;
      // Code mapped since the maps were read (a dlopen'ed library, a JIT's new pages).
      if (m == nullptr && reread.insert(pid).second) {
        read_maps(pid);
        if (const auto again = m_maps.find(pid); again != m_maps.end())
          m = mapping_of(again->second, s.ip);
      }
      out[owner][m != nullptr ? m->library : "[unknown]"] += 1;
    }
  }
  return out;
}

void CpuProfile::retain(const std::set<pid_t>& alive) {
  std::erase_if(m_threads, [&](const auto& kv) { return !alive.contains(kv.first); });
  std::set<pid_t> pids;
  for (const auto& [tid, t] : m_threads) pids.insert(t.pid);
  std::erase_if(m_maps, [&](const auto& kv) { return !pids.contains(kv.first); });
  std::erase_if(m_pid_ok, [&](const auto& kv) { return !pids.contains(kv.first) && kv.second; });
}

std::string CpuProfile::note() const {
  if (m_refused) return "not sampled (" + m_problem + ")";
  std::string out;
  if (m_limit_hit)
    out = "sampled " + std::to_string(m_events.size()) + " of " + std::to_string(m_cpu_count) +
          " CPUs, the rest not" + (m_problem.empty() ? "" : " (" + m_problem + ")");
  if (m_lost > 0)
    out += (out.empty() ? "" : "; ") + std::to_string(m_lost) + " samples lost (ring full)";
  return out;
}

CpuTimeRead read_cpu_time(const nlohmann::json& verdict) {
  CpuTimeRead out;
  if (!verdict.is_object()) return out;
  const auto profile = verdict.find("cpu_time");
  if (profile == verdict.end() || !profile->is_object()) return out;
  out.present = true;
  out.note = profile->value("note", std::string());
  if (const auto ranks = verdict.find("ranks"); ranks != verdict.end() && ranks->is_array()) {
    for (const auto& r : *ranks) {
      if (!r.is_object() || !r.contains("cpu_libraries")) continue;
      CpuTimeRead::Rank rank;
      rank.rank = r.value("rank", 0);
      rank.samples = r.value("cpu_samples", 0L);
      for (const auto& s : r["cpu_libraries"])
        if (s.is_object())
          rank.shares.push_back(
              {s.value("library", std::string()), s.value("share", 0.0), s.value("samples", 0L)});
      out.ranks.push_back(std::move(rank));
    }
  }
  return out;
}

std::string CpuTimeRead::line() const {
  if (!present) return "";
  std::string out = "CPU time per library:";
  bool any = false;
  for (const Rank& r : ranks) {
    if (r.shares.empty()) continue;
    out += std::string(any ? ";" : "") + " rank " + std::to_string(r.rank) + ": " +
           shares_text(r.shares);
    any = true;
  }
  if (!note.empty()) return out + (any ? " (" + note + ")" : " " + note);
  return any ? out : out + " no samples";
}

}  // namespace tune::probes
