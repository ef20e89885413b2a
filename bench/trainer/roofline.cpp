// Roofline for the default MLP (784-1000-1000-10) step at batch B per rank: the sgemm time of
// the step's GEMMs (measured here, one BLAS thread unless OPENBLAS_NUM_THREADS says otherwise)
// plus the measured fp32 gradient allreduce (ring, one 4 MB-bucketed pass) bound the samples/s:
//   bound = B * ranks / (t_gemm + t_allreduce)
// (every rank computes at once on its own core; everything that is not a GEMM or the allreduce,
// e.g. bias/ReLU/softmax, data and optimizer, counts as overhead against this bound).
// Run under mpirun -n 2; rank 0 prints one line of key=value pairs.
#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "trainer/allreduce.h"
#include "trainer/model.h"

using namespace tune::trainer;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int batch = 100;
  const int dims[] = {784, 1000, 1000, 10};
  std::vector<std::vector<float>> acts, weights, grads;
  for (int l = 0; l < 4; ++l) acts.emplace_back(std::size_t(batch) * dims[l], 0.01f);
  for (int l = 0; l < 3; ++l) {
    weights.emplace_back(std::size_t(dims[l]) * dims[l + 1], 0.02f);
    grads.emplace_back(std::size_t(dims[l]) * dims[l + 1], 0.f);
  }
  std::vector<float> dbuf(std::size_t(batch) * 1000, 0.01f), dbuf2(std::size_t(batch) * 1000, 0.f);
  double flops = 0;
  for (int l = 0; l < 3; ++l)
    flops += 6.0 * batch * dims[l] * dims[l + 1] - (l == 0 ? 2.0 * batch * dims[0] * dims[1] : 0);
  // The same GEMMs as Model::forward/backward (layer 0 needs no input gradient).
  auto step = [&] {
    for (int l = 0; l < 3; ++l)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, dims[l + 1], dims[l], 1.f,
                  acts[l].data(), dims[l], weights[l].data(), dims[l + 1], 0.f, acts[l + 1].data(),
                  dims[l + 1]);
    for (int l = 2; l >= 0; --l) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dims[l], dims[l + 1], batch, 1.f,
                  acts[l].data(), dims[l], dbuf.data(), dims[l + 1], 0.f, grads[l].data(),
                  dims[l + 1]);
      if (l > 0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, dims[l], dims[l + 1], 1.f,
                    dbuf.data(), dims[l + 1], weights[l].data(), dims[l + 1], 0.f, dbuf2.data(),
                    dims[l]);
    }
  };
  std::vector<double> gemm;
  for (int i = -3; i < 30; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);  // both ranks compute at once, as in training
    const auto t0 = Clock::now();
    step();
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (i >= 0) gemm.push_back(t);
  }
  const double t_gemm = median(gemm);

  Model model(ModelKind::mlp, {1000, 1000}, batch, 1);
  Communicator comm(MPI_COMM_WORLD);
  GradientReducer reducer(comm, model.num_params(), Algorithm::ring, GradDtype::fp32, 4.0);
  std::vector<double> ar;
  for (int i = -3; i < 30; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    reducer.reduce(model.grads());
    double t = std::chrono::duration<double>(Clock::now() - t0).count(), slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 0) ar.push_back(slowest);
  }
  const double t_ar = median(ar);
  double t_gemm_max = 0;
  MPI_Allreduce(&t_gemm, &t_gemm_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(
        "gemm_ms=%.3f gemm_gflops=%.1f allreduce_ms=%.3f bound_samples_per_sec=%.0f "
        "compute_only=%.0f\n",
        t_gemm_max * 1e3, flops / t_gemm_max / 1e9, t_ar * 1e3,
        double(batch) * p / (t_gemm_max + t_ar), double(batch) * p / t_gemm_max);
  MPI_Finalize();
  return 0;
}
