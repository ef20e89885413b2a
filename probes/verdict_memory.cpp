#include "probes/verdict_memory.h"

#include <algorithm>
#include <vector>

namespace tune::probes {
namespace {

// "; at risk (36%): oversubscribed in 4 of 10 earlier runs": said of a layout whose likelier
// outcome is ok.
std::string risk_text(const Prediction& p, int over, int all) {
  return "; at risk (" + std::to_string(p.risk_percent()) +
         "%): oversubscribed in " + std::to_string(over) + " of " + std::to_string(all) +
         " earlier run" + (all == 1 ? "" : "s") +
         (p.rules_oversubscribed ? ", and the threads exceed the PUs when all are busy" : "");
}

}  // namespace

std::string layout_signature(const nlohmann::json& prediction) {
  if (!prediction.is_object() || prediction.contains("nodes")) return {};
  const auto ranks = prediction.find("ranks");
  if (ranks == prediction.end() || !ranks->is_array() || ranks->empty()) return {};
  std::vector<std::pair<int, std::string>> parts;
  for (const auto& r : *ranks) {
    // A record someone else wrote (a shared database) may hold anything: unreadable, no layout.
    if (!r.is_object() || !r.contains("rank") || !r["rank"].is_number_integer()) return {};
    if (r.contains("cpuset") && !r["cpuset"].is_string()) return {};
    std::vector<std::string> groups;
    if (r.contains("groups") && !r["groups"].is_array()) return {};
    for (const auto& g : r.value("groups", nlohmann::json::array())) {
      if (!g.is_object() || !g.contains("name") || !g["name"].is_string()) return {};
      const std::string name = g["name"].get<std::string>();
      if (name == "other") continue;  // measured, not asked
      if (!g.contains("threads") || !g["threads"].is_number_integer()) return {};
      groups.push_back(name + "=" + std::to_string(g["threads"].get<int>()));
    }
    std::sort(groups.begin(), groups.end());
    std::string text = std::to_string(r["rank"].get<int>()) + ":" + r.value("cpuset", "") + "[";
    for (std::size_t i = 0; i < groups.size(); ++i) text += (i ? "," : "") + groups[i];
    parts.emplace_back(r["rank"].get<int>(), text + "]");
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& [rank, text] : parts) out += (out.empty() ? "" : " ") + text;
  return out;
}

bool VerdictMemory::add(const nlohmann::json& prediction, const nlohmann::json& verdict) {
  if (!verdict.is_object()) return false;
  const auto observed = verdict.find("observed_oversubscribed");
  if (observed == verdict.end() || !observed->is_boolean()) return false;
  const std::string signature = layout_signature(prediction);
  if (signature.empty()) return false;
  auto& [over, all] = m_seen[signature];
  over += observed->get<bool>() ? 1 : 0;
  all += 1;
  return true;
}

std::pair<int, int> VerdictMemory::seen(const std::string& signature) const {
  const auto it = m_seen.find(signature);
  return it == m_seen.end() ? std::pair{0, 0} : it->second;
}

void apply_verdict_memory(Prediction& prediction, const VerdictMemory& memory) {
  const auto [over, all] = memory.seen(layout_signature(prediction.to_json()));
  if (all == 0) return;
  // The rules' verdict weighs as one run: a layout they call oversubscribed stays at risk until
  // five of its runs, and over four in five, were observed ok; otherwise one run in five
  // observed oversubscribed makes a layout at risk.
  prediction.risk = (over + (prediction.rules_oversubscribed ? 1.0 : 0.0)) / (all + 1.0);
  prediction.at_risk = prediction.risk >= k_at_risk;
  prediction.risk_runs = all;
  if (2 * over == all) {
    if (prediction.at_risk && !prediction.oversubscribed)
      prediction.summary += risk_text(prediction, over, all);
    return;
  }
  const bool verdict = 2 * over > all;
  prediction.remembered = verdict;
  prediction.oversubscribed = verdict;
  const std::string rest = strip_verdict_word(prediction.summary);
  const std::string basis = "observed " + std::string(verdict ? "oversubscribed" : "ok") + " in " +
                            std::to_string(verdict ? over : all - over) + " of " +
                            std::to_string(all) + " earlier trial" + (all == 1 ? "" : "s") +
                            " with these threads and cpusets";
  prediction.summary = (verdict ? "oversubscribed: " : "ok: ") + rest + "; " + basis;
  if (prediction.at_risk && !verdict) prediction.summary += risk_text(prediction, over, all);
  prediction.basis = prediction.basis.empty() ? basis : prediction.basis + "; " + basis;
}

}  // namespace tune::probes
