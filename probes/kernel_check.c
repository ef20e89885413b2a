// tune-kernel-check LIBRARY: the numeric check a BLAS kernel passes before tune offers it
// (probes/blas_kernels.h reads what it prints). Run in a child with the variable that picks the
// kernel (OPENBLAS_CORETYPE=SkylakeX), it loads LIBRARY, the file the job maps, on one thread:
//
//   core NAME            what the library says it runs (openblas_get_corename; "-" if it has none)
//   dgemm_error X        max |C - reference| / bound, for C = 1.5 AB + 0.5 C on 203x211 by 211x197
//   sgemm_error X        the same in single precision
//   dgemm_gflops X       the best of repeated 512x512x512 products, for at least 0.2 s
//   sgemm_gflops X
//   done
//
// `tune-kernel-check --expect CORE LIBRARY` (an exported script's check on the node it runs on)
// runs the two numeric checks only, and exits 0 when the library runs CORE and both pass, else
// prints why on stderr and exits 1.
//
// `tune-kernel-check --onednn [--expect ISA] LIBRARY` checks oneDNN instead (run with
// ONEDNN_MAX_CPU_ISA set): `core` is the instruction set it then dispatches to
// (dnnl_get_effective_cpu_isa), and only the single-precision lines are printed, since its one
// floating-point GEMM is dnnl_sgemm (row-major; called here as the column-major product's
// transpose).
//
// The reference is computed here in long double by the textbook loop. The bound is
// 2 K u max_ij sum_k |alpha a_ik b_kj| + |beta c_ij| (K = 211, u the precision's unit roundoff),
// twice the classic worst case of a dot product of length K: a correct kernel stays far below 1,
// a wrong one (a kernel computing garbage on a CPU it misreads) lands many orders above. A kernel
// the CPU cannot execute dies of SIGILL, which the caller reports. C, libc and libdl only.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef void (*dgemm_fn)(const char*, const char*, const int*, const int*, const int*,
                         const double*, const double*, const int*, const double*, const int*,
                         const double*, double*, const int*);
typedef void (*sgemm_fn)(const char*, const char*, const int*, const int*, const int*, const float*,
                         const float*, const int*, const float*, const int*, const float*, float*,
                         const int*);

enum { k_m = 203, k_n = 197, k_k = 211, k_timed = 512 };

static unsigned long long state = 88172645463325252ull;
static double next_value(void) {  // xorshift64: the same inputs in every run, in [-1, 1)
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (double)(state >> 11) / (double)(1ull << 52) - 1.0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Column-major A (m x k), B (k x n), C (m x n).
// The worst element of C = alpha A B + beta C0 (column-major, m x k by k x n) against a
// long-double reference, as a multiple of the bound 2 K u sum_p |terms| (u: the unit roundoff of
// the type the GEMM ran in); NaN stays NaN.
static double worst_error(const long double* a, const long double* b, const long double* c0,
                          const long double* c, long double alpha, long double beta,
                          long double unit) {
  const int m = k_m, n = k_n, k = k_k;
  double worst = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      long double sum = 0, magnitude = 0;
      for (int p = 0; p < k; ++p) {
        const long double term = alpha * a[i + p * m] * b[p + j * k];
        sum += term;
        magnitude += fabsl(term);
      }
      sum += beta * c0[i + j * m];
      magnitude += fabsl(beta * c0[i + j * m]);
      const long double bound = 2.0L * k * unit * magnitude;
      const double ratio = (double)(fabsl(c[i + j * m] - sum) / bound);
      if (!(ratio <= worst)) worst = ratio;
    }
  return worst;
}

// The four matrices of one check, widened for the reference.
struct wide {
  long double *a, *b, *c0, *c;
};

static struct wide wide_alloc(void) {
  struct wide w = {malloc(sizeof(long double) * k_m * k_k), malloc(sizeof(long double) * k_k * k_n),
                   malloc(sizeof(long double) * k_m * k_n),
                   malloc(sizeof(long double) * k_m * k_n)};
  return w;
}

static double wide_error(struct wide w, long double alpha, long double beta, long double unit) {
  const double worst = worst_error(w.a, w.b, w.c0, w.c, alpha, beta, unit);
  free(w.a), free(w.b), free(w.c0), free(w.c);
  return worst;
}

static double check_double(dgemm_fn gemm) {
  double *a = malloc(sizeof(double) * k_m * k_k), *b = malloc(sizeof(double) * k_k * k_n),
         *c = malloc(sizeof(double) * k_m * k_n);
  struct wide w = wide_alloc();
  for (int i = 0; i < k_m * k_k; ++i) w.a[i] = a[i] = next_value();
  for (int i = 0; i < k_k * k_n; ++i) w.b[i] = b[i] = next_value();
  for (int i = 0; i < k_m * k_n; ++i) w.c0[i] = c[i] = next_value();
  const double alpha = 1.5, beta = 0.5;
  const int m = k_m, n = k_n, k = k_k;
  gemm("N", "N", &m, &n, &k, &alpha, a, &m, b, &k, &beta, c, &m);
  for (int i = 0; i < k_m * k_n; ++i) w.c[i] = c[i];
  free(a), free(b), free(c);
  return wide_error(w, alpha, beta, DBL_EPSILON / 2);
}

static double check_single(sgemm_fn gemm) {
  float *a = malloc(sizeof(float) * k_m * k_k), *b = malloc(sizeof(float) * k_k * k_n),
        *c = malloc(sizeof(float) * k_m * k_n);
  struct wide w = wide_alloc();
  for (int i = 0; i < k_m * k_k; ++i) w.a[i] = a[i] = (float)next_value();
  for (int i = 0; i < k_k * k_n; ++i) w.b[i] = b[i] = (float)next_value();
  for (int i = 0; i < k_m * k_n; ++i) w.c0[i] = c[i] = (float)next_value();
  const float alpha = 1.5f, beta = 0.5f;
  const int m = k_m, n = k_n, k = k_k;
  gemm("N", "N", &m, &n, &k, &alpha, a, &m, b, &k, &beta, c, &m);
  for (int i = 0; i < k_m * k_n; ++i) w.c[i] = c[i];
  free(a), free(b), free(c);
  return wide_error(w, alpha, beta, FLT_EPSILON / 2);
}

// The best GFLOPS of repeated n x n x n GEMMs, at least twice and for at least 0.2 s.
struct timed_call {
  dgemm_fn dgemm;
  sgemm_fn sgemm;
  void *a, *b, *c;
};

static void call_once(const struct timed_call* t) {
  const int n = k_timed;
  if (t->dgemm != NULL) {
    const double one = 1, zero = 0;
    t->dgemm("N", "N", &n, &n, &n, &one, t->a, &n, t->b, &n, &zero, t->c, &n);
  } else {
    const float one = 1, zero = 0;
    t->sgemm("N", "N", &n, &n, &n, &one, t->a, &n, t->b, &n, &zero, t->c, &n);
  }
}

static double best_rate(const struct timed_call* t) {
  const int n = k_timed;
  double best = 0, start = now_s();
  for (int round = 0; round < 2 || now_s() - start < 0.2; ++round) {
    const double t0 = now_s();
    call_once(t);
    const double rate = 2.0 * n * n * n / (now_s() - t0) / 1e9;
    if (rate > best) best = rate;
  }
  return best;
}

static double rate_double(dgemm_fn gemm) {
  const int n = k_timed;
  double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
         *c = calloc((size_t)n * n, sizeof(double));
  for (int i = 0; i < n * n; ++i) a[i] = next_value(), b[i] = next_value();
  const struct timed_call t = {gemm, NULL, a, b, c};
  const double rate = best_rate(&t);
  free(a), free(b), free(c);
  return rate;
}

static double rate_single(sgemm_fn gemm) {
  const int n = k_timed;
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
        *c = calloc((size_t)n * n, sizeof(float));
  for (int i = 0; i < n * n; ++i) a[i] = (float)next_value(), b[i] = (float)next_value();
  const struct timed_call t = {NULL, gemm, a, b, c};
  const double rate = best_rate(&t);
  free(a), free(b), free(c);
  return rate;
}

// oneDNN's dnnl_sgemm (row-major, dnnl_dim_t sizes), its version and instruction set.
typedef int (*onednn_sgemm_fn)(char, char, long long, long long, long long, float, const float*,
                               long long, const float*, long long, float, float*, long long);
struct onednn_version {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};
static onednn_sgemm_fn onednn_sgemm;

// Column-major C = A B is row-major C' = B' A': the same call with the operands swapped.
static void onednn_as_sgemm(const char* ta, const char* tb, const int* m, const int* n,
                            const int* k, const float* alpha, const float* a, const int* lda,
                            const float* b, const int* ldb, const float* beta, float* c,
                            const int* ldc) {
  onednn_sgemm(*tb, *ta, *n, *m, *k, *alpha, b, *ldb, a, *lda, *beta, c, *ldc);
}

// dnnl_cpu_isa_t's values (probes/onednn_isa.cpp has the same table, with each one's flags).
static const char* onednn_isa_name(unsigned code, int major) {
  switch (code) {
    case 0x1:
      return "SSE41";
    case 0x3:
      return "AVX";
    case 0x7:
      return "AVX2";
    case 0x407:
      return "AVX2_VNNI";
    case 0x27:
      return "AVX512_CORE";
    case 0x67:
      return "AVX512_CORE_VNNI";
    case 0xe7:
      return "AVX512_CORE_BF16";
    case 0x1ef:
      return major >= 3 ? "AVX512_CORE_FP16" : "-";
    case 0x3e7:
      return major == 2 ? "AVX512_CORE_AMX" : "-";
    case 0xfe7:
      return major >= 3 ? "AVX512_CORE_AMX" : "-";
    default:
      return "-";
  }
}

static int check_onednn(void* library, const char* path, const char* expect) {
  onednn_sgemm = (onednn_sgemm_fn)dlsym(library, "dnnl_sgemm");
  const struct onednn_version* (*version)(void) =
      (const struct onednn_version* (*)(void))dlsym(library, "dnnl_version");
  int (*isa)(void) = (int (*)(void))dlsym(library, "dnnl_get_effective_cpu_isa");
  if (onednn_sgemm == NULL || version == NULL || isa == NULL) {
    fprintf(stderr, "tune-kernel-check: %s is not oneDNN (no dnnl_sgemm)\n", path);
    return 1;
  }
  const struct onednn_version* v = version();
  const char* runs = onednn_isa_name((unsigned)isa(), v != NULL ? v->major : 0);
  if (expect != NULL) {
    if (strcasecmp(runs, expect) != 0) {
      fprintf(stderr, "tune-kernel-check: %s runs its %s kernels here, not %s\n", path, runs,
              expect);
      return 1;
    }
    const double f = check_single(onednn_as_sgemm);
    if (!(f <= 1.0)) {
      fprintf(stderr,
              "tune-kernel-check: %s's %s kernels give wrong results here (SGEMM error %.3g "
              "times the bound)\n",
              path, runs, f);
      return 1;
    }
    return 0;
  }
  printf("core %s\n", runs);
  fflush(stdout);
  printf("sgemm_error %.6g\n", check_single(onednn_as_sgemm));
  fflush(stdout);
  printf("sgemm_gflops %.4g\n", rate_single(onednn_as_sgemm));
  printf("done\n");
  return 0;
}

int main(int argc, char** argv) {
  const char* expect = NULL;
  int onednn = 0;
  while (argc > 2 && strncmp(argv[1], "--", 2) == 0) {
    if (strcmp(argv[1], "--onednn") == 0) {
      onednn = 1;
      argv += 1;
      argc -= 1;
    } else if (strcmp(argv[1], "--expect") == 0 && argc > 3) {
      expect = argv[2];
      argv += 2;
      argc -= 2;
    } else {
      break;
    }
  }
  if (argc != 2) {
    fprintf(stderr,
            "usage: tune-kernel-check [--onednn] [--expect CORE] LIBRARY (with the variable "
            "that picks a kernel)\n");
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "tune-kernel-check: %s\n", dlerror());
    return 1;
  }
  if (onednn) return check_onednn(library, argv[1], expect);
  dgemm_fn dgemm = (dgemm_fn)dlsym(library, "dgemm_");
  sgemm_fn sgemm = (sgemm_fn)dlsym(library, "sgemm_");
  if (dgemm == NULL || sgemm == NULL) {
    fprintf(stderr, "tune-kernel-check: %s has no dgemm_ or sgemm_\n", argv[1]);
    return 1;
  }
  void (*set_threads)(int) = (void (*)(int))dlsym(library, "openblas_set_num_threads");
  if (set_threads != NULL) set_threads(1);
  char* (*core)(void) = (char* (*)(void))dlsym(library, "openblas_get_corename");
  if (expect != NULL) {
    const char* runs = core != NULL ? core() : "-";
    if (strcasecmp(runs, expect) != 0) {
      fprintf(stderr, "tune-kernel-check: %s runs its %s kernels here, not %s\n", argv[1], runs,
              expect);
      return 1;
    }
    const double d = check_double(dgemm), f = check_single(sgemm);
    if (!(d <= 1.0) || !(f <= 1.0)) {
      fprintf(stderr,
              "tune-kernel-check: %s's %s kernels give wrong results here (DGEMM error %.3g, "
              "SGEMM %.3g times the bound)\n",
              argv[1], runs, d, f);
      return 1;
    }
    return 0;
  }
  printf("core %s\n", core != NULL ? core() : "-");
  fflush(stdout);
  printf("dgemm_error %.6g\n", check_double(dgemm));
  printf("sgemm_error %.6g\n", check_single(sgemm));
  fflush(stdout);
  printf("dgemm_gflops %.4g\n", rate_double(dgemm));
  printf("sgemm_gflops %.4g\n", rate_single(sgemm));
  printf("done\n");
  return 0;
}
