#include "tuner/judge/verdict_cost.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "probes/monitor.h"
#include "probes/predict.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/prediction_quality.h"
#include "tuner/judge/ranking.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;

const nlohmann::json* object_attr(const FrozenTrial& t, const char* attr) {
  const auto it = t.system_attrs.find(attr);
  return it != t.system_attrs.end() && it->is_object() ? &*it : nullptr;
}

// A trial as the comparison sees it: its placement and the threads of each pool.
struct Setting {
  const FrozenTrial* trial = nullptr;
  std::string placement;             // "2 ranks: 0 | 1"; "" when the prediction has none
  std::map<std::string, int> pools;  // group -> threads over the ranks (main, runtime left out)
};

Setting setting_of(const FrozenTrial& t) {
  Setting s{&t, "", {}};
  const auto* stored = object_attr(t, k_attr_probe_prediction);
  if (stored == nullptr) return s;
  const auto prediction = probes::prediction_from_json(*stored);  // untrusted: none when malformed
  if (!prediction || prediction->ranks.empty()) return s;
  std::vector<std::string> cpusets;
  for (const probes::RankPrediction& rank : prediction->ranks) {
    cpusets.push_back(rank.cpuset.empty() ? "?" : probes::format_cpu_list(rank.cpuset));
    for (const probes::ThreadGroup& g : rank.groups) {
      if (g.name.empty() || g.name == "main" || g.name == probes::k_runtime_group) continue;
      s.pools[g.name] += g.threads;
    }
  }
  s.placement = fmt::format("{} ranks: {}", cpusets.size(), fmt::join(cpusets, " | "));
  return s;
}

// A parameter's value as a key ("-" when the trial has none: a conditional parameter).
std::string value_key(const FrozenTrial& t, const std::string& name) {
  const auto it = t.params.find(name);
  return it == t.params.end() ? "-" : fmt::format("{}", it->second);
}

std::set<std::string> parameter_names(const std::vector<Setting>& settings) {
  std::set<std::string> names;
  for (const auto& s : settings)
    for (const auto& [name, value] : s.trial->params) names.insert(name);
  return names;
}

std::set<std::string> pool_parameters_of(const std::vector<Setting>& settings) {
  std::set<std::string> out;
  const auto names = parameter_names(settings);
  for (const auto& p : names) {
    // Trials of one placement alike in every other parameter: do their pools differ?
    std::map<std::string, std::set<std::map<std::string, int>>> pools_by_rest;
    for (const auto& s : settings) {
      std::string rest = s.placement;
      for (const auto& q : names)
        if (q != p) rest += "\x1f" + value_key(*s.trial, q);
      pools_by_rest[rest].insert(s.pools);
    }
    if (std::ranges::any_of(pools_by_rest, [](const auto& kv) { return kv.second.size() > 1; }))
      out.insert(p);
  }
  return out;
}

// Whether `smaller` is `s` with some pools smaller and none larger; the smaller pools' names.
std::optional<std::vector<std::string>> smaller_pools(const Setting& s, const Setting& smaller) {
  std::vector<std::string> names;
  std::set<std::string> groups;
  for (const auto& [g, n] : s.pools) groups.insert(g);
  for (const auto& [g, n] : smaller.pools) groups.insert(g);
  for (const auto& g : groups) {
    const auto a = s.pools.find(g), b = smaller.pools.find(g);
    const int mine = a == s.pools.end() ? 0 : a->second;
    const int theirs = b == smaller.pools.end() ? 0 : b->second;
    if (theirs > mine) return std::nullopt;
    if (theirs < mine) names.push_back(g);
  }
  if (names.empty()) return std::nullopt;
  return names;
}

// The verdict's wait shares (the sustained figure over every rank, else, in a verdict stored
// before it, the largest of the cpusets' own threads' shares) and whether its queue cost.
void read_wait_shares(const FrozenTrial& t, VerdictCost& cost) {
  const auto verdict = probes::verdict_from_json(*object_attr(t, k_attr_probe_verdict));
  if (!verdict) return;  // untrusted: a malformed verdict has no shares to read
  cost.costly = verdict->queue_cost.costly;
  const probes::SustainedVerdict& sustained = verdict->sustained;
  if (sustained.main_measured) {
    cost.main_wait_share = sustained.main_wait_share;
    cost.helper_wait_share = sustained.helper_wait_share;
    return;
  }
  for (const probes::SustainedLoad& l : sustained.loads)
    if (l.wait_measured)
      cost.main_wait_share = std::max(cost.main_wait_share.value_or(0), l.main_wait_share);
}

bool has_figure(const FrozenTrial& t) {
  return t.state == search::TrialState::complete && t.value && !is_rerun(t) && trusted_run(t);
}

std::optional<bool> observed_flag(const FrozenTrial& t) {
  const auto* verdict = object_attr(t, k_attr_probe_verdict);
  if (verdict == nullptr || !verdict_counts(t)) return std::nullopt;
  const auto v = verdict->find("observed_oversubscribed");
  if (v == verdict->end() || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::vector<Setting> settings_of(const search::StudyView& study) {
  std::vector<Setting> out;
  for (const auto& t : study.trials())
    if (has_figure(t))
      if (Setting s = setting_of(t); !s.placement.empty()) out.push_back(std::move(s));
  return out;
}

}  // namespace

std::vector<std::string> pool_parameters(const search::StudyView& study) {
  const auto names = pool_parameters_of(settings_of(study));
  return {names.begin(), names.end()};
}

std::map<int, VerdictCost> verdict_costs(const search::StudyView& study) {
  std::map<int, VerdictCost> out;
  if (study.is_multi_objective()) return out;
  const std::vector<Setting> settings = settings_of(study);
  const std::set<std::string> pool_params = pool_parameters_of(settings);
  const auto names = parameter_names(settings);
  // Comparable trials share the placement and every parameter that sizes no pool.
  std::map<std::string, std::vector<const Setting*>> by_rest;
  for (const auto& s : settings) {
    std::string rest = s.placement;
    for (const auto& q : names)
      if (!pool_params.contains(q)) rest += "\x1f" + value_key(*s.trial, q);
    by_rest[rest].push_back(&s);
  }
  const bool maximize = study.direction() == search::Direction::maximize;
  const auto better = [&](const FrozenTrial& a, const FrozenTrial& b) {
    return maximize ? *a.value > *b.value : *a.value < *b.value;
  };
  std::map<int, const Setting*> setting_by_number;
  for (const auto& s : settings) setting_by_number[s.trial->number] = &s;
  std::vector<std::pair<int, int>> pairs;
  for (const auto& t : study.trials()) {
    if (!has_figure(t)) continue;
    const auto flagged = observed_flag(t);
    if (!flagged) continue;
    VerdictCost cost;
    cost.trial = t.number;
    cost.flagged = *flagged;
    read_wait_shares(t, cost);
    if (const auto it = setting_by_number.find(t.number); it != setting_by_number.end()) {
      const Setting& mine = *it->second;
      std::string rest = mine.placement;
      for (const auto& q : names)
        if (!pool_params.contains(q)) rest += "\x1f" + value_key(t, q);
      const Setting* fastest = nullptr;
      for (const Setting* other : by_rest[rest]) {
        if (other->trial->params == t.params) continue;  // a run of its own setting
        const auto smaller = smaller_pools(mine, *other);
        if (!smaller) continue;
        cost.comparable += 1;
        if (fastest == nullptr || better(*other->trial, *fastest->trial)) {
          fastest = other;
          cost.smaller_pools = *smaller;
        }
      }
      if (fastest != nullptr) {
        cost.against = fastest->trial->number;
        pairs.emplace_back(cost.against, t.number);
      }
    }
    out.emplace(t.number, std::move(cost));
  }
  const auto leads = leads_between(study, pairs);
  for (auto& [number, cost] : out) {
    if (cost.against < 0) continue;
    const auto it = leads.find({cost.against, number});
    if (it == leads.end()) continue;
    const NoiseLead& lead = it->second;
    cost.lead = lead;
    cost.ratio = lead.ratio.value_or(1);
    if (lead.verdict != NoiseVerdict::unknown) {
      cost.noise_known = true;
      cost.slowed = lead.verdict == NoiseVerdict::beyond && lead.difference > 0;
    } else {
      cost.slowed = cost.ratio >= k_slowed_without_noise;
    }
  }
  return out;
}

std::string verdict_cost_text(const VerdictCost& cost) {
  std::string out;
  if (cost.main_wait_share) {
    out = fmt::format("the ranks' own threads waited {:.0f}% of their runnable time",
                      100 * *cost.main_wait_share);
    if (cost.helper_wait_share)
      out += fmt::format(" (their helpers {:.0f}%)", 100 * *cost.helper_wait_share);
  }
  const std::string sep = out.empty() ? "" : "; ";
  if (cost.against < 0 || !cost.lead) {
    if (out.empty() && !cost.flagged) return "";
    return out + sep +
           "no comparable trial (the same but for smaller pools): the cost is not measured";
  }
  const std::string who = fmt::format("the fastest comparable trial, #{} (smaller {})",
                                      cost.against, fmt::join(cost.smaller_pools, ", "));
  const std::string by = cost.lead->ratio ? fmt::format("{:.2f}x", cost.ratio)
                                          : fmt::format("better by {:.4g}", cost.lead->difference);
  if (!cost.slowed) {
    const char* why = !cost.noise_known                            ? "under 10%, the noise unknown"
                      : cost.lead->verdict == NoiseVerdict::beyond ? "slower beyond the noise"
                                                                   : "within the noise";
    return out + sep + fmt::format("{}, was {}: {}, no measurable cost", who, by, why);
  }
  const char* why = cost.noise_known ? "beyond the noise" : "10% or more, the noise unknown";
  return out + sep +
         fmt::format("{}, was {} better, {}: {}", who, by, why,
                     cost.flagged ? "the queueing cost throughput" : "a cost the verdict missed");
}

}  // namespace tune::tuner
