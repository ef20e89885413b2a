#include "probes/node_watch.h"

#include <filesystem>
#include <set>

#include "probes/library_report.h"
#include "probes/thread_origin.h"

namespace tune::probes {
namespace {

// The daemons a launcher starts on the other nodes. Not mpirun itself: where namespaces stand
// in for hosts (tests), the launching node's mpirun and its tagged ranks are visible too.
bool is_node_daemon(const std::string& comm) {
  static const std::set<std::string> k_daemons = {"orted", "prted", "hydra_pmi_proxy"};
  return k_daemons.contains(comm);
}

}  // namespace

namespace {

// The daemon and one of its tagged children.
std::optional<std::pair<pid_t, pid_t>> find_tagged(SystemSource& source, const std::string& tag) {
  // Every process descends from pid 1 (orphans are re-parented to it or to one of its
  // descendants), so its tree is the whole process table.
  for (pid_t pid : source.process_tree(1)) {
    const auto p = source.read_process(pid, /*with_threads=*/false);
    if (!p || !is_node_daemon(p->comm)) continue;
    for (pid_t child : source.process_tree(pid)) {
      if (child == pid) continue;
      if (source.read_environ(child, k_probe_tag_env) == tag) return std::pair{pid, child};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<pid_t> find_tagged_launcher(SystemSource& source, const std::string& tag) {
  const auto found = find_tagged(source, tag);
  if (!found) return std::nullopt;
  return found->first;
}

NodeWatch::NodeWatch(SystemSource& source, std::string tag, MonitorOptions options)
    : m_source(source), m_tag(std::move(tag)), m_options(options) {}

bool NodeWatch::look() {
  if (m_monitor) return true;
  const auto found = find_tagged(m_source, m_tag);
  if (!found) return false;
  m_origins_dir = m_source.read_environ(found->second, k_thread_origins_env).value_or("");
  m_reports_dir = m_source.read_environ(found->second, k_library_reports_env).value_or("");
  m_monitor = std::make_unique<TrialMonitor>(m_source, found->first, m_options);
  m_monitor->start();
  return true;
}

nlohmann::json NodeWatch::finish() {
  if (!m_monitor) {
    return {{"error", "no process of the trial (" + std::string(k_probe_tag_env) + "=" + m_tag +
                          ") was seen on this node"}};
  }
  m_monitor->stop();
  nlohmann::json out = m_monitor->to_json();
  namespace fs = std::filesystem;
  std::error_code ec;
  // Only absolute folders of tune's own naming, that the ranks made here (no owner file), below
  // the trial's folder of thread origins.
  const fs::path origins(m_origins_dir), reports(m_reports_dir);
  if (origins.is_absolute() && reports.parent_path() == origins &&
      origins.filename().string().starts_with("tune-threads-") && fs::is_directory(origins, ec) &&
      !fs::exists(origins / k_origins_owner, ec)) {
    out["libraries"] = library_reports_to_json(read_library_reports(reports.string()));
    fs::remove_all(origins, ec);
  }
  return out;
}

}  // namespace tune::probes
