// libtune_threads.so: records where each thread of a trial was started, so that the monitor can
// tell a pool by what it is (probes/thread_origin.h) instead of by its name, which most pools
// never set (a new thread inherits its creator's).
//
// Loaded into the trial's processes with LD_PRELOAD by the probes (only when the study's probes
// are on). It wraps pthread_create: the new thread first appends one line
//
//   TID ORIGIN
//
// to $TUNE_THREAD_ORIGINS/PID (PID: its process), then runs its start routine. ORIGIN is the first
// frame of the creating call stack outside the C and C++ runtimes (libc, libstdc++, libgcc, this
// library): the library's file name and, where the library exports one, the nearest symbol,
// "libgomp.so.1:gomp_team_start", "libtbb.so.12:...", "python3.11:PyThread_start_new_thread".
// std::thread's own frames are skipped, so a C++ pool is named by the code that made it.
//
// Without TUNE_THREAD_ORIGINS it only forwards. It allocates nothing but the small record handed
// to the new thread, and never fails a pthread_create it would not have failed: when the record
// cannot be allocated the thread starts unrecorded. C, no dependency beyond glibc.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probes/library_query.h"

typedef int (*create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

enum { k_origin_max = 200, k_frames = 24 };

struct start_record {
  void* (*routine)(void*);
  void* arg;
  char origin[k_origin_max];
};

static create_fn real_create;
static const char* origins_dir;
static void* self_base;

// Whether a frame's library is one whose frames say nothing of who started the thread.
static int runtime_frame(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  static const char* const skipped[] = {"libc.so", "libpthread.so", "libstdc++.so", "libgcc_s.so",
                                        "ld-linux"};
  for (size_t i = 0; i < sizeof skipped / sizeof *skipped; ++i)
    if (strncmp(base, skipped[i], strlen(skipped[i])) == 0) return 1;
  return 0;
}

static void describe(void* address, char* out, size_t size) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == NULL) {
    snprintf(out, size, "?");
    return;
  }
  const char* base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  if (info.dli_sname != NULL)
    snprintf(out, size, "%s:%s", base, info.dli_sname);
  else
    snprintf(out, size, "%s", base);
}

static void find_origin(char* out, size_t size) {
  void* frames[k_frames];
  const int n = backtrace(frames, k_frames);
  for (int i = 1; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) == 0 || info.dli_fname == NULL) continue;
    if (info.dli_fbase == self_base || runtime_frame(info.dli_fname)) continue;
    describe(frames[i], out, size);
    return;
  }
  snprintf(out, size, "?");
}

static void* record_and_start(void* p) {
  struct start_record record = *(struct start_record*)p;
  free(p);
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%d", origins_dir, (int)getpid()) < (int)sizeof path) {
    const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      char line[k_origin_max + 32];
      const int len =
          snprintf(line, sizeof line, "%ld %s\n", (long)syscall(SYS_gettid), record.origin);
      if (len > 0) {
        // One write of a short line to a file opened O_APPEND: lines of threads started at the
        // same time do not interleave.
        ssize_t written =
            write(fd, line, (size_t)(len < (int)sizeof line ? len : (int)sizeof line - 1));
        (void)written;
      }
      close(fd);
    }
  }
  return record.routine(record.arg);
}

__attribute__((constructor)) static void thread_origin_init(void) {
  real_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
  const char* dir = getenv("TUNE_THREAD_ORIGINS");
  origins_dir = dir != NULL && dir[0] == '/' ? dir : NULL;
  Dl_info info;
  if (dladdr((void*)&thread_origin_init, &info) != 0) self_base = info.dli_fbase;
  // backtrace() loads libgcc_s on its first call: done here, not inside a pthread_create that a
  // library's own constructor makes while the dynamic loader holds its lock.
  if (origins_dir != NULL) {
    void* frame;
    backtrace(&frame, 1);
  }
}

int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*),
                   void* arg) {
  if (real_create == NULL) {
    real_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (real_create == NULL) return EAGAIN;
  }
  tune_library_query_on_thread();
  if (origins_dir == NULL) return real_create(thread, attr, routine, arg);
  struct start_record* record = malloc(sizeof *record);
  if (record == NULL) return real_create(thread, attr, routine, arg);
  record->routine = routine;
  record->arg = arg;
  find_origin(record->origin, sizeof record->origin);
  const int rc = real_create(thread, attr, record_and_start, record);
  if (rc != 0) free(record);
  return rc;
}
