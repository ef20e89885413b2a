#include <poll.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "probes/node_watch.h"
#include "probes/nodes.h"
#include "probes/system_source.h"
#include "probes/topology.h"
#include "tuner/cli/subcommands.h"

namespace tune::tuner {
namespace {

// `tune probe --watch TAG`: this node's watcher for a trial that spans hosts (started by `tune`
// over ssh, see tuner/probing/node_watchers.h). Looks for the trial's ranks every interval, samples
// them once found, and when stdin closes prints {"hostname", "machine", "verdict"} (or "error")
// as one JSON line.
int watch_node(const std::string& tag, double interval_s) {
  auto source = probes::make_live_source();
  probes::MonitorOptions options;
  options.interval_s = interval_s;
  probes::NodeWatch watch(*source, tag, options);
  const int timeout_ms = static_cast<int>(std::lround(std::max(0.01, interval_s) * 1000));
  for (;;) {
    watch.look();
    pollfd in{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&in, 1, timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0) {
      char buf[256];
      if (::read(STDIN_FILENO, buf, sizeof buf) <= 0) break;  // closed: the trial has ended
    }
  }
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  nlohmann::json report = {{"hostname", std::string(name)}};
  if (auto machine = probes::this_machine_id(); !machine.empty()) report["machine"] = machine;
  nlohmann::json result = watch.finish();
  if (result.contains("error")) {
    report["error"] = result["error"];
  } else {
    report["verdict"] = std::move(result);
  }
  std::cout << report.dump() << std::endl;
  return 0;
}

}  // namespace

std::vector<Subcommand> add_probe_commands(CLI::App& app) {
  auto* probe = app.add_subcommand(
      "probe", "Print this machine's topology: packages, NUMA nodes, cores, caches, GPUs");
  set_help_footer(probe,
                  {{"tune probe", "the topology as text (read through hwloc)"},
                   {"tune probe --format json", "the same as JSON"}},
                  "--watch is for tune itself: it starts `tune probe --watch TAG` on every other "
                  "node\nof a trial that spans hosts.");
  auto format = std::make_shared<std::string>("text");
  auto tag = std::make_shared<std::string>();
  auto interval = std::make_shared<double>(0.2);
  probe->add_option("--format", *format, "text or json")->check(CLI::IsMember({"text", "json"}));
  probe
      ->add_option("--watch", *tag,
                   "Sample this node's part of the trial tagged TAG (TUNE_PROBE_TAG) until stdin "
                   "closes, then print its verdict as JSON; tune starts this on every other node "
                   "of a trial that spans hosts")
      ->type_name("TAG");
  probe->add_option("--interval", *interval, "Sampling interval of --watch, seconds (0.2)")
      ->check(CLI::Range(0.01, 60.0));
  return {{probe, [format, tag, interval]() {
             if (!tag->empty()) return watch_node(*tag, *interval);
             auto topo = probes::read_topology();
             if (!topo) throw std::runtime_error("probe: " + topo.error());
             if (*format == "json") {
               std::cout << probes::topology_to_json(*topo).dump(2) << '\n';
             } else {
               std::cout << probes::format_topology_text(*topo);
             }
             return 0;
           }}};
}

}  // namespace tune::tuner
