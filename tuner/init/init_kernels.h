// `tune init`'s kernel parameters: where the probe run's ranks ran an OpenBLAS kernel (or a
// oneDNN instruction set) older than the CPU, or a variable forced one, the kernels this CPU
// runs correctly (each checked, tuner/launch/kernel_checks.h) become a `type: kernel` parameter
// set as the library's variable (OPENBLAS_CORETYPE, ONEDNN_MAX_CPU_ISA), first among the
// study's parameters, its comment giving each check's speed against the job's.
#pragma once

#include <string>
#include <vector>

#include "probes/library_report.h"
#include "tuner/init/init_plan.h"
#include "tuner/launch/kernel_checks.h"

namespace tune::tuner {

// The checks for each kernel library the ranks map whose kernel is older than the CPU or
// forced; none otherwise (a current library gets no parameter and no note).
std::vector<KernelOffer> check_probed_kernels(const probes::LibrariesSummary& libraries);

// Lines for init's output: what the checks found.
std::vector<std::string> kernel_offer_lines(const KernelOffer& offer);

// Adds the parameter (and its variable's entry) to `plan` when `offer` offers a kernel.
void plan_kernel_param(InitPlan& plan, const probes::LibrariesSummary& libraries,
                       const KernelOffer& offer);

}  // namespace tune::tuner
