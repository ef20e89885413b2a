// The CUDA path of tune-trainer (--device cuda): cuBLAS GEMMs, a few kernels and NCCL, in the
// plugin libtune_trainer_gpu.so that device.cpp dlopen()s on first use (once, thread-safe), so
// CPU trials load no CUDA library. One rank drives one device.
// Design: docs/design-notes.md#trainergpuh
#pragma once

#include <mpi.h>

#include <cstddef>
#include <expected>
#include <string>

#include "trainer/options.h"

namespace tune::trainer {

// True when the CUDA plugin sits next to the executable and loads.
bool cuda_compiled();

// The number of usable CUDA devices (>= 1), or a one-line reason: "--device cuda: no CUDA device"
// when the plugin loads but the machine has none, "... not compiled in ..." when the build made no
// plugin, "... cannot load ..." when the plugin or one of its libraries fails to load.
std::expected<int, std::string> cuda_device_count();

// Trains per options on the GPU (needs cuda_device_count() >= 1); returns the exit code.
int run_training_cuda(const Options& options, MPI_Comm comm);

// The plugin's side of the boundary. Bump k_gpu_plugin_abi when GpuPlugin or Options changes.
inline constexpr int k_gpu_plugin_abi = 2;
inline constexpr const char* k_gpu_plugin_file = "libtune_trainer_gpu.so";
inline constexpr const char* k_gpu_plugin_entry = "tune_trainer_gpu_plugin";

struct GpuPlugin {
  int abi;                   // k_gpu_plugin_abi of the build that made the plugin
  std::size_t options_size;  // sizeof(Options) there, a cheap guard against header drift
  // Device count (>= 1), or 0 with a one-line reason written to error (NUL-terminated).
  int (*device_count)(char* error, std::size_t capacity);
  // run_training_cuda; exceptions do not cross the boundary (the plugin prints and aborts).
  int (*run_training)(const Options* options, MPI_Comm comm);
};

}  // namespace tune::trainer

// Defined by the plugin only (the one symbol it exports).
extern "C" __attribute__((visibility("default"))) const tune::trainer::GpuPlugin*
tune_trainer_gpu_plugin();
