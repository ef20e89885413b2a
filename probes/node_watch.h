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
  // ranks never showed up on this node. Where the ranks' folder of library answers was made on
  // this node by the ranks themselves (tune runs on another machine: its folder holds no
  // k_origins_owner file), the answers are added as "libraries" (library_reports_to_json) and
  // the folder removed.
  nlohmann::json finish();

 private:
  SystemSource& m_source;
  std::string m_tag;
  MonitorOptions m_options;
  std::unique_ptr<TrialMonitor> m_monitor;
  std::string m_origins_dir, m_reports_dir;  // as the ranks' environment names them
};

// The file tune writes in a trial's folder of thread origins on its own machine: a watcher that
// finds it leaves the folder to tune.
inline constexpr const char* k_origins_owner = ".tune-owner";

}  // namespace tune::probes
