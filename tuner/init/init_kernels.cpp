#include "tuner/init/init_kernels.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>

#include "tuner/base/text.h"

namespace tune::tuner {

namespace {

// "openblas_coretype", "onednn_max_cpu_isa": the variable's name in lower case.
std::string param_name(const probes::KernelLibrary& library) {
  std::string out(library.variable);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string forced_value(const probes::LibrariesSummary& libraries,
                         const probes::KernelLibrary& library) {
  const auto it = libraries.forcing_env.find(std::string(library.variable));
  return it == libraries.forcing_env.end() ? "" : printable(it->second, 64);
}

}  // namespace

std::vector<KernelOffer> check_probed_kernels(const probes::LibrariesSummary& libraries) {
  std::vector<KernelOffer> out;
  for (const probes::KernelLibrary& library : probes::kernel_libraries())
    if (const probes::LibraryUse* stale = libraries.stale(library.kind))
      out.push_back(check_kernels(std::string(library.kind), stale->path, probes::read_cpu_flags(),
                                  forced_value(libraries, library)));
  return out;
}

std::vector<std::string> kernel_offer_lines(const KernelOffer& offer) {
  const probes::KernelLibrary& library = *probes::kernel_library(offer.kind);
  std::vector<std::string> out;
  std::vector<std::string> said;
  for (const auto& core : offer.offered) said.push_back(offer.comment(core));
  out.push_back(fmt::format("{} checked ({} against a reference): {}", library.variable,
                            offer.kind == "onednn" ? "SGEMM" : "DGEMM and SGEMM",
                            said.empty() ? fmt::format("no {} passed", library.kernel_word)
                                         : fmt::format("{}", fmt::join(said, "; "))));
  if (!offer.refused.empty())
    out.push_back(fmt::format("{} refused: {}", library.variable, fmt::join(offer.refused, "; ")));
  return out;
}

void plan_kernel_param(InitPlan& plan, const probes::LibrariesSummary& libraries,
                       const KernelOffer& offer) {
  const probes::KernelLibrary& library = *probes::kernel_library(offer.kind);
  const probes::LibraryUse* stale = libraries.stale(library.kind);
  if (stale == nullptr || offer.offered.empty()) return;
  const std::string name = param_name(library);
  const std::string variable(library.variable);
  InitParam p;
  p.name = name;
  p.knob = name;
  p.where = fmt::format("env {}", variable);
  p.kernel_file = offer.library;
  p.kernel_library = offer.kind;
  p.choices.push_back(std::monostate{});
  std::vector<std::string> said;
  for (const auto& core : offer.offered) {
    p.choices.push_back(core);
    said.push_back(offer.comment(core));
  }
  const std::string forced = forced_value(libraries, library);
  const std::string own = stale->core.empty() ? "" : printable(stale->core, 64) + ", ";
  p.comment = fmt::format(
      "the kernel {} runs; null: as the environment has it ({}). Checked here: {}", library.product,
      forced.empty() ? own + "its own choice" : variable + "=" + forced, fmt::join(said, "; "));
  // First: the knob acts on the library the ranks' time is in.
  plan.params.insert(plan.params.begin(), std::move(p));
  plan.env.emplace_back(variable, "{" + name + "}");
  // What a rank wrote: untrusted bytes, made printable UTF-8 before they reach the study file.
  plan.header.push_back(printable(stale->text) + ": the study tries the " +
                        std::string(library.kernel_word) + "s checked here (" + variable + ")");
}

}  // namespace tune::tuner
