// The kernels tune may offer a job: each OpenBLAS core type (or oneDNN instruction set) this CPU
// can run, checked in a child (tune-kernel-check, probes/kernel_check.c) with the library the job
// maps, against the kernel the job runs as it is. Only a kernel that ran, that the library then
// said it runs, and whose GEMM results (DGEMM and SGEMM; oneDNN's SGEMM) are within the stated
// bound of a long-double reference is offered.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "probes/blas_kernels.h"

namespace tune::tuner {

struct KernelOffer {
  std::string kind = "openblas";  // the library kind (probes::kernel_libraries)
  std::string library;            // the file checked
  probes::KernelCheck as_run;     // with the job's own setting (the variable as it has it, or none)
  std::vector<probes::KernelCheck> checked;  // every candidate, in the order tried
  std::vector<std::string> offered;          // passed, best instruction set first
  std::vector<std::string> refused;          // "Sapphirerapids: this OpenBLAS runs Cooperlake"

  // "SkylakeX: DGEMM 4.1x, SGEMM 3.7x, same result" (oneDNN: "AVX2: SGEMM 0.9x, same result")
  // against as_run; "" for a kernel not checked.
  std::string comment(const std::string& core) const;
  const probes::KernelCheck* check_of(const std::string& core) const;
};

// Checks the kernels of `kind` ("openblas", "onednn") for `library`: by default the CPU's best
// candidates (OpenBLAS: the core types its flags run at their two best levels; oneDNN: its best
// instruction set, AVX512_CORE and the best AVX2 one), each with the library's variable set, and
// the job's own setting (`forced`: the variable's value in the job's environment, "" when
// unset). At most `max_offered` are offered. Runs `checker` (tune-kernel-check; found next to
// tune when empty). `only`: check these alone (those of them this CPU runs, at any level).
KernelOffer check_kernels(const std::string& kind, const std::string& library,
                          const std::set<std::string>& flags, const std::string& forced,
                          std::size_t max_offered = 3, std::string checker = {},
                          const std::vector<std::string>& only = {});

inline KernelOffer check_openblas_kernels(const std::string& library,
                                          const std::set<std::string>& flags,
                                          const std::string& forced, std::size_t max_offered = 3,
                                          std::string checker = {},
                                          const std::vector<std::string>& only = {}) {
  return check_kernels("openblas", library, flags, forced, max_offered, std::move(checker), only);
}

}  // namespace tune::tuner
