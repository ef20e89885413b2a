// nccl-tests-style allreduce benchmark: for each algorithm and wire dtype, and for Open MPI's
// MPI_Allreduce called directly (the peer), the median time of an in-place sum of an fp32
// gradient of S bytes, 4 KB .. 64 MB. Run under mpirun; rank 0 prints.
//   time  = median over timed iterations of the slowest rank's time (a barrier precedes each)
//   algbw = S / time            (S = fp32 bytes of the gradient, also for fp16 and 1bit)
//   busbw = algbw * 2(n-1)/n    (n ranks; the per-rank traffic of a bandwidth-optimal allreduce)
// The buffer is one bucket (bucket = S), so each row measures the algorithm, not the fusion.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainer/allreduce.h"

using namespace tune::trainer;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Variant {
  std::string name;
  bool raw_mpi;  // the peer: MPI_Allreduce on the float buffer, no tune code involved
  Algorithm algo;
  GradDtype dtype;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::size_t max_bytes = std::size_t(64) << 20;
  if (argc > 1) max_bytes = std::stoull(argv[1]) << 20;

  std::vector<Variant> variants = {{"MPI_Allreduce", true, Algorithm::mpi, GradDtype::fp32}};
  for (auto [an, a] : {std::pair{"mpi", Algorithm::mpi}, std::pair{"ring", Algorithm::ring},
                       std::pair{"rabenseifner", Algorithm::rabenseifner},
                       std::pair{"hierarchical", Algorithm::hierarchical}})
    for (auto [dn, d] : {std::pair{"fp32", GradDtype::fp32}, std::pair{"fp16", GradDtype::fp16},
                         std::pair{"1bit", GradDtype::one_bit}})
      variants.push_back({std::string(an) + "/" + dn, false, a, d});

  Communicator comm(MPI_COMM_WORLD);
  const double bus_factor = 2.0 * (p - 1) / p;
  if (rank == 0) {
    std::printf("# tune-trainer allreduce benchmark, %d ranks; time = median us; GB/s = 1e9 B/s\n",
                p);
    std::printf(
        "# algbw = bytes/time, busbw = algbw * 2(n-1)/n; vs MPI = busbw / MPI_Allreduce busbw\n");
    std::printf("%-24s %10s %12s %9s %9s %8s\n", "variant", "bytes", "time(us)", "algbw", "busbw",
                "vs MPI");
  }
  // Size-major: at each size every variant runs in turn (the peer first), so slow phases of a
  // shared machine hit all of them alike; a global warm-up first sets up the connections.
  std::vector<float> warm(1 << 16, 1.f);
  for (int i = 0; i < 50; ++i)
    MPI_Allreduce(MPI_IN_PLACE, warm.data(), static_cast<int>(warm.size()), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  std::vector<std::size_t> sizes;
  for (std::size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) sizes.push_back(bytes);
  std::vector<std::vector<double>> median_time(variants.size(), std::vector<double>(sizes.size()));
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const std::size_t bytes = sizes[s], n = bytes / sizeof(float);
    std::vector<float> data(n), fresh(n);
    for (std::size_t i = 0; i < n; ++i)
      fresh[i] = static_cast<float>((i * 13 + rank) % 101) * 1e-3f - 0.05f;
    const int iters =
        static_cast<int>(std::clamp<std::size_t>((std::size_t(256) << 20) / bytes, 5, 40));
    for (std::size_t v = 0; v < variants.size(); ++v) {
      const Variant& var = variants[v];
      GradientReducer reducer(comm, n, var.algo, var.dtype, double(bytes) / (1 << 20) + 1.0);
      std::vector<double> times;
      for (int it = -3; it < iters; ++it) {  // three warm-up iterations
        std::memcpy(data.data(), fresh.data(), bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = std::chrono::steady_clock::now();
        if (var.raw_mpi)
          MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        else
          reducer.reduce(data.data());
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               slowest = 0;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it >= 0) times.push_back(slowest);
      }
      median_time[v][s] = median(times);
    }
  }
  if (rank == 0) {
    for (std::size_t v = 0; v < variants.size(); ++v)
      for (std::size_t s = 0; s < sizes.size(); ++s) {
        const double t = median_time[v][s], algbw = double(sizes[s]) / t / 1e9,
                     busbw = algbw * bus_factor;
        std::printf("%-24s %10zu %12.1f %9.3f %9.3f %7.2fx\n", variants[v].name.c_str(), sizes[s],
                    t * 1e6, algbw, busbw, median_time[0][s] / t);
      }
  }
  MPI_Finalize();
  return 0;
}
