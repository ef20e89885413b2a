#include "probes/queue_cost.h"

#include <array>
#include <cmath>
#include <map>

namespace tune::probes {

bool is_spin_runtime(std::string_view library) {
  static constexpr std::array<std::string_view, 4> k_runtimes = {"libgomp", "libomp", "libiomp5",
                                                                 "libtbb"};
  for (const std::string_view r : k_runtimes)
    if (library == r) return true;
  return false;
}

QueueCost queue_cost(const std::vector<std::vector<LibraryShare>>& rank_libraries,
                     double nonvoluntary_per_s, int pus, bool queued,
                     const QueueCostOptions& options) {
  QueueCost c;
  c.judged = queued;
  std::map<std::string, double> spin;  // library -> summed share over the profiled ranks
  int profiled = 0;
  for (const auto& shares : rank_libraries) {
    if (shares.empty()) continue;
    profiled += 1;
    for (const LibraryShare& s : shares)
      if (is_spin_runtime(s.library) && std::isfinite(s.share) && s.share > 0)
        spin[s.library] += s.share;
  }
  c.spin_measured = profiled > 0;
  double largest = 0;
  for (const auto& [library, share] : spin) {
    c.spin_share += share / profiled;
    if (share > largest) {
      largest = share;
      c.spin_library = library;
    }
  }
  if (pus > 0 && std::isfinite(nonvoluntary_per_s) && nonvoluntary_per_s > 0)
    c.switches_per_pu_s = nonvoluntary_per_s / pus;
  c.spin = c.spin_measured && c.spin_share >= options.spin_share;
  c.preemption = c.switches_per_pu_s >= options.switches_per_pu_s;
  c.costly = queued && (c.spin || c.preemption);
  return c;
}

namespace {

std::string whole(double v) { return std::to_string(std::lround(v)); }

std::string per_pu(double switches) {
  return whole(switches) + " involuntary switches per PU-second";
}

}  // namespace

std::string queue_cost_text(const QueueCost& c, const QueueCostOptions& o) {
  if (!c.judged) return "";
  if (c.spin)
    return "it costs CPU time: the ranks spent " + whole(100 * c.spin_share) +
           "% of their CPU time spin-waiting in " + c.spin_library +
           (c.preemption ? ", and " + per_pu(c.switches_per_pu_s) : "");
  if (c.preemption)
    return "it costs CPU time: " + per_pu(c.switches_per_pu_s) +
           ", more than time slicing alone makes (" + whole(o.switches_per_pu_s) + ")";
  const std::string spin =
      c.spin_measured
          ? "no spin-waiting runtime held " + whole(100 * o.spin_share) + "% of the ranks' CPU time"
          : "spin-waiting not measured (CPU time per library not sampled)";
  return "no sign it costs the job: " + spin + " and " + per_pu(c.switches_per_pu_s) +
         " is what time slicing makes (helpers queued behind their rank, as pipelining does)";
}

}  // namespace tune::probes
