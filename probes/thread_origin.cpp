#include "probes/thread_origin.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <string_view>

namespace tune::probes {

namespace {

constexpr long k_max_origin_bytes = 1 << 20;

struct OriginRule {
  std::string_view needle;  // found in the origin (library file name or symbol)
  GroupId group;
  std::string_view pool;
};

// First match wins: symbols before their library (gloo's threads start in libtorch_cpu too).
constexpr std::array k_rules = {
    OriginRule{"gloo", GroupId::runtime, "gloo"},
    OriginRule{"ProcessGroup", GroupId::runtime, "torch.distributed"},
    OriginRule{"c10d", GroupId::runtime, "torch.distributed"},
    OriginRule{"libnccl", GroupId::runtime, "NCCL"},
    OriginRule{"libcuda", GroupId::runtime, "CUDA"},
    OriginRule{"libmpi", GroupId::runtime, "MPI"},
    OriginRule{"libopen-pal", GroupId::runtime, "Open MPI"},
    OriginRule{"libopen-rte", GroupId::runtime, "Open MPI"},
    OriginRule{"libpmix", GroupId::runtime, "PMIx"},
    OriginRule{"libevent", GroupId::runtime, "Open MPI"},
    OriginRule{"libuc", GroupId::runtime, "UCX"},  // libucs, libucp, libuct
    OriginRule{"libfabric", GroupId::runtime, "libfabric"},
    OriginRule{"libpsm", GroupId::runtime, "PSM"},
    OriginRule{"libibverbs", GroupId::runtime, "verbs"},
    OriginRule{"librdmacm", GroupId::runtime, "verbs"},
    OriginRule{"libhwloc", GroupId::runtime, "hwloc"},
    OriginRule{"libgomp", GroupId::openmp, "OpenMP"},
    OriginRule{"libiomp", GroupId::openmp, "OpenMP"},
    OriginRule{"libomp", GroupId::openmp, "OpenMP"},
    // torch's NNPACK/XNNPACK pool, sized with its intra-op pool (torch.set_num_threads).
    OriginRule{"libpthreadpool", GroupId::openmp, "torch intra-op"},
    OriginRule{"libopenblas", GroupId::blas, "BLAS"},
    OriginRule{"libblas", GroupId::blas, "BLAS"},
    OriginRule{"libcblas", GroupId::blas, "BLAS"},
    OriginRule{"libmkl", GroupId::blas, "BLAS"},
    OriginRule{"libblis", GroupId::blas, "BLAS"},
    OriginRule{"libtbb", GroupId::opencv, "TBB (OpenCV)"},
    OriginRule{"libopencv", GroupId::opencv, "OpenCV"},
    OriginRule{"libtorch", GroupId::other, "torch inter-op"},
    OriginRule{"libc10", GroupId::other, "torch inter-op"},
    OriginRule{"python", GroupId::other, "Python threads"},
    OriginRule{"libpython", GroupId::other, "Python threads"},
};

}  // namespace

OriginClass classify_origin(const std::string& origin) {
  for (const OriginRule& rule : k_rules)
    if (origin.find(rule.needle) != std::string::npos) return {rule.group, std::string(rule.pool)};
  const auto colon = origin.find(':');
  return {GroupId::other, origin.substr(0, colon)};
}

std::optional<std::string> ThreadOrigins::origin(pid_t pid, pid_t tid) {
  if (!enabled()) return std::nullopt;
  auto it = m_origins.find(tid);
  if (it == m_origins.end() || it->second.pid != pid) {
    if (!m_read_this_sample.insert(pid).second) return std::nullopt;
    read_more(pid);
    it = m_origins.find(tid);
    if (it == m_origins.end() || it->second.pid != pid) return std::nullopt;
  }
  return it->second.origin;
}

void ThreadOrigins::read_more(pid_t pid) {
  const std::string path = m_dir + "/" + std::to_string(pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  FileState& file = m_files[pid];
  std::array<char, 8192> buf{};
  // The file is the trial's to write: a process that writes more than any pool could start
  // (a line per thread) is read no further, and its threads go by name.
  while (file.offset < k_max_origin_bytes) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), file.offset);
    if (n <= 0) break;
    file.offset += n;
    file.partial.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  std::size_t start = 0;
  for (std::size_t nl; (nl = file.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string_view line(file.partial.data() + start, nl - start);
    const auto space = line.find(' ');
    if (space == std::string_view::npos) continue;
    pid_t tid = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + space, tid);
    if (ec != std::errc() || end != line.data() + space) continue;
    m_origins[tid] = Known{pid, std::string(line.substr(space + 1))};
  }
  file.partial.erase(0, start);
}

}  // namespace tune::probes
