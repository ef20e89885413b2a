// The watcher of one node of a multi-host trial: finds the trial's ranks on this node and
// watches them with a TrialMonitor, so that every node of the trial reports its own verdict.
//
// The tuner gives each trial that spans hosts a tag, TUNE_PROBE_TAG=<tag> in the ranks'
// environment (mpirun -x), and starts `tune probe --watch <tag>` on every other node (through
// the same ssh mpirun uses). On a node, the trial is the launcher daemon (orted, prted,
// hydra_pmi_proxy) with a child that carries the tag: its tree is the node's part of the trial,
// the daemon's children its ranks. Looking is a scan of the process table, repeated until the
// daemon appears; then the monitor samples as it does on the launching node.
//
// Not thread-safe: one caller drives look() and finish(); the monitor has its own thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "probes/monitor.h"
#include "probes/system_source.h"

namespace tune::probes {

inline constexpr const char* k_probe_tag_env = "TUNE_PROBE_TAG";

// The launcher daemon on this node (orted, prted, hydra_pmi_proxy; never mpirun) one of whose
// children has TUNE_PROBE_TAG=tag.
std::optional<pid_t> find_tagged_launcher(SystemSource& source, const std::string& tag);

class NodeWatch {
 public:
  NodeWatch(SystemSource& source, std::string tag, MonitorOptions options = {});
  // Looks for the trial once (no-op once found); true when its monitor runs.
  bool look();
  // Stops the monitor and returns its Verdict::to_json(), or {"error": why} when the trial's
  // ranks never showed up on this node.
  nlohmann::json finish();

 private:
  SystemSource& m_source;
  std::string m_tag;
  MonitorOptions m_options;
  std::unique_ptr<TrialMonitor> m_monitor;
};

}  // namespace tune::probes
