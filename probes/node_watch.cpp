#include "probes/node_watch.h"

#include <set>

namespace tune::probes {
namespace {

// The daemons a launcher starts on the other nodes. Not mpirun itself: where namespaces stand
// in for hosts (tests), the launching node's mpirun and its tagged ranks are visible too.
bool is_node_daemon(const std::string& comm) {
  static const std::set<std::string> k_daemons = {"orted", "prted", "hydra_pmi_proxy"};
  return k_daemons.contains(comm);
}

}  // namespace

std::optional<pid_t> find_tagged_launcher(SystemSource& source, const std::string& tag) {
  // Every process descends from pid 1 (orphans are re-parented to it or to one of its
  // descendants), so its tree is the whole process table.
  for (pid_t pid : source.process_tree(1)) {
    const auto p = source.read_process(pid, /*with_threads=*/false);
    if (!p || !is_node_daemon(p->comm)) continue;
    for (pid_t child : source.process_tree(pid)) {
      if (child == pid) continue;
      if (source.read_environ(child, k_probe_tag_env) == tag) return pid;
    }
  }
  return std::nullopt;
}

NodeWatch::NodeWatch(SystemSource& source, std::string tag, MonitorOptions options)
    : m_source(source), m_tag(std::move(tag)), m_options(options) {}

bool NodeWatch::look() {
  if (m_monitor) return true;
  const auto launcher = find_tagged_launcher(m_source, m_tag);
  if (!launcher) return false;
  m_monitor = std::make_unique<TrialMonitor>(m_source, *launcher, m_options);
  m_monitor->start();
  return true;
}

nlohmann::json NodeWatch::finish() {
  if (!m_monitor) {
    return {{"error", "no process of the trial (" + std::string(k_probe_tag_env) + "=" + m_tag +
                          ") was seen on this node"}};
  }
  m_monitor->stop();
  return m_monitor->to_json();
}

}  // namespace tune::probes
