// A deliberately busy program for the live probe test: `probes_spin --omp-threads N --seconds S`
// keeps N OpenMP threads spinning for S seconds, then exits 0. MPI-agnostic: mpirun starts copies.
#include <omp.h>

#include <atomic>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  int threads = 1;
  double seconds = 1.0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--omp-threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
  }
  if (threads < 1 || seconds <= 0 || seconds > 60) {
    std::fprintf(stderr, "probes_spin: expected --omp-threads N>=1 --seconds 0<S<=60\n");
    return 2;
  }
  omp_set_dynamic(0);
  const double end = omp_get_wtime() + seconds;
  std::atomic<unsigned long> sink{0};
#pragma omp parallel num_threads(threads)
  {
    unsigned long local = 0;
    while (omp_get_wtime() < end)
      for (int k = 0; k < 10000; ++k) local += static_cast<unsigned long>(k);
    sink += local;
  }
  return sink == 1 ? 1 : 0;
}
