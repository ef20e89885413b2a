// The loader of the CUDA plugin (see gpu.h): finds libtune_trainer_gpu.so next to the running
// executable (the build tree), or in ../lib/tune (where `cmake --install` puts it) or ../lib,
// dlopen()s it on first use and forwards to its GpuPlugin table.
#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "trainer/gpu.h"
#include "trainer/run_common.h"

namespace tune::trainer {
namespace {

struct Loaded {
  const GpuPlugin* plugin = nullptr;
  std::string error;  // why plugin is null
};

// /proc/self/exe rather than argv[0]: the tuner and mpirun may start us through any path, and the
// test binaries that call cuda_device_count() sit in the same bin directory as the plugin.
std::filesystem::path find_plugin() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const auto prefix = exe.parent_path().parent_path();
  for (const auto& dir : {exe.parent_path(), prefix / "lib" / "tune", prefix / "lib"}) {
    auto candidate = dir / k_gpu_plugin_file;
    if (std::filesystem::exists(candidate, ec)) return candidate;
  }
  return {};
}

Loaded load() {
  const auto path = find_plugin();
  if (path.empty()) return {nullptr, "--device cuda: not compiled in (no nvcc/NCCL at build time)"};
  // RTLD_LOCAL: the plugin's own copy of the trainer core stays private to it. Never dlclose'd:
  // the CUDA runtime registers exit handlers that must outlive main.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return {nullptr, "--device cuda: cannot load " + path.string() + ": " + (why ? why : "?")};
  }
  using Entry = const GpuPlugin* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, k_gpu_plugin_entry));
  const GpuPlugin* plugin = entry ? entry() : nullptr;
  if (!plugin || plugin->abi != k_gpu_plugin_abi || plugin->options_size != sizeof(Options))
    return {nullptr, "--device cuda: " + path.string() +
                         " is from another build of tune-trainer (rebuild both together)"};
  return {plugin, {}};
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

bool cuda_compiled() { return loaded().plugin != nullptr; }

std::expected<int, std::string> cuda_device_count() {
  const Loaded& l = loaded();
  if (!l.plugin) return std::unexpected(l.error);
  char error[512] = {};
  const int n = l.plugin->device_count(error, sizeof error);
  if (n < 1) return std::unexpected(std::string(error));
  return n;
}

int run_training_cuda(const Options& options, MPI_Comm comm) {
  const Loaded& l = loaded();
  if (l.plugin) return l.plugin->run_training(&options, comm);
  // Collective, like every other setup error: the lowest rank that failed says why, once.
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  set_up_run(options, l.error, rank, world, comm);
  return 1;
}

}  // namespace tune::trainer
