// Topology conversion on invented machines (hwloc's synthetic topologies) and on this one.
#include <gtest/gtest.h>
#include <sched.h>

#include <sstream>

#include "probes/topology.h"

namespace tune::probes {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

TEST(Topology, OneSocketTwoCores) {
  auto t = read_synthetic_topology("pack:1 core:2 pu:1");
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->packages.size(), 1u);
  EXPECT_EQ(t->core_count(), 2);
  EXPECT_EQ(t->pu_count(), 2);
  EXPECT_EQ(t->core_of_pu(1), 1);
  EXPECT_EQ(t->core_of_pu(7), -1);
  const auto l = lines(format_topology_text(*t));
  ASSERT_GE(l.size(), 3u);
  EXPECT_EQ(l[0], "machine: 1 package, 1 NUMA node, 2 cores, 2 PUs (1 per core), 0 GPUs");
  EXPECT_EQ(l[1], "  package 0: 2 cores, PUs 0-1");
  EXPECT_EQ(l[2], "  numa 0: PUs 0-1, 1 GiB");
}

TEST(Topology, TwoSocketsEightCoresTwoSmt) {
  auto t = read_synthetic_topology("pack:2 [numa] core:8 pu:2");
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->packages.size(), 2u);
  EXPECT_EQ(t->numa_nodes.size(), 2u);
  EXPECT_EQ(t->core_count(), 16);
  EXPECT_EQ(t->pu_count(), 32);
  EXPECT_EQ(t->packages[1].cores.size(), 8u);
  EXPECT_EQ(t->cores[9].package, 1);
  EXPECT_EQ(t->cores[9].numa, 1);
  EXPECT_EQ(t->cores[9].pus, (std::vector<int>{18, 19}));
  EXPECT_EQ(t->core_of_pu(19), 9);
  const auto l = lines(format_topology_text(*t));
  ASSERT_GE(l.size(), 5u);
  EXPECT_EQ(l[0], "machine: 2 packages, 2 NUMA nodes, 16 cores, 32 PUs (2 per core), 0 GPUs");
  EXPECT_EQ(l[1], "  package 0: 8 cores, PUs 0-15");
  EXPECT_EQ(l[2], "  package 1: 8 cores, PUs 16-31");
  EXPECT_EQ(l[3], "  numa 0: PUs 0-15");  // synthetic NUMA nodes have no memory size
  const auto j = topology_to_json(*t);
  EXPECT_EQ(j["schema_version"], k_topology_schema_version);
  EXPECT_EQ(j["totals"]["pus"], 32);
  EXPECT_EQ(j["cores"][9]["pus"], nlohmann::json({18, 19}));
}

TEST(Topology, FourGpusWithNumaAffinityAreListed) {
  auto t = read_synthetic_topology("pack:2 [numa] core:4 pu:1");
  ASSERT_TRUE(t) << t.error();
  // hwloc's synthetic syntax has no I/O devices: attach GPUs as hwloc would report them.
  for (int g = 0; g < 4; ++g)
    t->gpus.push_back(Gpu{"cuda" + std::to_string(g),
                          "0000:0" + std::to_string(g) + ":00.0",
                          {g / 2},
                          t->numa_nodes[static_cast<std::size_t>(g / 2)].pus});
  const auto l = lines(format_topology_text(*t));
  EXPECT_EQ(l[0], "machine: 2 packages, 2 NUMA nodes, 8 cores, 8 PUs (1 per core), 4 GPUs");
  EXPECT_EQ(l[l.size() - 4], "  gpu cuda0 (0000:00:00.0): NUMA 0, near PUs 0-3");
  EXPECT_EQ(l.back(), "  gpu cuda3 (0000:03:00.0): NUMA 1, near PUs 4-7");
  const auto j = topology_to_json(*t);
  EXPECT_EQ(j["gpus"].size(), 4u);
  EXPECT_EQ(j["gpus"][3]["numa_nodes"], nlohmann::json({1}));
}

TEST(Topology, BadSyntheticDescriptionIsAnError) {
  auto t = read_synthetic_topology("banana:3");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().find("banana:3"), std::string::npos);
}

TEST(Topology, LiveMachineMatchesTheAffinityMask) {
  auto t = read_topology();
  ASSERT_TRUE(t) << t.error();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_GE(t->pu_count(), CPU_COUNT(&set));
  EXPECT_GE(t->core_count(), 1);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) {
      EXPECT_GE(t->core_of_pu(cpu), 0) << "cpu " << cpu;
    }
  EXPECT_EQ(t->source, "hwloc");
}

TEST(CpuList, ParsesAndFormatsTheKernelFormat) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list("5"), std::vector<int>{5});
  EXPECT_EQ(format_cpu_list({11, 0, 1, 2, 3, 8, 10}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
}

}  // namespace
}  // namespace tune::probes
