#include "probes/topology.h"

#include <hwloc.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace tune::probes {
namespace {

struct TopologyCloser {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyCloser>;

std::vector<int> bitmap_to_list(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  if (set == nullptr) return out;
  int i = -1;
  while ((i = hwloc_bitmap_next(set, i)) != -1) out.push_back(i);
  return out;
}

const char* cache_type_name(hwloc_obj_cache_type_t t) {
  switch (t) {
    case HWLOC_OBJ_CACHE_DATA:
      return "data";
    case HWLOC_OBJ_CACHE_INSTRUCTION:
      return "instruction";
    default:
      return "unified";
  }
}

// Index of the ancestor of `obj` of `type` in `list` (matched by os index); 0 when none.
template <typename T>
int ancestor_index(hwloc_topology_t topo, hwloc_obj_t obj, hwloc_obj_type_t type,
                   const std::vector<T>& list) {
  hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(topo, type, obj);
  if (a == nullptr) return 0;
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i].os_index == static_cast<int>(a->os_index)) return static_cast<int>(i);
  return 0;
}

std::expected<Topology, std::string> convert(hwloc_topology_t topo, std::string source) {
  Topology out;
  out.source = std::move(source);

  const int npack = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  for (int i = 0; i < npack; ++i) {
    hwloc_obj_t p = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, i);
    out.packages.push_back(Package{static_cast<int>(p->os_index), {}});
  }
  if (out.packages.empty()) out.packages.push_back(Package{0, {}});  // some VMs report none

  const int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnuma; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
    NumaNode node;
    node.os_index = static_cast<int>(n->os_index);
    node.memory_bytes = n->attr ? n->attr->numanode.local_memory : 0;
    node.pus = bitmap_to_list(n->cpuset);
    out.numa_nodes.push_back(std::move(node));
  }
  if (out.numa_nodes.empty()) {
    NumaNode node;
    node.pus = bitmap_to_list(hwloc_get_root_obj(topo)->cpuset);
    out.numa_nodes.push_back(std::move(node));
  }

  const int ncore = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  const int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  if (npu <= 0) return std::unexpected("hwloc: the topology has no PU (processing unit)");
  auto numa_of = [&](hwloc_const_cpuset_t set) {
    for (std::size_t i = 0; i < out.numa_nodes.size(); ++i) {
      for (int pu : out.numa_nodes[i].pus)
        if (hwloc_bitmap_isset(set, static_cast<unsigned>(pu))) return static_cast<int>(i);
    }
    return 0;
  };
  if (ncore > 0) {
    for (int i = 0; i < ncore; ++i) {
      hwloc_obj_t c = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, i);
      Core core;
      core.os_index = static_cast<int>(c->os_index);
      core.package = ancestor_index(topo, c, HWLOC_OBJ_PACKAGE, out.packages);
      core.numa = numa_of(c->cpuset);
      core.pus = bitmap_to_list(c->cpuset);
      out.packages[static_cast<std::size_t>(core.package)].cores.push_back(i);
      out.cores.push_back(std::move(core));
    }
  }
  for (int i = 0; i < npu; ++i) {
    hwloc_obj_t p = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, i);
    Pu pu;
    pu.os_index = static_cast<int>(p->os_index);
    hwloc_obj_t c = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, p);
    if (c == nullptr) {
      // No core level (rare, some VMs): each PU is its own core.
      Core core;
      core.os_index = pu.os_index;
      core.package = ancestor_index(topo, p, HWLOC_OBJ_PACKAGE, out.packages);
      core.numa = numa_of(p->cpuset);
      core.pus = {pu.os_index};
      out.packages[static_cast<std::size_t>(core.package)].cores.push_back(
          static_cast<int>(out.cores.size()));
      pu.core = static_cast<int>(out.cores.size());
      out.cores.push_back(std::move(core));
    } else {
      pu.core = static_cast<int>(c->logical_index);
    }
    out.pus.push_back(pu);
  }

  // Caches, grouped by level and type.
  std::map<std::tuple<int, std::string, std::uint64_t>, int> caches;
  for (int depth = 0; depth < hwloc_topology_get_depth(topo); ++depth) {
    const int n = hwloc_get_nbobjs_by_depth(topo, depth);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t o = hwloc_get_obj_by_depth(topo, depth, i);
      if (!hwloc_obj_type_is_cache(o->type) || o->attr == nullptr) continue;
      ++caches[{static_cast<int>(o->attr->cache.depth), cache_type_name(o->attr->cache.type),
                o->attr->cache.size}];
    }
  }
  for (const auto& [key, count] : caches)
    out.caches.push_back(CacheLevel{std::get<0>(key), std::get<1>(key), std::get<2>(key), count});

  // GPUs: PCI display (0x03xx) and processing-accelerator (0x12xx) devices, named after their
  // OS device (cuda0, nvidia0, card0) when hwloc's plugins found one.
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topo, pci)) {
    const unsigned cls = pci->attr->pcidev.class_id >> 8;
    if (cls != 0x03 && cls != 0x12) continue;
    Gpu gpu;
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                  pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
    gpu.pci_bus_id = bus;
    gpu.name = pci->name ? pci->name : "";
    for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
      if (child->type == HWLOC_OBJ_OS_DEVICE && child->name != nullptr) {
        gpu.name = child->name;
        if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC) break;  // prefer cuda0 over card0
      }
    }
    if (gpu.name.empty()) gpu.name = "gpu " + gpu.pci_bus_id;
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, pci);
    if (anc != nullptr) {
      gpu.local_pus = bitmap_to_list(anc->cpuset);
      gpu.numa_nodes = bitmap_to_list(anc->nodeset);
    }
    out.gpus.push_back(std::move(gpu));
  }
  return out;
}

std::expected<TopologyHandle, std::string> init(bool with_io) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return std::unexpected("hwloc_topology_init failed");
  TopologyHandle topo(raw);
  if (with_io) hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  return topo;
}

}  // namespace

int Topology::core_of_pu(int os_index) const {
  for (const Pu& p : pus)
    if (p.os_index == os_index) return p.core;
  return -1;
}

std::vector<int> Topology::all_pus() const {
  std::vector<int> out;
  out.reserve(pus.size());
  for (const Pu& p : pus) out.push_back(p.os_index);
  return out;
}

namespace {
std::expected<Topology, std::string> read_live(bool with_io) {
  auto topo = init(with_io);
  if (!topo) return std::unexpected(topo.error());
  if (hwloc_topology_load(topo->get()) != 0)
    return std::unexpected("hwloc_topology_load failed: cannot read the machine's topology");
  return convert(topo->get(), "hwloc");
}
}  // namespace

std::expected<Topology, std::string> read_topology() { return read_live(/*with_io=*/true); }

std::expected<Topology, std::string> read_cpu_topology() { return read_live(/*with_io=*/false); }

std::expected<Topology, std::string> read_synthetic_topology(const std::string& description) {
  auto topo = init(/*with_io=*/false);
  if (!topo) return std::unexpected(topo.error());
  if (hwloc_topology_set_synthetic(topo->get(), description.c_str()) != 0)
    return std::unexpected("hwloc: invalid synthetic topology '" + description +
                           "' (expected e.g. 'pack:2 core:8 pu:2')");
  if (hwloc_topology_load(topo->get()) != 0)
    return std::unexpected("hwloc_topology_load failed for synthetic '" + description + "'");
  return convert(topo->get(), "synthetic: " + description);
}

namespace {
std::string bytes_text(std::uint64_t b) {
  std::ostringstream s;
  if (b >= (1ull << 30) && b % (1ull << 30) == 0)
    s << (b >> 30) << " GiB";
  else if (b >= (1ull << 30))
    s << (b >> 20) << " MiB";
  else if (b >= (1ull << 20))
    s << (b >> 20) << " MiB";
  else
    s << (b >> 10) << " KiB";
  return s.str();
}
std::string plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}
}  // namespace

std::string format_topology_text(const Topology& topo) {
  std::ostringstream out;
  const int np = static_cast<int>(topo.packages.size());
  const int nc = topo.core_count();
  const int npu = topo.pu_count();
  out << "machine: " << plural(np, "package") << ", "
      << plural(static_cast<int>(topo.numa_nodes.size()), "NUMA node") << ", " << plural(nc, "core")
      << ", " << plural(npu, "PU");
  if (nc > 0) {
    if (npu % nc == 0)
      out << " (" << npu / nc << " per core)";
    else
      out << " (SMT uneven)";
  }
  out << ", " << plural(static_cast<int>(topo.gpus.size()), "GPU") << "\n";
  for (std::size_t p = 0; p < topo.packages.size(); ++p) {
    std::vector<int> pus;
    for (int c : topo.packages[p].cores)
      for (int pu : topo.cores[static_cast<std::size_t>(c)].pus) pus.push_back(pu);
    std::sort(pus.begin(), pus.end());
    out << "  package " << topo.packages[p].os_index << ": "
        << plural(static_cast<int>(topo.packages[p].cores.size()), "core") << ", PUs "
        << format_cpu_list(pus) << "\n";
  }
  for (const NumaNode& n : topo.numa_nodes) {
    out << "  numa " << n.os_index << ": PUs " << format_cpu_list(n.pus);
    if (n.memory_bytes) out << ", " << bytes_text(n.memory_bytes);
    out << "\n";
  }
  if (!topo.caches.empty()) {
    out << "  caches:";
    const char* sep = " ";
    for (const CacheLevel& c : topo.caches) {
      out << sep << "L" << c.level
          << (c.type == "data"          ? "d"
              : c.type == "instruction" ? "i"
                                        : "")
          << " " << bytes_text(c.size_bytes) << " x" << c.count;
      sep = ", ";
    }
    out << "\n";
  }
  for (const Gpu& g : topo.gpus) {
    out << "  gpu " << g.name << " (" << g.pci_bus_id << "): NUMA "
        << (g.numa_nodes.empty() ? std::string("unknown") : format_cpu_list(g.numa_nodes))
        << ", near PUs "
        << (g.local_pus.empty() ? std::string("unknown") : format_cpu_list(g.local_pus)) << "\n";
  }
  return out.str();
}

nlohmann::json topology_to_json(const Topology& topo) {
  using nlohmann::json;
  json j;
  j["schema_version"] = k_topology_schema_version;
  j["source"] = topo.source;
  j["packages"] = json::array();
  for (const Package& p : topo.packages)
    j["packages"].push_back({{"os_index", p.os_index}, {"cores", p.cores}});
  j["numa_nodes"] = json::array();
  for (const NumaNode& n : topo.numa_nodes)
    j["numa_nodes"].push_back(
        {{"os_index", n.os_index}, {"memory_bytes", n.memory_bytes}, {"pus", n.pus}});
  j["cores"] = json::array();
  for (const Core& c : topo.cores)
    j["cores"].push_back(
        {{"os_index", c.os_index}, {"package", c.package}, {"numa", c.numa}, {"pus", c.pus}});
  j["pus"] = json::array();
  for (const Pu& p : topo.pus) j["pus"].push_back({{"os_index", p.os_index}, {"core", p.core}});
  j["caches"] = json::array();
  for (const CacheLevel& c : topo.caches)
    j["caches"].push_back(
        {{"level", c.level}, {"type", c.type}, {"size_bytes", c.size_bytes}, {"count", c.count}});
  j["gpus"] = json::array();
  for (const Gpu& g : topo.gpus)
    j["gpus"].push_back({{"name", g.name},
                         {"pci_bus_id", g.pci_bus_id},
                         {"numa_nodes", g.numa_nodes},
                         {"local_pus", g.local_pus}});
  j["totals"] = {{"packages", topo.packages.size()},
                 {"numa_nodes", topo.numa_nodes.size()},
                 {"cores", topo.cores.size()},
                 {"pus", topo.pus.size()},
                 {"gpus", topo.gpus.size()}};
  return j;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::set<int> out;
  std::size_t i = 0;
  auto number = [&](int* v) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), *v);
    if (ec != std::errc()) return false;
    i = static_cast<std::size_t>(p - text.data());
    return true;
  };
  while (i < text.size()) {
    int a = 0;
    if (!number(&a)) break;
    int b = a;
    if (i < text.size() && text[i] == '-') {
      ++i;
      if (!number(&b)) break;
    }
    for (int c = a; c <= b; ++c) out.insert(c);
    if (i < text.size() && text[i] == ',')
      ++i;
    else
      break;
  }
  return {out.begin(), out.end()};
}

std::string format_cpu_list(const std::vector<int>& cpus_in) {
  std::vector<int> cpus = cpus_in;
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace tune::probes
