// The machine as the probes see it (packages, NUMA nodes, cores, PUs, caches, GPUs), read once
// through hwloc or from a synthetic description, then held as a plain value that is safe to
// read from several threads.
// Design: docs/design-notes.md#probestopologyh
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune::probes {

inline constexpr int k_topology_schema_version = 1;

struct Pu {
  int os_index = 0;  // the Linux CPU number (taskset, Cpus_allowed_list, /proc/<pid>/stat field 39)
  int core = 0;      // index into Topology::cores
};

struct Core {
  int os_index = 0;
  int package = 0;       // index into Topology::packages
  int numa = 0;          // index into Topology::numa_nodes (0 when hwloc reports none)
  std::vector<int> pus;  // os indices of its PUs, ascending
};

struct Package {
  int os_index = 0;
  std::vector<int> cores;  // indices into Topology::cores
};

struct NumaNode {
  int os_index = 0;
  std::uint64_t memory_bytes = 0;
  std::vector<int> pus;  // os indices
};

// Caches are listed per level and type, not per instance: "L2 unified 1 MiB x 8".
struct CacheLevel {
  int level = 0;
  std::string type;  // "unified", "data", "instruction"
  std::uint64_t size_bytes = 0;
  int count = 0;
};

struct Gpu {
  std::string name;             // e.g. "cuda0", or the PCI device name
  std::string pci_bus_id;       // "0000:3b:00.0"
  std::vector<int> numa_nodes;  // os indices of the NUMA nodes it is attached to; empty = unknown
  std::vector<int> local_pus;   // os indices of the PUs near it
};

struct Topology {
  std::string source;  // "hwloc" or "synthetic: <description>"
  std::vector<Package> packages;
  std::vector<NumaNode> numa_nodes;
  std::vector<Core> cores;  // in hwloc logical order
  std::vector<Pu> pus;      // in hwloc logical order
  std::vector<CacheLevel> caches;
  std::vector<Gpu> gpus;

  int pu_count() const { return static_cast<int>(pus.size()); }
  int core_count() const { return static_cast<int>(cores.size()); }
  // Index into cores of the PU with this os index; -1 when the machine has no such PU.
  int core_of_pu(int os_index) const;
  std::vector<int> all_pus() const;  // os indices, logical order
};

// The live machine. Errors name the hwloc call that failed.
std::expected<Topology, std::string> read_topology();
// The live machine without its I/O devices (`gpus` stays empty): what a run needs (cores, PUs,
// caches, NUMA). Reading PCI devices is most of hwloc's time on a virtual machine (about 25 ms
// of CPU here, where each config-space read traps to the hypervisor), paid at every start of a
// `tune` worker; the knob catalog, `tune init` and `tune probe` read the whole machine.
std::expected<Topology, std::string> read_cpu_topology();
// An invented machine from hwloc's synthetic syntax, e.g. "pack:2 core:8 pu:2".
std::expected<Topology, std::string> read_synthetic_topology(const std::string& description);

// Compact text, one line per package plus totals, e.g.
//   machine: 1 package, 1 NUMA node, 2 cores, 2 PUs (1 per core)
std::string format_topology_text(const Topology& topo);
nlohmann::json topology_to_json(const Topology& topo);

// "0-3,8" <-> {0,1,2,3,8} (the kernel's list format, used by Cpus_allowed_list and taskset -c).
std::vector<int> parse_cpu_list(const std::string& text);
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace tune::probes
