// A program that spends its CPU time in OpenBLAS, for the CPU profile's live tests:
// `probes_dgemm --threads N --seconds S` runs N threads calling cblas_dgemm (each call on the
// calling thread: OpenBLAS's own pool is set to one) for S seconds, then exits 0.
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int threads = 1;
  double seconds = 1.0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
  }
  if (threads < 1 || threads > 64 || seconds <= 0 || seconds > 120) {
    std::fprintf(stderr, "probes_dgemm: expected --threads 1..64 --seconds 0<S<=120\n");
    return 2;
  }
  openblas_set_num_threads(1);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto work = [end] {
    constexpr int n = 96;
    std::vector<double> a(n * n, 1.0), b(n * n, 0.5), c(n * n, 0.0);
    while (std::chrono::steady_clock::now() < end)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(),
                  n, 0.0, c.data(), n);
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return 0;
}
