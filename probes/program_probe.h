// What a running program shows of itself in /proc for `tune init`'s probe run: libraries,
// threads, open files, and the files it opens in one folder (inotify). parse_* and classify_*
// are pure; a DirectoryWatch is used by one thread.
// Design: docs/design-notes.md#probesprogram_probeh
#pragma once

#include <sys/types.h>

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tune::probes {

// One process at one moment.
struct ProcessView {
  pid_t pid = 0;
  std::string comm;
  std::string cwd;                     // the working directory's path; "" when unreadable
  std::vector<std::string> libraries;  // shared objects mapped, as maps names them (real paths)
  struct Thread {
    pid_t tid = 0;
    std::string comm;
    long syscall = -1;  // the system call it is blocked in; -1 running or unknown
  };
  std::vector<Thread> threads;
  struct File {
    std::string path;
    bool write = false;  // opened for writing (O_WRONLY or O_RDWR)
  };
  std::vector<File> files;  // regular files only (no pipes, sockets, /dev, /proc)
};

// `pid` read from `proc_root`/PID/{comm,cwd,maps,task/*/{comm,syscall},fd,fdinfo}; nullopt when
// the process has gone. Parts that cannot be read (another user's process) are left empty, as
// are the libraries without `with_libraries` (maps is the largest file read).
std::optional<ProcessView> read_process_view(pid_t pid, const std::string& proc_root = "/proc",
                                             bool with_libraries = true);

// The shared objects in a /proc/PID/maps text: paths of mapped files whose name holds ".so"
// (libfoo.so, libfoo.so.1.2, _C.cpython-311-x86_64-linux-gnu.so), sorted, once each.
std::vector<std::string> parse_maps_libraries(const std::string& maps_text);

// /proc/PID/task/TID/syscall: "7 0x... ..." -> 7; "running" or junk -> -1.
long parse_syscall_number(const std::string& text);

// /proc/PID/fdinfo/FD: the octal `flags:` field; -1 when absent.
int parse_fdinfo_flags(const std::string& text);

// A system call an event loop waits in (poll, ppoll, select, pselect6, epoll_wait, epoll_pwait,
// epoll_pwait2): Open MPI's and PMIx's progress threads, libevent, gloo's store listener. A
// thread pool of the catalog (OpenMP, OpenBLAS, torch) never waits there: its idle workers
// wait on a futex or spin.
bool is_event_wait_syscall(long nr);

// Thread names the runtimes give their own helper threads, which no catalog knob sizes: CUDA's
// (cuda-EvtHandlr, cuda0000...), NCCL's (NCCL Progress, ncclProxy...), and names that say
// async/progress/event.
bool is_runtime_thread_name(const std::string& comm);

// What one mapped library is, in the knob catalog's terms.
struct LibraryFinding {
  std::string path;                // the real path that told it
  std::string what;                // "OpenBLAS (pthreads)", "libgomp (GNU OpenMP)", "Open MPI"
  std::string category;            // openmp | blas | framework | mpi | gpu | vision
  std::vector<std::string> pools;  // catalog pools it starts with nothing set
  std::string program;             // the catalog program tag it makes the program; "" none
  std::string note;                // what else to know (a pool no knob sizes, a lazy pool)
};

// nullopt for libraries that start no pool and name no framework (libc, libm, Open MPI's
// plugins, ...). `path` should be a real path (symbolic links resolved): Debian's
// libblas.so.3 is an alternatives link whose target's folder says which BLAS it is.
std::optional<LibraryFinding> classify_library(const std::string& path);

// Each library classified; one finding per `what` (the first path in `paths`' order).
std::vector<LibraryFinding> classify_libraries(const std::vector<std::string>& paths);

// The files opened in one folder (not its subfolders), from inotify events: an input read and
// closed within a millisecond shows here, where sampling /proc/PID/fd would miss it. Sees every
// process's opens there, so it is meant for a folder only the watched program uses.
class DirectoryWatch {
 public:
  struct Entry {
    bool opened = false;   // IN_OPEN
    bool written = false;  // IN_MODIFY: data written (or truncated)
    bool created = false;  // IN_CREATE or IN_MOVED_TO
  };

  static std::expected<DirectoryWatch, std::string> open(const std::string& dir);
  DirectoryWatch(DirectoryWatch&& other) noexcept;
  DirectoryWatch& operator=(DirectoryWatch&&) = delete;
  DirectoryWatch(const DirectoryWatch&) = delete;
  ~DirectoryWatch();

  // Reads the events waiting, without blocking.
  void drain();
  // Name in the folder -> what happened to it, so far.
  const std::map<std::string, Entry>& entries() const { return m_entries; }
  // Events were dropped (the kernel's queue overflowed): entries() may miss some.
  bool overflowed() const { return m_overflow; }

 private:
  explicit DirectoryWatch(int fd) : m_fd(fd) {}
  int m_fd = -1;
  bool m_overflow = false;
  std::map<std::string, Entry> m_entries;
};

}  // namespace tune::probes
