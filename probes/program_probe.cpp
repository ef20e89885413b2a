#include "probes/program_probe.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>
#include <set>
#include <sstream>
#include <utility>

#include "probes/proc_files.h"

namespace tune::probes {
namespace {

// The whole file, or "" when it cannot be read.
std::string read_text(const std::string& path) {
  std::string text;
  return read_proc_file(path.c_str(), &text) ? text : std::string();
}

std::string read_link(const std::string& path) {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string();
}

std::string chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool starts(const std::string& s, const char* prefix) { return s.starts_with(prefix); }

}  // namespace

std::vector<std::string> parse_maps_libraries(const std::string& maps_text) {
  // "start-end perms offset dev inode          /path/to/file"
  std::set<std::string> out;
  std::istringstream lines(maps_text);
  for (std::string line; std::getline(lines, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);
    const std::string name = path.substr(path.rfind('/') + 1);
    if (name.find(".so") == std::string::npos) continue;
    out.insert(path);
  }
  return {out.begin(), out.end()};
}

long parse_syscall_number(const std::string& text) {
  long nr = -1;
  const auto* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, nr);
  if (ec != std::errc() || p == text.data()) return -1;
  return nr;
}

int parse_fdinfo_flags(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("flags:")) continue;
    std::string value = line.substr(6);
    value.erase(0, value.find_first_not_of(" \t"));
    int flags = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), flags, 8);
    if (ec == std::errc() && p != value.data()) return flags;
  }
  return -1;
}

bool is_event_wait_syscall(long nr) {
  static const std::set<long> k_waits = {
#ifdef SYS_poll
      SYS_poll,
#endif
#ifdef SYS_select
      SYS_select,
#endif
#ifdef SYS_epoll_wait
      SYS_epoll_wait,
#endif
#ifdef SYS_epoll_pwait
      SYS_epoll_pwait,
#endif
#ifdef SYS_epoll_pwait2
      SYS_epoll_pwait2,
#endif
#ifdef SYS_ppoll
      SYS_ppoll,
#endif
#ifdef SYS_pselect6
      SYS_pselect6,
#endif
  };
  return nr >= 0 && k_waits.contains(nr);
}

bool is_runtime_thread_name(const std::string& comm) {
  const std::string c = lower(comm);
  return starts(c, "cuda") || starts(c, "nccl") || c.contains("async") || c.contains("progress") ||
         c.contains("event") || starts(c, "pmix");
}

std::optional<ProcessView> read_process_view(pid_t pid, const std::string& proc_root,
                                             bool with_libraries) {
  const std::string base = proc_root + "/" + std::to_string(pid);
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0) return std::nullopt;
  ProcessView view;
  view.pid = pid;
  view.comm = chomp(read_text(base + "/comm"));
  view.cwd = read_link(base + "/cwd");
  if (with_libraries) view.libraries = parse_maps_libraries(read_text(base + "/maps"));
  for (const pid_t tid_number : numeric_entries((base + "/task").c_str())) {
    const std::string tid = std::to_string(tid_number);
    ProcessView::Thread t;
    std::from_chars(tid.data(), tid.data() + tid.size(), t.tid);
    t.comm = chomp(read_text(base + "/task/" + tid + "/comm"));
    t.syscall = parse_syscall_number(read_text(base + "/task/" + tid + "/syscall"));
    view.threads.push_back(std::move(t));
  }
  std::sort(view.threads.begin(), view.threads.end(),
            [](const auto& a, const auto& b) { return a.tid < b.tid; });
  for (const pid_t fd_number : numeric_entries((base + "/fd").c_str())) {
    const std::string fd = std::to_string(fd_number);
    const std::string target = read_link(base + "/fd/" + fd);
    if (!target.starts_with("/") || target.starts_with("/proc/") || target.starts_with("/dev/") ||
        target.starts_with("/sys/") || target.ends_with(" (deleted)"))
      continue;
    struct stat fst {};
    if (::stat((base + "/fd/" + fd).c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
    const int flags = parse_fdinfo_flags(read_text(base + "/fdinfo/" + fd));
    const int mode = flags < 0 ? O_RDONLY : (flags & O_ACCMODE);
    view.files.push_back({target, mode == O_WRONLY || mode == O_RDWR});
  }
  return view;
}

std::optional<LibraryFinding> classify_library(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string name = lower(slash == std::string::npos ? path : path.substr(slash + 1));
  const std::string dir = lower(slash == std::string::npos ? "" : path.substr(0, slash));
  LibraryFinding f;
  f.path = path;
  auto with = [&](std::string what, std::string category, std::vector<std::string> pools,
                  std::string program = "", std::string note = "") {
    f.what = std::move(what);
    f.category = std::move(category);
    f.pools = std::move(pools);
    f.program = std::move(program);
    f.note = std::move(note);
    return std::optional<LibraryFinding>(f);
  };
  // OpenMP runtimes.
  // Each its program tag: its own variables (GOMP_SPINCOUNT, KMP_BLOCKTIME) apply only there.
  if (starts(name, "libgomp.so"))
    return with("libgomp (GNU OpenMP)", "openmp", {"openmp"}, "libgomp");
  if (starts(name, "libiomp5"))
    return with("libiomp5 (Intel OpenMP)", "openmp", {"openmp"}, "libomp");
  if (starts(name, "libomp.so"))
    return with("libomp (LLVM OpenMP)", "openmp", {"openmp"}, "libomp");
  // BLAS. Debian installs each build in its own folder (openblas-pthread, openblas-openmp,
  // openblas-serial, blis-pthread, ...) behind the libblas.so.3 alternatives link; upstream
  // names the builds libopenblasp (pthreads) and libopenblaso (OpenMP).
  const bool openblas_dir = dir.contains("openblas");
  const bool blas_name = starts(name, "libblas.so") || starts(name, "libcblas.so") ||
                         starts(name, "liblapack.so") || starts(name, "libopenblas");
  if (openblas_dir || starts(name, "libopenblas")) {
    if (!blas_name) return std::nullopt;
    if (dir.contains("openblas-openmp") || starts(name, "libopenblaso"))
      return with("OpenBLAS (OpenMP build)", "blas", {"openmp"}, "",
                  "its threads are the OpenMP team (OMP_NUM_THREADS)");
    if (dir.contains("openblas-serial"))
      return with("OpenBLAS (serial build)", "blas", {}, "", "single-threaded: no pool");
    return with("OpenBLAS (pthreads)", "blas", {"blas"});
  }
  if (dir.contains("blis") || starts(name, "libblis")) {
    if (dir.contains("openmp"))
      return with("BLIS (OpenMP build)", "blas", {"openmp"}, "", "its threads are the OpenMP team");
    if (dir.contains("pthread"))
      return with("BLIS (pthreads)", "blas", {}, "",
                  "its threads follow BLIS_NUM_THREADS, which no catalog knob sets");
    return with("BLIS (serial build)", "blas", {}, "", "single-threaded: no pool");
  }
  if (starts(name, "libmkl_")) {
    if (starts(name, "libmkl_sequential"))
      return with("MKL (sequential)", "blas", {}, "", "single-threaded: no pool");
    if (starts(name, "libmkl_core") || starts(name, "libmkl_rt") || name.contains("_thread.so"))
      return with("MKL", "blas", {"openmp"}, "",
                  "MKL's threads are an OpenMP team (MKL_NUM_THREADS, else OMP_NUM_THREADS)");
    return std::nullopt;
  }
  if (dir.ends_with("/blas") && starts(name, "libblas.so"))
    return with("reference BLAS (netlib)", "blas", {}, "", "single-threaded: no pool");
  // Frameworks.
  if (starts(name, "libtorch_cpu.so") || starts(name, "libc10.so"))
    return with("PyTorch (libtorch)", "framework", {"torch_intra_op"}, "torch");
  if (starts(name, "libtensorflow") || starts(name, "_pywrap_tensorflow"))
    return with("TensorFlow", "framework", {}, "",
                "its intra/inter-op pools are set in code (tf.config.threading): no catalog knob");
  if (starts(name, "libopencv_core.so"))
    return with("OpenCV", "vision", {}, "",
                "its pool starts only when cv:: parallel code runs; Debian's TBB backend ignores "
                "OPENCV_FOR_THREADS_NUM");
  if (starts(name, "libnccl.so"))
    return with("NCCL", "gpu", {}, "nccl", "its helper threads are runtime threads");
  if (starts(name, "libcudart.so") || starts(name, "libcuda.so"))
    return with("CUDA", "gpu", {}, "", "its helper threads are runtime threads");
  // MPI libraries.
  if (starts(name, "libmpi.so")) {
    if (dir.contains("mpich")) return with("MPICH", "mpi", {});
    return with("Open MPI", "mpi", {}, "openmpi",
                "its progress and event threads are runtime threads");
  }
  if (starts(name, "libmpich.so")) return with("MPICH", "mpi", {});
  return std::nullopt;
}

std::vector<LibraryFinding> classify_libraries(const std::vector<std::string>& paths) {
  std::vector<LibraryFinding> out;
  std::set<std::string> seen;
  for (const auto& p : paths) {
    auto f = classify_library(p);
    if (!f || !seen.insert(f->what).second) continue;
    out.push_back(std::move(*f));
  }
  return out;
}

std::expected<DirectoryWatch, std::string> DirectoryWatch::open(const std::string& dir) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return std::unexpected(std::string("inotify_init1: ") + std::strerror(errno));
  // Not IN_CLOSE_WRITE: it says the file was opened for writing, not that it was written (a
  // database opened read-write and only read is an input).
  const std::uint32_t mask = IN_OPEN | IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ONLYDIR;
  if (::inotify_add_watch(fd, dir.c_str(), mask) < 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return std::unexpected("watching " + dir + ": " + why);
  }
  return DirectoryWatch(fd);
}

DirectoryWatch::DirectoryWatch(DirectoryWatch&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_overflow(other.m_overflow),
      m_entries(std::move(other.m_entries)) {}

DirectoryWatch::~DirectoryWatch() {
  if (m_fd >= 0) ::close(m_fd);
}

void DirectoryWatch::drain() {
  alignas(inotify_event) char buf[16384];
  for (;;) {
    const ssize_t n = ::read(m_fd, buf, sizeof buf);
    if (n <= 0) return;
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (ev->mask & IN_Q_OVERFLOW) m_overflow = true;
      if (ev->len == 0) continue;  // the folder itself
      Entry& e = m_entries[std::string(ev->name)];
      if (ev->mask & IN_OPEN) e.opened = true;
      if (ev->mask & IN_MODIFY) e.written = true;
      if (ev->mask & (IN_CREATE | IN_MOVED_TO)) e.created = true;
    }
  }
}

}  // namespace tune::probes
