#include "probes/learned_duty.h"

#include <algorithm>
#include <cmath>

#include "probes/knob_catalog.h"

namespace tune::probes {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The median of the loads of `sets` (each sorted), each divided by its divisor: without a copy
// when there is one set (the common case: one cpuset size and thread count), so a prediction
// costs the same however many trials measured it. Equal to median_of over the quotients.
double median_of_sets(const std::vector<std::pair<const std::vector<double>*, int>>& sets) {
  if (sets.size() == 1) {
    const std::vector<double>& v = *sets.front().first;
    const double d = sets.front().second;
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] / d : (v[n / 2 - 1] / d + v[n / 2] / d) / 2;
  }
  std::vector<double> all;
  for (const auto& [loads, d] : sets)
    for (double l : *loads) all.push_back(d == 1 ? l : l / d);
  return median_of(std::move(all));
}

double round3(double x) { return std::round(x * 1000) / 1000; }

// Whether the monitor tells this group's threads apart (probes/sustained.h): the rank's own
// thread, its child processes, the runtimes' threads and "other" always; a pool's threads where
// the program names them (the bundled trainer's tt-* names) or where the monitor has named them
// before (`seen`: the groups measured). The threads of any other predicted pool (an opaque
// program's OpenBLAS or torch intra-op team) land in "other".
bool named_by_monitor(const std::string& group, const std::string& program,
                      const std::set<std::string>& seen) {
  if (group == "main" || group == "dataloader_workers" || group == "other" ||
      group == k_runtime_group)
    return true;
  if (std::find(k_group_names.begin(), k_group_names.end(), group) == k_group_names.end())
    return false;
  return program == "tune-trainer" || seen.contains(group);
}

// The threads a prediction gives the pools the monitor cannot name: the key of "other".
int unnamed_threads(const std::vector<ThreadGroup>& groups, const std::string& program,
                    const std::set<std::string>& seen) {
  int n = 0;
  for (const ThreadGroup& g : groups)
    if (!named_by_monitor(g.name, program, seen)) n += g.threads;
  return n;
}

}  // namespace

nlohmann::json duty_record(const Prediction* predicted,
                           const std::map<std::string, DutyCycle>& measured) {
  std::map<std::string, int> counts;
  int pus = 0;
  if (predicted != nullptr && !predicted->ranks.empty()) {
    pus = static_cast<int>(predicted->ranks.front().cpuset.size());
    for (const ThreadGroup& g : predicted->ranks.front().groups) counts[g.name] += g.threads;
    std::set<std::string> seen;
    for (const auto& [name, d] : measured) seen.insert(name);
    counts["other"] = unnamed_threads(predicted->ranks.front().groups, predicted->program, seen);
  }
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [name, d] : measured) {
    const auto it = counts.find(name);
    groups[name] = {{"predicted_threads", it == counts.end() ? 0 : it->second},
                    {"threads", round3(d.threads)},
                    {"runnable", round3(d.runnable)},
                    {"cpu", round3(d.cpu)},
                    {"load", round3(d.threads * d.runnable)}};
  }
  return {{"schema_version", k_duty_record_schema_version},
          {"pus", pus},
          {"groups", std::move(groups)}};
}

bool LearnedDuty::add(const nlohmann::json& record) {
  if (!record.is_object()) return false;
  const auto version = record.find("schema_version");
  if (version == record.end() || !version->is_number_integer() ||
      version->get<int>() != k_duty_record_schema_version)
    return false;
  const auto groups = record.find("groups");
  if (groups == record.end() || !groups->is_object() || groups->empty()) return false;
  const auto pus_it = record.find("pus");
  const int pus = pus_it != record.end() && pus_it->is_number_integer() ? pus_it->get<int>() : 0;
  for (const auto& [name, g] : groups->items()) {
    if (!g.is_object()) continue;
    const auto n = g.find("predicted_threads");
    const auto load = g.find("load");
    if (n == g.end() || load == g.end() || !n->is_number_integer() || !load->is_number()) continue;
    auto& loads = m_loads[name][{pus, n->get<int>()}];
    const double l = std::max(0.0, load->get<double>());
    loads.insert(std::upper_bound(loads.begin(), loads.end(), l), l);  // kept sorted
  }
  m_trials += 1;
  return true;
}

std::optional<double> LearnedDuty::load(const std::string& group, int threads, int pus) const {
  const auto it = m_loads.find(group);
  if (it == m_loads.end()) return std::nullopt;
  // Pass 0 looks at this cpuset size only, pass 1 at any; a team's (the OpenMP, BLAS, OpenCV or
  // torch intra-op pool) duty is never carried to another cpuset size: libgomp spins at its
  // barriers only while the team fits its PUs, so 60% runnable on 2 PUs says nothing of 1.
  if (group == "other") {
    const auto o = other(threads, pus);
    return o ? std::optional<double>(o->load) : std::nullopt;
  }
  const KnobPool* kp = knob_catalog().pool(group);
  const bool team = kp != nullptr && (kp->busy == PoolBusy::turns || kp->busy == PoolBusy::spin);
  for (int pass = 0; pass < (team ? 1 : 2); ++pass) {
    std::vector<std::pair<const std::vector<double>*, int>> same, per_thread;
    for (const auto& [key, loads] : it->second) {
      if (pass == 0 && key.first != pus) continue;
      if (key.second == threads) same.emplace_back(&loads, 1);
      if (key.second > 0) per_thread.emplace_back(&loads, key.second);
    }
    if (!same.empty()) return median_of_sets(same);
    if (threads > 0 && !per_thread.empty()) return threads * median_of_sets(per_thread);
  }
  if (threads <= 0) return 0.0;
  return std::nullopt;
}

std::optional<LearnedDuty::Other> LearnedDuty::other(int threads, int pus) const {
  const auto it = m_loads.find("other");
  if (it == m_loads.end()) return std::nullopt;
  // "other" mixes what the monitor cannot name (a script's intra-op team, its communication and
  // helper threads, MPI's), so the count the prediction gave it does not scale it, and another
  // cpuset size says nothing (its spinning depends on the PUs as a team's does). On this size:
  // the same count; else the most below it, the threads beyond keeping their prior count; else
  // the fewest above it, less one runnable thread for each thread too many (the most that
  // thread can have been: what is left is the helpers' share, which the extra threads' queue
  // inflated; measured on a torch script: 1.8 per rank beside a second intra-op thread, 1.3
  // without it).
  const std::vector<double>* below = nullptr;
  const std::vector<double>* above = nullptr;
  int below_n = -1, above_n = 0;
  for (const auto& [key, loads] : it->second) {
    if (key.first != pus) continue;
    if (key.second <= threads && key.second > below_n) {
      below = &loads;
      below_n = key.second;
    } else if (key.second > threads && (above == nullptr || key.second < above_n)) {
      above = &loads;
      above_n = key.second;
    }
  }
  if (below != nullptr) return Other{median_of_sets({{below, 1}}), below_n};
  if (above != nullptr)
    return Other{std::max(0.0, median_of_sets({{above, 1}}) - (above_n - threads)), threads};
  return std::nullopt;
}

std::vector<std::string> LearnedDuty::groups() const {
  std::vector<std::string> out;
  for (const auto& [name, counts] : m_loads) out.push_back(name);
  return out;
}

void apply_learned_duty(const Topology& topo, Prediction& prediction, const LearnedDuty& learned,
                        double ratio) {
  if (learned.trials() == 0) return;
  const std::vector<std::string> measured_groups = learned.groups();
  const std::set<std::string> seen(measured_groups.begin(), measured_groups.end());
  for (RankPrediction& r : prediction.ranks) {
    const int pus = static_cast<int>(r.cpuset.size());
    // The pools the monitor cannot name are measured together as "other", keyed by how many
    // threads the prediction gave them: once that is learned it replaces their prior counts.
    // Measured with fewer, the threads beyond keep their prior share.
    const int unnamed = unnamed_threads(r.groups, prediction.program, seen);
    const auto measured = learned.other(unnamed, pus);
    const auto other = measured ? std::optional<double>(measured->load) : std::optional<double>();
    const double beyond =
        measured && unnamed > 0 ? static_cast<double>(unnamed - measured->threads) / unnamed : 1.0;
    std::set<std::string> named;
    for (ThreadGroup& g : r.groups) {
      named.insert(g.name);
      if (!named_by_monitor(g.name, prediction.program, seen)) {
        if (measured) g.load *= beyond;
      } else if (auto l = learned.load(g.name, g.threads, pus)) {
        g.load = *l;
      }
    }
    // Groups the model does not predict here (threads it does not name, a pool it counts as
    // none) at what they measured when the model predicted as many unnamed threads.
    for (const std::string& name : learned.groups()) {
      if (named.contains(name)) continue;
      const auto l = name == "other" ? other : learned.load(name, 0, pus);
      if (!l || *l <= 0) continue;
      r.groups.push_back(ThreadGroup{name, 0, 0, "measured",
                                     "threads the model does not predict, as measured", *l});
    }
  }
  prediction.oversubscribed_ratio = ratio;
  prediction.basis = "duty cycles of " + std::to_string(learned.trials()) + " earlier trial" +
                     (learned.trials() == 1 ? "" : "s");
  summarize_prediction(topo, prediction);
}

}  // namespace tune::probes
