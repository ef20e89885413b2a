// Stand-ins for the CUDA path when the binary is built without it (see gpu.h); gpu.cu provides the
// real definitions when TUNE_TRAINER_CUDA is set.
#include "trainer/gpu.h"

#ifndef TUNE_TRAINER_CUDA
#include <cstdio>

namespace tune::trainer {

bool cuda_compiled() { return false; }

std::expected<int, std::string> cuda_device_count() {
  return std::unexpected(
      std::string("--device cuda: the CUDA path is not compiled in (rebuild with nvcc, cuBLAS and "
                  "NCCL installed and "
                  "-DTUNE_WITH_CUDA=ON)"));
}

int run_training_cuda(const Options&, MPI_Comm) {
  std::fprintf(stderr, "tune-trainer: error: %s\n", cuda_device_count().error().c_str());
  return 1;
}

}  // namespace tune::trainer
#endif
