// Part of libtune_threads.so: asks the libraries a process has loaded what they run, from inside
// the process, as threadpoolctl does (probes/library_report.h reads what it writes).
//
// Where $TUNE_LIBRARY_REPORTS names a folder, it writes $TUNE_LIBRARY_REPORTS/PID (a temporary
// file renamed over the last one) when main starts, whenever a thread is started after new
// libraries were loaded (numpy's OpenBLAS starts its pool as it loads), and at exit (an atexit
// handler registered as main starts, so it runs before the libraries' destructors). Lines:
//
//   process PID RANK EXE                      RANK: OMPI_COMM_WORLD_RANK, PMIX_RANK, ... or -
//   library KIND PATH key=value...            KIND: openblas | blis | mkl | onednn | openmp
//   env NAME VALUE                            a variable that forces a kernel or an ISA
//
// fields separated by tabs; control characters in any text become '?'. A library is asked only
// through functions that read its state (OpenBLAS's core name, config and threads; BLIS's
// version, architecture and threads; MKL's version and code path; oneDNN's version and runtime,
// and at exit alone its instruction set, since asking fixes it); an LLVM or Intel OpenMP
// runtime is asked its threads only when it is the process's only one of the two (initialising a
// second one aborts the process, "OMP: Error #15"). C, glibc only.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/library_query.h"

enum { k_report_max = 16384, k_path_max = 4096 };

static const char* reports_dir;
static int last_adds = -1;  // dl_iterate_phdr's count of loads at the last report
static int exiting;         // the report being written is the one at exit

struct report {
  char text[k_report_max];
  size_t used;
};

static void add_text(struct report* r, const char* s) {
  for (; *s != '\0' && r->used + 1 < sizeof r->text; ++s)
    r->text[r->used++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
  r->text[r->used] = '\0';
}

static void add_raw(struct report* r, const char* s) {
  const size_t n = strlen(s);
  if (r->used + n + 1 >= sizeof r->text) return;
  memcpy(r->text + r->used, s, n + 1);
  r->used += n;
}

static void add_field(struct report* r, const char* key, const char* value) {
  add_raw(r, "\t");
  add_raw(r, key);
  add_raw(r, "=");
  add_text(r, value != NULL ? value : "");
}

static void add_int(struct report* r, const char* key, int value) {
  char buf[32];
  snprintf(buf, sizeof buf, "%d", value);
  add_field(r, key, buf);
}

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

// The address of `symbol` when `handle`'s own object defines it (dlsym also searches the
// object's dependencies: libtorch's handle finds its OpenBLAS's symbols).
static void* own_symbol(void* handle, const char* path, const char* symbol) {
  void* address = dlsym(handle, symbol);
  if (address == NULL) return NULL;
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == NULL) return NULL;
  return strcmp(info.dli_fname, path) == 0 ? address : NULL;
}

struct scan {
  struct report* out;
  int llvm_runtimes;  // libomp / libiomp5 objects mapped
  int pass;           // 0: count the runtimes; 1: ask
  int adds;
};

static int is_llvm_openmp(const char* base) {
  return strncmp(base, "libomp.", 7) == 0 || strncmp(base, "libomp5", 7) == 0 ||
         strncmp(base, "libiomp5", 8) == 0;
}

static void ask_openblas(struct report* r, void* h, const char* path) {
  typedef char* (*text_fn)(void);
  typedef int (*int_fn)(void);
  text_fn core = (text_fn)own_symbol(h, path, "openblas_get_corename");
  if (core == NULL) return;
  text_fn config = (text_fn)own_symbol(h, path, "openblas_get_config");
  int_fn threads = (int_fn)own_symbol(h, path, "openblas_get_num_threads");
  int_fn parallel = (int_fn)own_symbol(h, path, "openblas_get_parallel");
  add_raw(r, "library\topenblas\t");
  add_text(r, path);
  add_field(r, "core", core());
  if (config != NULL) add_field(r, "config", config());
  if (threads != NULL) add_int(r, "threads", threads());
  if (parallel != NULL) add_int(r, "parallel", parallel());
  add_raw(r, "\n");
}

static void ask_blis(struct report* r, void* h, const char* path) {
  typedef const char* (*text_fn)(void);
  typedef int (*int_fn)(void);
  typedef const char* (*arch_text_fn)(int);
  text_fn version = (text_fn)own_symbol(h, path, "bli_info_get_version_str");
  if (version == NULL) return;
  int_fn arch = (int_fn)own_symbol(h, path, "bli_arch_query_id");
  arch_text_fn arch_name = (arch_text_fn)own_symbol(h, path, "bli_arch_string");
  int_fn threads = (int_fn)own_symbol(h, path, "bli_thread_get_num_threads");
  add_raw(r, "library\tblis\t");
  add_text(r, path);
  add_field(r, "version", version());
  if (arch != NULL && arch_name != NULL) add_field(r, "core", arch_name(arch()));
  if (threads != NULL) add_int(r, "threads", threads());
  add_raw(r, "\n");
}

// MKL's MKLVersion.
struct mkl_version {
  int major, minor, update;
  char *status, *build, *processor, *platform;
};

static void ask_mkl(struct report* r, void* h, const char* path) {
  typedef void (*version_fn)(struct mkl_version*);
  version_fn get = (version_fn)own_symbol(h, path, "MKL_Get_Version");
  if (get == NULL) return;
  struct mkl_version v;
  memset(&v, 0, sizeof v);
  get(&v);
  char text[64];
  snprintf(text, sizeof text, "%d.%d.%d", v.major, v.minor, v.update);
  add_raw(r, "library\tmkl\t");
  add_text(r, path);
  add_field(r, "version", text);
  if (v.processor != NULL) add_field(r, "core", v.processor);
  add_raw(r, "\n");
}

// oneDNN's dnnl_version_t.
struct onednn_version {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};

static void ask_onednn(struct report* r, void* h, const char* path) {
  typedef const struct onednn_version* (*version_fn)(void);
  typedef int (*isa_fn)(void);
  version_fn version = (version_fn)own_symbol(h, path, "dnnl_version");
  if (version == NULL) return;
  const struct onednn_version* v = version();
  if (v == NULL) return;
  char text[64];
  snprintf(text, sizeof text, "%d.%d.%d", v->major, v->minor, v->patch);
  add_raw(r, "library\tonednn\t");
  add_text(r, path);
  add_field(r, "version", text);
  add_int(r, "runtime", (int)v->cpu_runtime);
  // Its instruction set only at exit: the first call fixes it (ONEDNN_MAX_CPU_ISA is read then),
  // and the program may still choose it (dnnl_set_max_cpu_isa) before its first primitive.
  isa_fn isa = exiting ? (isa_fn)own_symbol(h, path, "dnnl_get_effective_cpu_isa") : NULL;
  if (isa != NULL) {
    snprintf(text, sizeof text, "0x%x", (unsigned)isa());
    add_field(r, "isa", text);
  }
  add_raw(r, "\n");
}

static void ask_openmp(struct report* r, void* h, const char* path, int may_initialise) {
  typedef int (*int_fn)(void);
  int_fn threads = (int_fn)own_symbol(h, path, "omp_get_max_threads");
  if (threads == NULL) return;
  add_raw(r, "library\topenmp\t");
  add_text(r, path);
  if (may_initialise) add_int(r, "threads", threads());
  add_raw(r, "\n");
}

static int visit(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct scan* s = data;
  s->adds = (int)info->dlpi_adds;
  const char* path = info->dlpi_name;
  if (path == NULL || path[0] != '/') return 0;
  const char* base = base_name(path);
  if (s->pass == 0) {
    if (is_llvm_openmp(base)) ++s->llvm_runtimes;
    return 0;
  }
  const int blas = strstr(base, "blas") != NULL, blis = strstr(base, "blis") != NULL,
            mkl = strstr(base, "mkl_rt") != NULL || strstr(base, "mkl_core") != NULL,
            onednn = strncmp(base, "libdnnl", 7) == 0, gomp = strncmp(base, "libgomp", 7) == 0,
            llvm = is_llvm_openmp(base);
  if (!blas && !blis && !mkl && !onednn && !gomp && !llvm) return 0;
  void* h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return 0;
  if (blas) ask_openblas(s->out, h, path);
  if (blis) ask_blis(s->out, h, path);
  if (mkl) ask_mkl(s->out, h, path);
  if (onednn) ask_onednn(s->out, h, path);
  if (gomp) ask_openmp(s->out, h, path, 1);
  if (llvm) ask_openmp(s->out, h, path, s->llvm_runtimes == 1);
  dlclose(h);
  return 0;
}

extern char** environ;

// A variable's value read from `environ` itself, not through getenv: libtune_getenv.so records
// every getenv call, and tune's own reads must not look like the program's (`tune init` lists
// the variables the program reads).
static const char* env_value(const char* name) {
  const size_t len = strlen(name);
  for (char** e = environ; e != NULL && *e != NULL; ++e)
    if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
  return NULL;
}

static void add_process(struct report* r) {
  static const char* const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                          "SLURM_PROCID", "RANK"};
  const char* rank = NULL;
  for (size_t i = 0; i < sizeof rank_vars / sizeof *rank_vars && rank == NULL; ++i)
    rank = env_value(rank_vars[i]);
  char exe[k_path_max];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  char head[64];
  snprintf(head, sizeof head, "process\t%d\t", (int)getpid());
  add_raw(r, head);
  add_text(r, rank != NULL && rank[0] != '\0' ? rank : "-");
  add_raw(r, "\t");
  add_text(r, exe);
  add_raw(r, "\n");
}

static void add_forcing_env(struct report* r) {
  static const char* const names[] = {
      "OPENBLAS_CORETYPE",       "OPENBLAS_VERBOSE", "MKL_DEBUG_CPU_TYPE",
      "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR",         "BLIS_ARCH_TYPE",
      "ONEDNN_MAX_CPU_ISA",      "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY",
      "NPY_DISABLE_CPU_FEATURES"};
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i) {
    const char* value = env_value(names[i]);
    if (value == NULL) continue;
    add_raw(r, "env\t");
    add_raw(r, names[i]);
    add_raw(r, "\t");
    add_text(r, value);
    add_raw(r, "\n");
  }
}

// On a node other than tune's, the folder tune made for the trial is not there: the rank makes it
// (and its parent, the trial's folder of thread origins), private, and that node's watcher
// (`tune probe --watch`, probes/node_watch.h) reads the answers and removes both.
static int make_reports_dir(void) {
  char parent[k_path_max];
  if (snprintf(parent, sizeof parent, "%s", reports_dir) >= (int)sizeof parent) return 0;
  char* slash = strrchr(parent, '/');
  if (slash == NULL || slash == parent) return 0;
  *slash = '\0';
  if (mkdir(parent, 0700) != 0 && errno != EEXIST) return 0;
  return mkdir(reports_dir, 0700) == 0 || errno == EEXIST;
}

void tune_library_query_report(void) {
  if (reports_dir == NULL) return;
  static struct report r;  // one report at a time: callers are main, exit and a new thread
  static int busy;
  if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) return;
  r.used = 0;
  r.text[0] = '\0';
  struct scan s = {&r, 0, 0, 0};
  dl_iterate_phdr(visit, &s);
  last_adds = s.adds;
  add_process(&r);
  const size_t process_end = r.used;
  s.pass = 1;
  dl_iterate_phdr(visit, &s);
  add_forcing_env(&r);
  if (r.used == process_end) {  // nothing to tell: no file
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
    return;
  }
  char path[k_path_max], temporary[k_path_max];
  const int pid = (int)getpid();
  if (snprintf(path, sizeof path, "%s/%d", reports_dir, pid) < (int)sizeof path &&
      snprintf(temporary, sizeof temporary, "%s/.%d.tmp", reports_dir, pid) <
          (int)sizeof temporary) {
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 && errno == ENOENT && make_reports_dir())
      fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      const ssize_t written = write(fd, r.text, r.used);
      close(fd);
      if (written == (ssize_t)r.used)
        rename(temporary, path);
      else
        unlink(temporary);
    }
  }
  __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

static int count_adds(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  *(int*)data = (int)info->dlpi_adds;
  return 1;  // the first object says it
}

void tune_library_query_on_thread(void) {
  if (reports_dir == NULL) return;
  int adds = 0;
  dl_iterate_phdr(count_adds, &adds);
  if (adds != __atomic_load_n(&last_adds, __ATOMIC_RELAXED)) tune_library_query_report();
}

typedef int (*main_fn)(int, char**, char**);
typedef int (*start_main_fn)(main_fn, int, char**, void (*)(void), void (*)(void), void (*)(void),
                             void*);
static main_fn real_main;

static void report_at_exit(void) {
  exiting = 1;
  tune_library_query_report();
}

static int main_with_reports(int argc, char** argv, char** envp) {
  tune_library_query_report();
  atexit(report_at_exit);
  return real_main(argc, argv, envp);
}

// Every dynamically linked program starts here (crt1's _start): main is wrapped so that the
// first report sees the libraries the program links, and the exit handler runs before the
// dynamic linker's destructors, which come first in exit()'s list.
int __libc_start_main(main_fn main, int argc, char** argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void* stack_end) {
  start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  const char* dir = env_value(TUNE_LIBRARY_REPORTS_ENV);
  if (dir != NULL && dir[0] == '/') {
    reports_dir = dir;
    real_main = main;
    main = main_with_reports;
  }
  return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}
