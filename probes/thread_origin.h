// Where a trial's threads were started (the library that called pthread_create, as the
// preloaded libtune_threads.so records it), and which monitor group that makes them.
// ThreadOrigins is used by one monitor thread; classify_origin is pure.
// Design: docs/design-notes.md#probesthread_originh
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>

#include "probes/sustained.h"

namespace tune::probes {

// The variable that names the folder of origin files; the library's file name.
inline constexpr const char* k_thread_origins_env = "TUNE_THREAD_ORIGINS";
inline constexpr const char* k_thread_origins_library = "libtune_threads.so";

struct OriginClass {
  GroupId group = GroupId::other;
  std::string pool;  // "OpenMP", "BLAS", "TBB (OpenCV)", "gloo", "Open MPI", "Python", ...
};

// What a thread started by `origin` is: its group and its pool's name. Unknown libraries are the
// program's own ("other", the library's name as the pool).
OriginClass classify_origin(const std::string& origin);

// The origin files of one trial's folder, read incrementally (each file from where the last read
// stopped; a process's file is read only when one of its threads is not known yet).
class ThreadOrigins {
 public:
  explicit ThreadOrigins(std::string dir) : m_dir(std::move(dir)) {}
  bool enabled() const { return !m_dir.empty(); }
  // Called before each sample's lookups: a process's file is read at most once a sample.
  void begin_sample() { m_read_this_sample.clear(); }
  // The origin of `tid` in process `pid`, reading the process's file when the thread is new.
  // None for a thread that recorded none (a process's first thread, a static program's).
  std::optional<std::string> origin(pid_t pid, pid_t tid);

 private:
  void read_more(pid_t pid);
  std::string m_dir;
  std::set<pid_t> m_read_this_sample;
  struct FileState {
    long offset = 0;
    std::string partial;  // a line not yet ended
  };
  std::map<pid_t, FileState> m_files;
  struct Known {
    pid_t pid = 0;  // a tid reused by another process is read again
    std::string origin;
  };
  std::map<pid_t, Known> m_origins;  // by tid
};

}  // namespace tune::probes
