// Trials that span hosts: which ranks run on which node (Open MPI 4.1's mapping), the
// prediction per node, and every node's verdict merged into one that names the node and rank.
// Pure functions except read_hostfile; thread-safe.
// Design: docs/design-notes.md#probesnodesh
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/predict.h"

namespace tune::probes {

// "a:2,b" (mpirun --host): b gets 1 slot. Empty text, no hosts.
std::vector<HostSlots> parse_host_list(const std::string& text);

// An Open MPI hostfile: "name [slots=N] [max_slots=M]" per line, '#' comments; a host named
// twice adds up. Errors name the file and line.
std::expected<std::vector<HostSlots>, std::string> read_hostfile(const std::string& path);

// N from --map-by ppr:N:node, else 0.
int ppr_per_node(const std::string& map_by);

// The ranks each host runs, hosts in the order given (hosts with none are kept, empty). `n` 0 =
// mpirun's default (every slot, or npernode per host); `npernode` 0 = not given; slots 0 count as
// `default_slots`.
std::vector<NodeRanks> map_ranks_to_nodes(const std::vector<HostSlots>& hosts, int n, int npernode,
                                          const std::string& map_by, int default_slots);

struct NodePrediction {
  std::string host;  // "" = the one node of a launch without hosts
  std::vector<int> ranks;
  Prediction prediction;
};

// One prediction per node that runs ranks (plan.layout), each with its MPI rank numbers; a plan
// without hosts gives one, exactly predict(topo, plan, model).
std::vector<NodePrediction> predict_nodes(const Topology& topo, const LaunchPlan& plan,
                                          const ProgramModel& model = trainer_program_model());

// The prediction JSON a trial stores: one node's Prediction::to_json() unchanged; for several,
// the first oversubscribed node's (else the first's) with its "host", plus "nodes" (host, ranks,
// summary, busy threads, oversubscribed, constraint of each) and a summary naming the nodes.
nlohmann::json nodes_prediction_json(const std::vector<NodePrediction>& nodes);
// The worst node's prediction_constraint().
double nodes_prediction_constraint(const std::vector<NodePrediction>& nodes);

// What one node's sampler saw: its Verdict::to_json(), or why there is none.
struct NodeObservation {
  std::string host;      // as the launch names it ("10.99.0.2", "node07")
  std::string hostname;  // what the node calls itself, when known ("h2")
  std::vector<int> ranks;
  std::optional<nlohmann::json> verdict;
  std::string error;
  // The kernel's boot id (/proc/sys/kernel/random/boot_id): nodes that report the same one are
  // namespaces or containers of one machine, sharing its CPUs. Empty when unknown.
  std::string machine;
};

// This machine's boot id, as NodeObservation::machine holds it; empty when it cannot be read.
std::string this_machine_id();

// The verdict a trial stores for a launch over several nodes: the first oversubscribed node's
// verdict (else the first node's) at the top level with its "host", every node under "nodes",
// "observed_oversubscribed" when any node was, and one diagnosis line that names the node(s)
// and, through the node's own diagnosis, the rank: "oversubscribed on h2 (10.99.0.2, ranks 2-3):
// 2.0 runnable threads on cpuset 1 (1 PU, 2.0x); rank 3: 51% CPU ...; ok on h1 (...): ...".
// `predicted` (may be null) adds, for a node whose own diagnosis does not say, whether it was
// predicted. Each node keeps its "machine" when known.
nlohmann::json merge_node_verdicts(const std::vector<NodeObservation>& nodes,
                                   const std::vector<NodePrediction>* predicted);

}  // namespace tune::probes
