// `tune init`'s kernel parameter: where the probe run's ranks ran an OpenBLAS kernel older than
// the CPU, or a variable forced one, the core types this CPU runs correctly (each checked,
// tuner/launch/kernel_checks.h) become a `type: kernel` parameter set as OPENBLAS_CORETYPE,
// first among the study's parameters, its comment giving each check's speed against the job's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "probes/library_report.h"
#include "tuner/init/init_plan.h"
#include "tuner/launch/kernel_checks.h"

namespace tune::tuner {

// The checks for the OpenBLAS the ranks map, when its kernel is older than the CPU or forced;
// none otherwise (a current library gets no parameter and no note).
std::optional<KernelOffer> check_probed_kernels(const probes::LibrariesSummary& libraries);

// Lines for init's output: what the checks found.
std::vector<std::string> kernel_offer_lines(const KernelOffer& offer);

// Adds the parameter (and its OPENBLAS_CORETYPE entry) to `plan` when `offer` offers a core type.
void plan_kernel_param(InitPlan& plan, const probes::LibrariesSummary& libraries,
                       const KernelOffer& offer);

}  // namespace tune::tuner
