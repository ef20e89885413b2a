// The watcher of one node of a multi-host trial: finds the trial's ranks on this node by their
// TUNE_PROBE_TAG and watches them with a TrialMonitor, so every node reports its own verdict.
// Not thread-safe: one caller drives look() and finish().
// Design: docs/design-notes.md#probesnode_watchh
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
