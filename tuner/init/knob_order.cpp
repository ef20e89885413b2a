#include "tuner/init/knob_order.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <vector>

#include "probes/blas_kernels.h"

namespace tune::tuner {

namespace {

// The library names `p` acts on.
std::set<std::string> libraries_of(const InitParam& p, const probes::KnobCatalog& catalog) {
  std::set<std::string> out;
  if (!p.kernel_file.empty()) {
    if (const auto* library = probes::kernel_library(p.kernel_library))
      out.insert(library->profile_names.begin(), library->profile_names.end());
    return out;
  }
  const probes::Knob* knob = catalog.find(p.knob);
  const probes::KnobPool* pool = knob != nullptr ? catalog.pool(knob->controls) : nullptr;
  if (pool == nullptr) return out;
  // The pool's own, and those of the pools that are the same threads, either side of an
  // `includes` (PyTorch's intra-op pool is its OpenMP team).
  for (const auto& other : catalog.pools())
    if (other.name == pool->name ||
        std::ranges::find(pool->includes, other.name) != pool->includes.end() ||
        std::ranges::find(other.includes, pool->name) != other.includes.end())
      out.insert(other.libraries.begin(), other.libraries.end());
  return out;
}

std::string percent(double share) { return fmt::format("{:.0f}%", 100 * share); }

}  // namespace

double param_time_share(const InitParam& p, const std::map<std::string, double>& library_time,
                        const probes::KnobCatalog& catalog) {
  double share = 0;
  for (const auto& name : libraries_of(p, catalog))
    if (const auto it = library_time.find(name); it != library_time.end()) share += it->second;
  return share;
}

void order_by_library_time(InitPlan& plan, const std::map<std::string, double>& library_time,
                           const probes::KnobCatalog& catalog) {
  if (library_time.empty()) return;
  std::vector<std::pair<double, std::size_t>> moved;
  for (std::size_t i = 0; i < plan.params.size(); ++i) {
    const double share = param_time_share(plan.params[i], library_time, catalog);
    if (share >= k_knob_time_share) moved.emplace_back(share, i);
  }
  if (moved.empty()) return;
  std::ranges::stable_sort(moved, [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<InitParam> ordered;
  std::set<std::size_t> taken;
  for (const auto& [share, i] : moved) {
    InitParam p = plan.params[i];
    std::vector<std::pair<double, std::string>> parts;
    for (const auto& name : libraries_of(p, catalog))
      if (const auto it = library_time.find(name); it != library_time.end() && it->second >= 0.01)
        parts.emplace_back(it->second, name);
    std::ranges::sort(parts, std::greater<>());
    std::vector<std::string> said;
    for (const auto& [s, name] : parts) said.push_back(name + " " + percent(s));
    p.comment += fmt::format("{}its libraries held {} of the ranks' CPU time in the probe run ({})",
                             p.comment.empty() ? "" : "; ", percent(share), fmt::join(said, ", "));
    ordered.push_back(std::move(p));
    taken.insert(i);
  }
  for (std::size_t i = 0; i < plan.params.size(); ++i)
    if (!taken.contains(i)) ordered.push_back(std::move(plan.params[i]));
  plan.params = std::move(ordered);
}

}  // namespace tune::tuner
