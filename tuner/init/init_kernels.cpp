#include "tuner/init/init_kernels.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tuner/base/text.h"

namespace tune::tuner {

namespace {

constexpr const char* k_param = "openblas_coretype";
constexpr const char* k_variable = "OPENBLAS_CORETYPE";

std::string forced_value(const probes::LibrariesSummary& libraries) {
  const auto it = libraries.forcing_env.find(k_variable);
  return it == libraries.forcing_env.end() ? "" : printable(it->second, 64);
}

}  // namespace

std::optional<KernelOffer> check_probed_kernels(const probes::LibrariesSummary& libraries) {
  const probes::LibraryUse* stale = libraries.stale_openblas();
  if (stale == nullptr) return std::nullopt;
  return check_openblas_kernels(stale->path, probes::read_cpu_flags(), forced_value(libraries));
}

std::vector<std::string> kernel_offer_lines(const KernelOffer& offer) {
  std::vector<std::string> out;
  std::vector<std::string> said;
  for (const auto& core : offer.offered) said.push_back(offer.comment(core));
  out.push_back(
      fmt::format("{} checked (DGEMM and SGEMM against a reference): {}", k_variable,
                  said.empty() ? "no core type passed" : fmt::format("{}", fmt::join(said, "; "))));
  if (!offer.refused.empty())
    out.push_back(fmt::format("{} refused: {}", k_variable, fmt::join(offer.refused, "; ")));
  return out;
}

void plan_kernel_param(InitPlan& plan, const probes::LibrariesSummary& libraries,
                       const KernelOffer& offer) {
  const probes::LibraryUse* stale = libraries.stale_openblas();
  if (stale == nullptr || offer.offered.empty()) return;
  InitParam p;
  p.name = k_param;
  p.knob = k_param;
  p.where = fmt::format("env {}", k_variable);
  p.kernel_file = offer.library;
  p.choices.push_back(std::monostate{});
  std::vector<std::string> said;
  for (const auto& core : offer.offered) {
    p.choices.push_back(core);
    said.push_back(offer.comment(core));
  }
  const std::string forced = forced_value(libraries);
  p.comment = fmt::format(
      "the kernel OpenBLAS runs; null: as the environment has it ({}). Checked here: {}",
      forced.empty() ? printable(stale->core, 64) + ", its own choice"
                     : k_variable + std::string("=") + forced,
      fmt::join(said, "; "));
  // First: the knob acts on the library the ranks' time is in.
  plan.params.insert(plan.params.begin(), std::move(p));
  plan.env.emplace_back(k_variable, std::string("{") + k_param + "}");
  // What a rank wrote: untrusted bytes, made printable UTF-8 before they reach the study file.
  plan.header.push_back(printable(stale->text) + ": the study tries the core types checked here (" +
                        k_variable + ")");
}

}  // namespace tune::tuner
