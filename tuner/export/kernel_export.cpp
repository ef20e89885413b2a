#include "tuner/export/kernel_export.h"

#include "probes/library_report.h"
#include "tuner/base/install_layout.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {

namespace {

constexpr const char* k_variable = "OPENBLAS_CORETYPE";

// The OpenBLAS the trial's ranks mapped, else the parameter's `file:`, else the soname.
std::string library_of(const StudySpec& spec, const search::FrozenTrial& trial) {
  if (const auto it = trial.system_attrs.find(k_attr_probe_libraries);
      it != trial.system_attrs.end())
    if (const auto s = probes::LibrariesSummary::from_json(*it))
      for (const auto& u : s->libraries)
        if (u.kind == "openblas" && !u.path.empty()) return u.path;
  for (const auto& k : spec.kernel_params)
    if (!k.file.empty()) return k.file;
  return "libopenblas.so.0";
}

}  // namespace

std::string kernel_checks(const StudySpec& spec, const search::FrozenTrial& trial,
                          const std::map<std::string, std::string>& env_set) {
  if (spec.kernel_params.empty()) return "";
  const auto it = env_set.find(k_variable);
  if (it == env_set.end()) return "";
  const std::string core = it->second;
  const std::string checker = sibling_program("tune-kernel-check").string();
  std::string s =
      "\n# The trial chose OpenBLAS's " + printable(core) +
      " kernels, checked on the tuned node: check that this node's\n"
      "# OpenBLAS runs them and computes right with them (a CPU without their instructions "
      "fails here).\n"
      "tune_kernel_check=$(command -v tune-kernel-check || echo " +
      bash_quote(checker.empty() ? "tune-kernel-check" : checker) +
      ")\n"
      "if [ -x \"$tune_kernel_check\" ]; then\n"
      "  " +
      std::string(k_variable) + "=" + bash_quote(core) + " \"$tune_kernel_check\" --expect " +
      bash_quote(core) + " " + bash_quote(library_of(spec, trial)) +
      " || { echo \"error: " + std::string(k_variable) +
      " is not right for this node; run tune on it\" >&2; exit 1; }\n"
      "else\n"
      "  echo \"warning: tune-kernel-check not found: " +
      std::string(k_variable) +
      " is not checked on this node\" >&2\n"
      "fi\n";
  return s;
}

}  // namespace tune::tuner
