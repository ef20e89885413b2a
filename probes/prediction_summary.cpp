// summarize_prediction (probes/predict.h): from the ranks' thread groups to loads per rank and
// cpuset, the verdict (prior rules, or the chance of being over the limit once learned), idle
// cores and the one-line summary.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "probes/predict.h"

namespace tune::probes {
namespace {

std::string plural(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// The chance that more than `limit` of the members' threads are runnable at one instant, each
// thread runnable independently with its group's duty (load / threads; a group of threads the
// model does not count, ceil(load) threads). Compared with 0.5 it predicts what the observed
// verdict judges: whether the median of sampled runnable threads exceeds the limit.
double probability_over(const std::vector<const RankPrediction*>& members, double limit) {
  std::vector<double> dist = {1.0};  // dist[k]: P(k threads runnable)
  for (const RankPrediction* r : members) {
    for (const ThreadGroup& g : r->groups) {
      if (g.load <= 0 || g.name == k_runtime_group) continue;
      const int n = g.threads > 0 ? g.threads : static_cast<int>(std::ceil(g.load));
      const double p = std::clamp(g.load / n, 0.0, 1.0);
      for (int t = 0; t < n; ++t) {
        dist.push_back(0.0);
        for (std::size_t k = dist.size() - 1; k > 0; --k)
          dist[k] = dist[k] * (1 - p) + dist[k - 1] * p;
        dist[0] *= 1 - p;
      }
    }
  }
  double over = 0;
  for (std::size_t k = 0; k < dist.size(); ++k)
    if (static_cast<double>(k) > limit + 1e-9) over += dist[k];
  return over;
}

// Whole numbers as such ("6"), measured loads with one decimal ("2.4").
std::string threads_text(double load) {
  if (std::abs(load - std::round(load)) < 1e-9) return std::to_string(std::lround(load));
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << load;
  return s.str();
}

}  // namespace

void summarize_prediction(const Topology& topo, Prediction& out) {
  const int np = static_cast<int>(out.ranks.size());
  out.busy_threads = 0;
  out.load = 0;
  out.oversubscribed = false;
  out.cpusets.clear();
  out.idle_cores.clear();
  // The runtimes' own threads (group "runtime") are counted apart: no knob of the study
  // controls them, so they never make a setting oversubscribed on their own.
  auto runtime_load = [](const RankPrediction& r) {
    double l = 0;
    for (const ThreadGroup& g : r.groups)
      if (g.name == k_runtime_group) l += g.load;
    return l;
  };
  int runtime_threads = 0;
  for (RankPrediction& r : out.ranks) {
    r.load = 0;
    for (const ThreadGroup& g : r.groups) {
      if (g.name == k_runtime_group)
        runtime_threads = std::max(runtime_threads, g.threads);
      else
        r.load += g.load;
    }
    out.busy_threads += r.busy_threads;
    out.load += r.load;
  }
  // 4. Busy threads per distinct cpuset (ranks whose cpuset lies inside it).
  std::set<std::vector<int>> distinct;
  for (const RankPrediction& r : out.ranks) distinct.insert(r.cpuset);
  for (const std::vector<int>& s : distinct) {
    CpusetLoad load;
    load.pus = s;
    std::set<int> cores;
    for (int pu : s) cores.insert(topo.core_of_pu(pu));
    load.cores = static_cast<int>(cores.size());
    for (const RankPrediction& r : out.ranks) {
      if (std::includes(s.begin(), s.end(), r.cpuset.begin(), r.cpuset.end())) {
        load.ranks.push_back(r.rank);
        load.busy_threads += r.busy_threads;
        load.load += r.load;
        load.runtime_load += runtime_load(r);
      }
    }
    const double limit = out.oversubscribed_ratio * static_cast<double>(s.size());
    if (out.basis.empty()) {
      load.oversubscribed = load.load > limit;
    } else {
      std::vector<const RankPrediction*> members;
      for (const RankPrediction& r : out.ranks)
        if (std::includes(s.begin(), s.end(), r.cpuset.begin(), r.cpuset.end()))
          members.push_back(&r);
      load.over_probability = probability_over(members, limit);
      load.oversubscribed = load.over_probability > 0.5;
    }
    out.oversubscribed = out.oversubscribed || load.oversubscribed;
    out.cpusets.push_back(std::move(load));
  }
  // Before any run of this layout was observed, the risk is the verdict's own: certain by the
  // rules, the learned chance of being over once duty cycles were measured.
  out.risk = out.oversubscribed ? 1.0 : 0.0;
  if (!out.basis.empty()) {
    out.risk = 0;
    for (const CpusetLoad& c : out.cpusets) out.risk = std::max(out.risk, c.over_probability);
  }
  out.at_risk = out.risk >= k_at_risk;
  out.risk_runs = 0;

  // 5. Idle cores: cores no cpuset covers, plus the unfilled share of each widest cpuset.
  std::set<int> covered;
  for (const CpusetLoad& c : out.cpusets)
    for (int pu : c.pus) covered.insert(topo.core_of_pu(pu));
  for (int c = 0; c < topo.core_count(); ++c)
    if (!covered.contains(c)) out.idle_cores.push_back(c);
  out.idle_core_count = static_cast<int>(out.idle_cores.size());
  for (const CpusetLoad& c : out.cpusets) {
    bool maximal = true;
    for (const CpusetLoad& o : out.cpusets)
      if (o.pus != c.pus && std::includes(o.pus.begin(), o.pus.end(), c.pus.begin(), c.pus.end()))
        maximal = false;
    if (maximal)
      out.idle_core_count += std::max(0, c.cores - static_cast<int>(std::lround(c.load)));
  }

  // 6. One line: the verdict, the worst cpuset, and the defaults that led there.
  std::ostringstream s;
  const CpusetLoad* worst = nullptr;
  for (const CpusetLoad& c : out.cpusets)
    if (worst == nullptr || c.load * static_cast<double>(worst->pus.size()) >
                                worst->load * static_cast<double>(c.pus.size()))
      worst = &c;
  s << (out.oversubscribed ? "oversubscribed: " : "ok: ") << plural(np, "rank") << ", "
    << threads_text(out.load) << " busy threads on " << plural(out.pus, "PU") << " (bind "
    << out.bind_to << ")";
  if (worst != nullptr && out.oversubscribed) {
    s << "; " << threads_text(worst->load) << " busy on cpuset " << format_cpu_list(worst->pus)
      << " (" << plural(static_cast<int>(worst->pus.size()), "PU") << ")";
    const std::string causes = prediction_causes(out, worst->ranks.front());
    if (!causes.empty()) s << "; rank " << worst->ranks.front() << ": " << causes;
  } else if (out.idle_core_count > 0) {
    s << "; " << plural(out.idle_core_count, "core") << " idle";
  }
  if (runtime_threads > 0)
    s << "; " << plural(runtime_threads, "runtime thread") << " per rank not counted (no knob "
      << "controls them)";
  if (!out.basis.empty()) s << "; " << out.basis;
  out.summary = s.str();
}

}  // namespace tune::probes
