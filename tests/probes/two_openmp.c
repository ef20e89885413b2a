// A program with two OpenMP runtimes in one process, for the library report's live test: built
// with GNU OpenMP (libgomp) and loading LLVM's (libomp.so.5) as a plugin would. Exits 0 when both
// were there, 3 when libomp is not installed.
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

int main(void) {
  int threads = 0;
#pragma omp parallel
  {
#pragma omp atomic
    ++threads;
  }
  void* llvm = dlopen("libomp.so.5", RTLD_NOW | RTLD_LOCAL);
  if (llvm == NULL) {
    fprintf(stderr, "two_openmp: %s\n", dlerror());
    return 3;
  }
  printf("%d\n", threads);
  return 0;
}
