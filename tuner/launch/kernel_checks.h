// The BLAS kernels tune may offer a job: each core type this CPU can run, checked in a child
// (tune-kernel-check, probes/kernel_check.c) with the library the job maps, against the kernel the
// job runs as it is. Only a core type that ran, that the library then said it runs, and whose
// DGEMM and SGEMM results are within the stated bound of a long-double reference is offered.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "probes/blas_kernels.h"

namespace tune::tuner {

struct KernelOffer {
  std::string library;         // the file checked
  probes::KernelCheck as_run;  // with the job's own setting (the variable as it has it, or none)
  std::vector<probes::KernelCheck> checked;  // every candidate, in the order tried
  std::vector<std::string> offered;          // passed, best instruction set first
  std::vector<std::string> refused;          // "Sapphirerapids: this OpenBLAS runs Cooperlake"

  // "SkylakeX: DGEMM 4.1x, SGEMM 3.7x, same result" against as_run; "" for a core not checked.
  std::string comment(const std::string& core) const;
  const probes::KernelCheck* check_of(const std::string& core) const;
};

// Checks OpenBLAS's core types for `library`: the candidates this CPU's flags can run at its two
// best levels (probes::runnable_core_types), each with OPENBLAS_CORETYPE set, and the job's own
// setting (`forced`: the variable's value in the job's environment, "" when unset). At most
// `max_offered` are offered. Runs `checker` (tune-kernel-check; found next to tune when empty).
// `only`: check these core types alone (those of them this CPU runs, at any level); empty: the
// CPU's two best levels.
KernelOffer check_openblas_kernels(const std::string& library, const std::set<std::string>& flags,
                                   const std::string& forced, std::size_t max_offered = 3,
                                   std::string checker = {},
                                   const std::vector<std::string>& only = {});

}  // namespace tune::tuner
