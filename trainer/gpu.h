// The CUDA path of tune-trainer (--device cuda): the MLP's forward and backward as cuBLAS GEMMs
// plus a few small kernels (bias, ReLU, softmax cross-entropy, momentum SGD), gradients summed
// with NCCL (--allreduce nccl) or, with any other --allreduce, copied to the host and reduced by
// the CPU GradientReducer. One rank drives one device (rank % device count).
//
// It is compiled only when CMake finds nvcc, cuBLAS and NCCL (TUNE_TRAINER_CUDA); otherwise these
// functions report that the path is not compiled in. The functions are called from main's thread.
#pragma once

#include <mpi.h>

#include <expected>
#include <string>

#include "trainer/options.h"

namespace tune::trainer {

// True when this binary was built with the CUDA path.
bool cuda_compiled();

// The number of usable CUDA devices (>= 1), or a one-line reason: "no CUDA device" when the path
// is compiled in but the machine has none, "not compiled in" when it was built without CUDA.
std::expected<int, std::string> cuda_device_count();

// Trains per options on the GPU (needs cuda_device_count() >= 1); returns the exit code.
int run_training_cuda(const Options& options, MPI_Comm comm);

}  // namespace tune::trainer
