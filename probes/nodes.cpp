#include "probes/nodes.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace tune::probes {
namespace {

void add_host(std::vector<HostSlots>& hosts, const std::string& name, int slots) {
  for (HostSlots& h : hosts) {
    if (h.name == name) {
      h.slots += slots;
      return;
    }
  }
  hosts.push_back(HostSlots{name, slots});
}

// "h2 (10.99.0.2, ranks 2-3)": the node's own name first when it has one of its own.
std::string node_label(const NodeObservation& node) {
  std::string inside;
  std::string name = node.host;
  if (!node.hostname.empty() && node.hostname != node.host) {
    name = node.hostname;
    inside = node.host;
  }
  if (!node.ranks.empty()) {
    if (!inside.empty()) inside += ", ";
    inside += (node.ranks.size() == 1 ? "rank " : "ranks ") + format_cpu_list(node.ranks);
  }
  return inside.empty() ? name : name + " (" + inside + ")";
}

bool observed_over(const NodeObservation& node) {
  return node.verdict && node.verdict->value("observed_oversubscribed", false);
}

// Oversubscribed, and its queue cost CPU time (probes/queue_cost.h): the node whose verdict the
// merged one carries first, so that its cost clause speaks for the trial. The flag is read as a
// flag: the merged verdict's reader recomputes the cost from that node's own figures.
bool observed_costly(const NodeObservation& node) {
  if (!observed_over(node)) return false;
  const auto cost = node.verdict->find("queue_cost");
  return cost != node.verdict->end() && cost->is_object() && cost->value("costly", false) == true;
}

// How strongly a node's verdict speaks for the trial: costly, then oversubscribed, then sampled.
int verdict_rank(const NodeObservation& node) {
  return observed_costly(node) ? 2 : observed_over(node) ? 1 : 0;
}

const NodePrediction* prediction_of(const std::vector<NodePrediction>* predicted,
                                    const std::string& host) {
  if (predicted == nullptr) return nullptr;
  for (const NodePrediction& p : *predicted)
    if (p.host == host) return &p;
  return nullptr;
}

// What the node's prediction says of what its sampler saw, unless its diagnosis says it already.
std::string prediction_note(const NodeObservation& node, const NodePrediction* p) {
  if (p == nullptr || !node.verdict) return {};
  if (node.verdict->value("predicted_oversubscribed", nlohmann::json()).is_boolean()) return {};
  const bool seen = observed_over(node);
  if (p->prediction.oversubscribed == seen) return seen ? "; predicted" : "; as predicted";
  return p->prediction.oversubscribed ? "; predicted oversubscribed, not observed"
                                      : "; not predicted";
}

}  // namespace

std::vector<HostSlots> parse_host_list(const std::string& text) {
  std::vector<HostSlots> hosts;
  std::stringstream ss(text);
  for (std::string entry; std::getline(ss, entry, ',');) {
    if (entry.empty()) continue;
    const auto colon = entry.find(':');
    int slots = 1;
    if (colon != std::string::npos) {
      const auto n = parse_int(std::string_view(entry).substr(colon + 1));
      if (n && *n > 0) slots = *n;
    }
    add_host(hosts, entry.substr(0, colon), slots);
  }
  return hosts;
}

std::expected<std::vector<HostSlots>, std::string> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::unexpected("hostfile " + path + ": cannot be read");
  std::vector<HostSlots> hosts;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    int slots = 0;
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      const int value = eq == std::string::npos
                            ? -1
                            : parse_int(std::string_view(word).substr(eq + 1)).value_or(-1);
      if ((key == "slots" || key == "cpu" || key == "count") && value > 0) {
        slots = value;
      } else if ((key == "max_slots" || key == "max-slots") && value >= 0) {
        continue;  // a cap on oversubscription, not where ranks go
      } else {
        return std::unexpected("hostfile " + path + ":" + std::to_string(number) + ": '" + word +
                               "' is not slots=N or max_slots=N");
      }
    }
    add_host(hosts, name, slots);
  }
  return hosts;
}

int ppr_per_node(const std::string& map_by) {
  // ppr:N:node, with modifiers after it (ppr:2:node:PE=2).
  if (!map_by.starts_with("ppr:")) return 0;
  const auto second = map_by.find(':', 4);
  if (second == std::string::npos) return 0;
  const std::string object = map_by.substr(second + 1, map_by.find(':', second + 1) - second - 1);
  if (object != "node") return 0;
  return parse_int(std::string_view(map_by).substr(4, second - 4)).value_or(0);
}

std::vector<NodeRanks> map_ranks_to_nodes(const std::vector<HostSlots>& hosts, int n, int npernode,
                                          const std::string& map_by, int default_slots) {
  std::vector<NodeRanks> nodes;
  std::vector<int> capacity;
  for (const HostSlots& h : hosts) {
    nodes.push_back(NodeRanks{h.name, {}});
    capacity.push_back(npernode > 0 ? npernode : (h.slots > 0 ? h.slots : default_slots));
  }
  if (nodes.empty()) return nodes;
  int total = n;
  if (total <= 0) {
    total = 0;
    for (int c : capacity) total += c;
  }
  const bool by_node = map_by == "node" || map_by.starts_with("node:");
  int rank = 0;
  if (!by_node) {  // fill each node's slots in order
    for (std::size_t i = 0; i < nodes.size() && rank < total; ++i)
      for (int k = 0; k < capacity[i] && rank < total; ++k) nodes[i].ranks.push_back(rank++);
  }
  for (std::size_t i = 0; rank < total; i = (i + 1) % nodes.size())  // round the nodes
    nodes[i].ranks.push_back(rank++);
  return nodes;
}

std::vector<NodePrediction> predict_nodes(const Topology& topo, const LaunchPlan& plan,
                                          const ProgramModel& model) {
  if (plan.hosts.empty()) return {NodePrediction{"", {}, predict(topo, plan, model)}};
  std::vector<NodePrediction> out;
  for (const NodeRanks& node : plan.layout) {
    if (node.ranks.empty()) continue;
    LaunchPlan one = plan;
    one.ranks_per_node = static_cast<int>(node.ranks.size());
    one.nodes = 1;
    one.node_ranks = node.ranks;
    out.push_back(NodePrediction{node.host, node.ranks, predict(topo, one, model)});
  }
  return out;
}

double nodes_prediction_constraint(const std::vector<NodePrediction>& nodes) {
  double worst = -1.0;
  for (const NodePrediction& n : nodes)
    worst = std::max(worst, prediction_constraint(n.prediction));
  return worst;
}

nlohmann::json nodes_prediction_json(const std::vector<NodePrediction>& nodes) {
  if (nodes.empty()) return nlohmann::json::object();
  if (nodes.size() == 1 && nodes.front().host.empty()) return nodes.front().prediction.to_json();
  const NodePrediction* top = &nodes.front();
  std::vector<std::string> over;
  for (const NodePrediction& n : nodes) {
    if (!n.prediction.oversubscribed) continue;
    if (over.empty()) top = &n;
    over.push_back(n.host + " (ranks " + format_cpu_list(n.ranks) + ")");
  }
  nlohmann::json j = top->prediction.to_json();
  j["host"] = top->host;
  j["oversubscribed"] = !over.empty();
  j["constraint"] = nodes_prediction_constraint(nodes);
  double risk = 0;  // the riskiest node's
  for (const NodePrediction& n : nodes) risk = std::max(risk, n.prediction.risk);
  j["risk"] = std::round(risk * 1000) / 1000;
  j["at_risk"] = risk >= k_at_risk;
  j["nodes"] = nlohmann::json::array();
  for (const NodePrediction& n : nodes)
    j["nodes"].push_back({{"host", n.host},
                          {"ranks", n.ranks},
                          {"busy_threads", n.prediction.busy_threads},
                          {"pus", n.prediction.pus},
                          {"oversubscribed", n.prediction.oversubscribed},
                          {"constraint", prediction_constraint(n.prediction)},
                          {"summary", n.prediction.summary}});
  std::string summary;
  if (!over.empty()) {
    for (const std::string& o : over) summary += (summary.empty() ? "" : ", ") + o;
    summary = "oversubscribed on " + summary + ": " + strip_verdict_word(top->prediction.summary);
  } else {
    summary = "ok on " + std::to_string(nodes.size()) +
              " nodes: " + strip_verdict_word(top->prediction.summary) + " each";
  }
  j["summary"] = summary;
  return j;
}

nlohmann::json merge_node_verdicts(const std::vector<NodeObservation>& nodes,
                                   const std::vector<NodePrediction>* predicted) {
  nlohmann::json j = nlohmann::json::object();
  const NodeObservation* top = nullptr;
  for (const NodeObservation& n : nodes)
    if (n.verdict && (top == nullptr || verdict_rank(n) > verdict_rank(*top))) top = &n;
  if (top != nullptr) {
    j = *top->verdict;
    j["host"] = top->host;
    j["hostname"] = top->hostname;
  }
  bool any_over = false, any_predicted = false;
  std::string over_line, ok_line, missing_line;
  j["nodes"] = nlohmann::json::array();
  for (const NodeObservation& n : nodes) {
    nlohmann::json node = {{"host", n.host}, {"hostname", n.hostname}, {"ranks", n.ranks}};
    if (!n.machine.empty()) node["machine"] = n.machine;
    const NodePrediction* p = prediction_of(predicted, n.host);
    if (p != nullptr) any_predicted = any_predicted || p->prediction.oversubscribed;
    if (!n.verdict) {
      node["error"] = n.error;
      missing_line += "; no sample from " + node_label(n) + ": " + n.error;
      j["nodes"].push_back(std::move(node));
      continue;
    }
    const bool over = observed_over(n);
    any_over = any_over || over;
    const std::string detail = strip_verdict_word(n.verdict->value("diagnosis", std::string()));
    node["observed_oversubscribed"] = over;
    node["diagnosis"] = n.verdict->value("diagnosis", std::string());
    node["ranks_seen"] = n.verdict->value("ranks", nlohmann::json::array());
    j["nodes"].push_back(std::move(node));
    std::string& line = over ? over_line : ok_line;
    line += (line.empty() ? "" : "; ") + node_label(n) + ": " + detail + prediction_note(n, p);
  }
  j["observed_oversubscribed"] = any_over;
  if (predicted != nullptr) j["predicted_oversubscribed"] = any_predicted;
  // The nodes at fault first; the others after, each said to be ok.
  std::string d = any_over ? "oversubscribed on " + over_line : "ok on " + ok_line;
  if (any_over && !ok_line.empty()) d += "; ok on " + ok_line;
  if (top == nullptr) d = "no node was sampled";
  j["diagnosis"] = d + missing_line;
  return j;
}

std::string this_machine_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  // A UUID: anything else is not one, and is not compared.
  if (id.size() > 64 || id.find_first_not_of("0123456789abcdef-") != std::string::npos) return "";
  return id;
}

}  // namespace tune::probes
