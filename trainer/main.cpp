// tune-trainer: parses flags, starts MPI (singleton when not launched by mpirun) and trains.
// Bad flags print one line and exit 2 before MPI starts; other errors exit 1, found collectively
// (a rank without a CUDA device included) so that the rank that failed says why and no rank
// waits for it.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "trainer/gpu.h"
#include "trainer/options.h"
#include "trainer/train.h"

namespace {

// Before MPI_Init the rank is only known from the launcher's environment; print errors once.
bool launcher_rank0() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(name)) return std::string(v) == "0";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tune::trainer;
  auto options = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!options) {
    if (options.error() == "help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    if (launcher_rank0())
      std::fprintf(stderr, "tune-trainer: error: %s\n", options.error().c_str());
    return 2;
  }
  apply_thread_settings(*options);

  // The comm thread of --double-buffering makes MPI calls while the main thread waits.
  const int required = options->double_buffering ? MPI_THREAD_SERIALIZED : MPI_THREAD_FUNNELED;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, required, &provided);
  if (provided < required) {
    if (launcher_rank0())
      std::fprintf(stderr, "tune-trainer: error: --double-buffering needs MPI_THREAD_SERIALIZED\n");
    MPI_Finalize();
    return 1;
  }
  int rc = 1;
  try {
    rc = options->device == Device::cuda ? run_training_cuda(*options, MPI_COMM_WORLD)
                                         : run_training(*options, MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune-trainer: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
