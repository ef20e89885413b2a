// libtune_getenv.so: records which environment variables a process reads, so that `tune init`
// can propose the knobs a program's libraries really look at (OMP_NUM_THREADS read by libgomp,
// OPENBLAS_NUM_THREADS by OpenBLAS) instead of guessing from what it maps (probes/env_reads.h).
//
// Loaded into `tune init`'s probe run with LD_PRELOAD. It defines getenv and secure_getenv: each
// looks the name up in `environ` as glibc does (a linear scan; secure_getenv returns NULL in a
// set-uid process, AT_SECURE), and the first time a process reads a name through a given
// library it appends one line
//
//   NAME<TAB>LIBRARY
//
// to $TUNE_ENV_READS/PID, LIBRARY being the file name of the object that called (libgomp.so.1,
// python3.11). Never the value. The lookup is its own rather than glibc's through dlsym: dlsym
// may itself read the environment, and a getenv called by a constructor before this library's
// own has run must still work.
//
// Bounds: names up to k_name_max bytes that are portable variable names, k_slots distinct
// (name, caller) pairs a process; a process forked from a recorded one shares what its parent
// had recorded (the table is copied), which is fine for a union over the tree. The table is
// lock-free (compare-and-swap on a hash), the line one write(2) to a file opened O_APPEND: safe
// from several threads at once. Without TUNE_ENV_READS it only looks up. C, glibc only.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

extern char** environ;

enum { k_name_max = 128, k_slots = 1024, k_dir_max = 3072 };

static uint64_t seen[k_slots];  // hashes of (name, caller) recorded; 0 = free
static char reads_dir[k_dir_max];
static int reads_state;  // 0 not read yet, 1 recording, -1 off

static const char* lookup(const char* name) {
  if (name == NULL || environ == NULL) return NULL;
  const size_t len = strlen(name);
  if (len == 0 || strchr(name, '=') != NULL) return NULL;
  for (char** e = environ; *e != NULL; ++e) {
    if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
  }
  return NULL;
}

static int portable_name(const char* name, size_t* len) {
  size_t n = 0;
  for (; name[n] != '\0'; ++n) {
    const char c = name[n];
    const int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                   (n > 0 && c >= '0' && c <= '9');
    if (!ok || n >= k_name_max) return 0;
  }
  *len = n;
  return n > 0;
}

// FNV-1a over the name and the caller's object base; never 0.
static uint64_t key_of(const char* name, size_t len, uintptr_t base) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; ++i) h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
  for (int i = 0; i < 8; ++i) h = (h ^ ((base >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

// True the first time `key` is offered (it is then in the table); false when seen or full.
static int first_time(uint64_t key) {
  for (unsigned i = 0; i < k_slots; ++i) {
    uint64_t* slot = &seen[(key + i) % k_slots];
    uint64_t expected = 0;
    if (__atomic_compare_exchange_n(slot, &expected, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return 1;
    if (expected == key) return 0;
  }
  return 0;
}

static int recording(void) {
  int state = __atomic_load_n(&reads_state, __ATOMIC_ACQUIRE);
  if (state != 0) return state > 0;
  const char* dir = lookup("TUNE_ENV_READS");
  state = -1;
  if (dir != NULL && dir[0] == '/' && strlen(dir) < k_dir_max - 32) {
    // Every thread that races here copies the same bytes.
    strcpy(reads_dir, dir);
    state = 1;
  }
  __atomic_store_n(&reads_state, state, __ATOMIC_RELEASE);
  return state > 0;
}

static void record(const char* name, const void* caller) {
  size_t len = 0;
  if (!recording() || name == NULL || !portable_name(name, &len)) return;
  Dl_info info;
  memset(&info, 0, sizeof info);
  const int known = caller != NULL && dladdr(caller, &info) != 0 && info.dli_fname != NULL;
  if (!first_time(key_of(name, len, known ? (uintptr_t)info.dli_fbase : 0))) return;
  const char* lib = "?";
  if (known) {
    const char* slash = strrchr(info.dli_fname, '/');
    lib = slash ? slash + 1 : info.dli_fname;
    if (*lib == '\0') lib = "main";  // the executable itself, named "" by dladdr
  }
  char path[k_dir_max + 32];
  if (snprintf(path, sizeof path, "%s/%d", reads_dir, (int)getpid()) >= (int)sizeof path) return;
  char line[k_name_max + 256];
  const int n = snprintf(line, sizeof line, "%s\t%.200s\n", name, lib);
  if (n <= 0 || n >= (int)sizeof line) return;
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // One short write to a file opened O_APPEND: lines of threads do not interleave.
  ssize_t written = write(fd, line, (size_t)n);
  (void)written;
  close(fd);
}

char* getenv(const char* name) {
  const char* value = lookup(name);
  record(name, __builtin_return_address(0));
  return (char*)value;
}

char* secure_getenv(const char* name) {
  record(name, __builtin_return_address(0));
  if (getauxval(AT_SECURE) != 0) return NULL;
  return (char*)lookup(name);
}
