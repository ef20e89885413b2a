#include "tuner/run/kernel_params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "probes/blas_kernels.h"
#include "tuner/launch/kernel_checks.h"
#include "tuner/study/open_study.h"

namespace tune::tuner {

namespace {

search::CategoricalDistribution* categorical(StudySpec& spec, const std::string& name) {
  for (auto& [n, d] : spec.space)
    if (n == name) return std::get_if<search::CategoricalDistribution>(&d);
  return nullptr;
}

}  // namespace

Result<KernelResolution> resolve_kernel_params(StudySpec& spec, const nlohmann::json& stored) {
  KernelResolution out;
  for (auto& k : spec.kernel_params) {
    if (k.resolved) continue;
    apply_stored_kernel_choices(spec, stored);
    if (k.resolved) continue;
    const probes::KernelLibrary* library = probes::kernel_library(k.library);
    if (library == nullptr)
      return std::unexpected(
          fmt::format("kernel parameter '{}': unknown library '{}'", k.name, k.library));
    if (stored.is_object() && stored.contains(k.name))
      return std::unexpected(
          fmt::format("the study's stored choices of kernel parameter '{}' are not {} {}s", k.name,
                      library->product, library->kernel_word));
    const std::string file = k.file.empty() ? std::string(library->default_file) : k.file;
    const std::string variable(library->variable);
    const char* forced = std::getenv(variable.c_str());
    const KernelOffer offer =
        check_kernels(k.library, file, probes::read_cpu_flags(), forced != nullptr ? forced : "",
                      k.candidates.empty() ? 3 : k.candidates.size(), {}, k.candidates);
    std::vector<search::ParamValue> choices = {std::monostate{}};
    nlohmann::json stored_choices = nlohmann::json::array();
    std::vector<std::string> said;
    for (const auto& core : offer.offered) {
      // The kernel the job already runs is what null gives.
      if (offer.as_run.ran && forced == nullptr && core == offer.as_run.core) continue;
      choices.push_back(core);
      stored_choices.push_back(core);
      said.push_back(offer.comment(core));
    }
    if (auto* c = categorical(spec, k.name)) c->choices = std::move(choices);
    k.resolved = true;
    out.choices[k.name] = stored_choices;
    const std::string own =
        offer.as_run.ran ? offer.as_run.core : "did not run (" + offer.as_run.failure + ")";
    out.lines.push_back(fmt::format(
        "kernel parameter {}: {} runs {} here{}; checked: {}{}", k.name, file, own,
        forced != nullptr ? fmt::format(" ({}={})", variable, forced) : "",
        said.empty() ? "none better" : fmt::format("{}", fmt::join(said, "; ")),
        offer.refused.empty() ? "" : fmt::format("; refused: {}", fmt::join(offer.refused, "; "))));
  }
  return out;
}

}  // namespace tune::tuner
