// The lines of an exported script that check, on the node it runs on, that the kernel the
// winning trial chose (a `type: kernel` parameter: OPENBLAS_CORETYPE, or oneDNN's
// ONEDNN_MAX_CPU_ISA) is still the one this node's library runs, and that it computes right
// there (tune-kernel-check --expect).
#pragma once

#include <map>
#include <string>

#include "search/trial.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// "" when the trial set no kernel (null: the environment's own, or no kernel parameter).
std::string kernel_checks(const StudySpec& spec, const search::FrozenTrial& trial,
                          const std::map<std::string, std::string>& env_set);

}  // namespace tune::tuner
