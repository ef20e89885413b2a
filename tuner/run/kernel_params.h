// The choices of a study's `type: kernel` parameters (study_file.h, StudySpec::KernelParam):
// those stored with the study when it was created, else the core types this machine's OpenBLAS
// runs correctly, each checked numerically (tuner/launch/kernel_checks.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/base/result.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

struct KernelResolution {
  std::vector<std::string> lines;                     // what was checked, to print
  nlohmann::json choices = nlohmann::json::object();  // param -> [core, ...]: to store
};

// Fills `spec.space` for each unresolved kernel parameter: from `stored` (the study's
// k_attr_study_kernel_choices, null for a new study) when it names the parameter, else by
// checking. An error names the parameter when a stored choice is not a core type.
Result<KernelResolution> resolve_kernel_params(StudySpec& spec, const nlohmann::json& stored);

}  // namespace tune::tuner
