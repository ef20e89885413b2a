#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <stdexcept>

#include "probes/topology.h"
#include "tuner/commands.h"

namespace tune::tuner {

std::vector<Subcommand> add_probe_commands(CLI::App& app) {
  auto* probe = app.add_subcommand("probe",
                                   "Print this machine's topology (hwloc): packages, "
                                   "NUMA nodes, cores, PUs, caches, GPUs");
  auto format = std::make_shared<std::string>("text");
  probe->add_option("--format", *format, "text or json")->check(CLI::IsMember({"text", "json"}));
  return {{probe, [format]() {
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
