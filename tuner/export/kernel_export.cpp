#include "tuner/export/kernel_export.h"

#include "probes/blas_kernels.h"
#include "probes/library_report.h"
#include "tuner/base/install_layout.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {

namespace {

// The library of `k` the trial's ranks mapped, else the parameter's `file:`, else the soname.
std::string library_of(const StudySpec::KernelParam& k, const probes::KernelLibrary& library,
                       const search::FrozenTrial& trial) {
  if (const auto it = trial.system_attrs.find(k_attr_probe_libraries);
      it != trial.system_attrs.end())
    if (const auto s = probes::LibrariesSummary::from_json(*it))
      for (const auto& u : s->libraries)
        if (u.kind == library.kind && !u.path.empty()) return u.path;
  return k.file.empty() ? std::string(library.default_file) : k.file;
}

}  // namespace

std::string kernel_checks(const StudySpec& spec, const search::FrozenTrial& trial,
                          const std::map<std::string, std::string>& env_set) {
  std::string s;
  const std::string checker = sibling_program("tune-kernel-check").string();
  for (const auto& k : spec.kernel_params) {
    const probes::KernelLibrary* library = probes::kernel_library(k.library);
    if (library == nullptr) continue;
    const std::string variable(library->variable);
    const auto it = env_set.find(variable);
    if (it == env_set.end()) continue;
    const std::string core = it->second;
    const std::string product(library->product);
    if (s.empty())
      s = "\ntune_kernel_check=$(command -v tune-kernel-check || echo " +
          bash_quote(checker.empty() ? "tune-kernel-check" : checker) + ")\n";
    s += "# The trial chose " + product + "'s " + printable(core) +
         " kernels, checked on the tuned node: check that this node's\n# " + product +
         " runs them and computes right with them (a CPU without their instructions fails "
         "here).\n"
         "if [ -x \"$tune_kernel_check\" ]; then\n"
         "  " +
         variable + "=" + bash_quote(core) + " \"$tune_kernel_check\"" +
         (library->kind == "onednn" ? " --onednn" : "") + " --expect " + bash_quote(core) + " " +
         bash_quote(library_of(k, *library, trial)) + " || { echo \"error: " + variable +
         " is not right for this node; run tune on it\" >&2; exit 1; }\n"
         "else\n"
         "  echo \"warning: tune-kernel-check not found: " +
         variable +
         " is not checked on this node\" >&2\n"
         "fi\n";
  }
  return s;
}

}  // namespace tune::tuner
