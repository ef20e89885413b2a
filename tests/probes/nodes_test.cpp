// Trials over several hosts, in the probes: hostfiles and --host lists read as Open MPI reads
// them, ranks mapped to nodes, one prediction per node with MPI rank numbers, the local monitor
// that does not take mpirun's ssh child for a rank, a node's sampler that finds the trial's
// daemon by its tag, and node verdicts merged into one line naming the node and rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "probes/library_report.h"
#include "probes/monitor.h"
#include "probes/node_watch.h"
#include "probes/nodes.h"
#include "tests/common/fake_source.h"

namespace tune::probes {
namespace {

Topology two_cores() { return *read_synthetic_topology("pack:1 core:2 pu:1"); }

std::vector<std::vector<int>> ranks_of(const std::vector<NodeRanks>& nodes) {
  std::vector<std::vector<int>> out;
  for (const NodeRanks& n : nodes) out.push_back(n.ranks);
  return out;
}

TEST(Nodes, HostfilesAndHostListsAreReadAsOpenMpiReadsThem) {
  const auto path = std::filesystem::temp_directory_path() / "tune-nodes-hostfile";
  std::ofstream(path) << "# two nodes\n10.99.0.1 slots=2\n\n10.99.0.2 slots=2 max_slots=4\n"
                      << "node3\nnode3 slots=1  # named twice: slots add up\n";
  const auto hosts = read_hostfile(path.string());
  ASSERT_TRUE(hosts.has_value()) << hosts.error();
  EXPECT_EQ(*hosts, (std::vector<HostSlots>{{"10.99.0.1", 2}, {"10.99.0.2", 2}, {"node3", 1}}));
  std::ofstream(path) << "a slots=2\nb slot=2\n";
  const auto bad = read_hostfile(path.string());
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error(),
            "hostfile " + path.string() + ":2: 'slot=2' is not slots=N or max_slots=N");
  std::filesystem::remove(path);
  EXPECT_EQ(parse_host_list("a:2,b"), (std::vector<HostSlots>{{"a", 2}, {"b", 1}}));
  EXPECT_EQ(ppr_per_node("ppr:2:node:PE=1"), 2);
  EXPECT_EQ(ppr_per_node("ppr:2:socket"), 0);
}

TEST(Nodes, RanksFillSlotsGoPerNodeOrRoundTheNodes) {
  const std::vector<HostSlots> two = {{"h1", 2}, {"h2", 2}};
  EXPECT_EQ(ranks_of(map_ranks_to_nodes(two, 4, 0, "", 8)),
            (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(ranks_of(map_ranks_to_nodes(two, 2, 0, "", 8)),
            (std::vector<std::vector<int>>{{0, 1}, {}}));  // by slot: h1 first
  EXPECT_EQ(ranks_of(map_ranks_to_nodes(two, 2, 1, "", 8)),
            (std::vector<std::vector<int>>{{0}, {1}}));  // --npernode 1
  EXPECT_EQ(ranks_of(map_ranks_to_nodes(two, 3, 0, "node", 8)),
            (std::vector<std::vector<int>>{{0, 2}, {1}}));
  EXPECT_EQ(ranks_of(map_ranks_to_nodes(two, 0, 0, "", 8)),  // no -n: every slot
            (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(ranks_of(map_ranks_to_nodes({{"a", 0}, {"b", 0}}, 0, 0, "", 3)),
            (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}}));  // slots = the node's cores
}

TEST(Nodes, AHostfileLaunchCountsItsNodes) {
  const auto path = std::filesystem::temp_directory_path() / "tune-nodes-plan";
  std::ofstream(path) << "10.99.0.1 slots=2\n10.99.0.2 slots=2\n";
  const auto plan = launch_plan_from_argv(
      {"mpirun", "--hostfile", path.string(), "-n", "4", "prog", "--omp-threads", "2"}, {});
  std::filesystem::remove(path);
  EXPECT_EQ(plan.n, 4);
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_EQ(plan.ranks_per_node, 2);
  ASSERT_EQ(plan.layout.size(), 2u);
  EXPECT_EQ(plan.layout[1], (NodeRanks{"10.99.0.2", {2, 3}}));
  // An unreadable hostfile is said, not ignored.
  const auto missing = launch_plan_from_argv({"mpirun", "--hostfile", "/nonexistent/h", "p"}, {});
  ASSERT_EQ(missing.notes.size(), 1u);
  EXPECT_EQ(missing.notes[0], "hostfile /nonexistent/h: cannot be read");
}

TEST(Nodes, EachNodeIsPredictedWithItsOwnRanks) {
  MpirunOptions options;
  options.host = "h1:2,h2:2";
  options.n = "4";
  options.bind_to = "none";
  auto plan = launch_plan_from_mpirun(
      options, {"prog", "--omp-threads", "2", "--iterator-workers", "0"}, {});
  const auto nodes = predict_nodes(two_cores(), plan);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1].host, "h2");
  ASSERT_EQ(nodes[1].prediction.ranks.size(), 2u);
  EXPECT_EQ(nodes[1].prediction.ranks[0].rank, 2);
  // 2 ranks x (main + 1 OpenMP + 1 BLAS: its default is the 2-PU cpuset), on this node
  EXPECT_EQ(nodes[1].prediction.busy_threads, 6);
  EXPECT_TRUE(nodes[1].prediction.oversubscribed);
  const auto j = nodes_prediction_json(nodes);
  EXPECT_EQ(j["host"], "h1");
  EXPECT_EQ(j["nodes"].size(), 2u);
  EXPECT_TRUE(j["summary"].get<std::string>().starts_with(
      "oversubscribed on h1 (ranks 0-1), h2 (ranks 2-3): "))
      << j["summary"];
}

// mpirun with a local rank and the ssh that starts the remote node's daemon.
TEST(Nodes, TheLocalMonitorDoesNotCountMpirunsSshAsARank) {
  FakeSource src(two_cores());
  src.add_process(10, 1, "mpirun", {0, 1});
  src.add_process(11, 10, "ssh", {0, 1});
  src.add_process(12, 10, "trainer", {0, 1}, {{"OMPI_COMM_WORLD_RANK", "0"}});
  TrialMonitor m(src, 10);
  m.sample_once();
  src.advance(1.0);
  src.run_thread(12, 0.49, 'R', 0);
  src.run_thread(11, 0.0, 'S', 1);
  m.sample_once();
  const Verdict v = m.verdict();
  ASSERT_EQ(v.ranks.size(), 1u);
  EXPECT_EQ(v.ranks[0].pid, 12);
  EXPECT_NEAR(v.ranks[0].useful_cpu_pct, 200.0, 1e-9);  // alone on 2 PUs, not "50% each"
}

// A rank caught before its launcher has given it its environment gets its number later, not a
// made-up one (rank 0 of h1 was once reported as "rank 2").
TEST(Nodes, ARankSeenBeforeItsNumberGetsItLater) {
  FakeSource src(two_cores());
  src.add_process(10, 1, "mpirun", {0, 1});
  src.add_process(11, 10, "trainer", {0, 1});
  src.add_process(12, 10, "trainer", {0, 1}, {{"OMPI_COMM_WORLD_RANK", "1"}});
  TrialMonitor m(src, 10);
  m.sample_once();
  src.set_environ(11, {{"OMPI_COMM_WORLD_RANK", "0"}});
  src.advance(0.5);
  m.sample_once();
  const Verdict v = m.verdict();
  ASSERT_EQ(v.ranks.size(), 2u);
  EXPECT_EQ(v.ranks[0].pid, 11);
  EXPECT_EQ(v.ranks[0].rank, 0);
  EXPECT_EQ(v.ranks[1].rank, 1);
}

TEST(Nodes, ANodesSamplerFindsTheTrialsDaemonByItsTag) {
  FakeSource src(two_cores());
  src.add_process(1, 0, "init", {0, 1});
  // Another job's daemon, and the launching node's mpirun with a tagged rank (namespaces as
  // hosts share one process table): neither is this node's part of the trial.
  src.add_process(20, 1, "orted", {0, 1});
  src.add_process(21, 20, "other", {0, 1}, {{"TUNE_PROBE_TAG", "other"}});
  src.add_process(30, 1, "mpirun", {0, 1});
  src.add_process(31, 30, "trainer", {0, 1}, {{"TUNE_PROBE_TAG", "t1"}});
  NodeWatch watch(src, "t1");
  EXPECT_FALSE(watch.look());
  EXPECT_EQ(watch.finish()["error"],
            "no process of the trial (TUNE_PROBE_TAG=t1) was seen on this node");
  src.add_process(40, 1, "sshd", {0, 1});
  src.add_process(41, 40, "orted", {1});
  src.add_process(42, 41, "trainer", {1},
                  {{"TUNE_PROBE_TAG", "t1"}, {"OMPI_COMM_WORLD_RANK", "2"}});
  src.add_process(43, 41, "trainer", {1},
                  {{"TUNE_PROBE_TAG", "t1"}, {"OMPI_COMM_WORLD_RANK", "3"}});
  EXPECT_EQ(find_tagged_launcher(src, "t1"), 41);
}

// On a node other than tune's, the ranks make the trial's folders themselves, and the node's
// watcher sends what their libraries said with its verdict, then removes the folders; on tune's
// own machine (namespaces as hosts: the owner file is there) it leaves them to tune.
TEST(Nodes, ANodesWatcherSendsItsRanksLibraryAnswersAndRemovesTheirFolder) {
  namespace fs = std::filesystem;
  const fs::path base = fs::temp_directory_path() / ("nodes-test-" + std::to_string(::getpid()));
  for (const bool owned : {false, true}) {
    const fs::path origins = base / "tune-threads-Xy12ab";
    fs::create_directories(origins / "libraries");
    if (owned) std::ofstream(origins / k_origins_owner).flush();
    std::ofstream(origins / "libraries" / "42")
        << "process\t42\t2\t/usr/bin/python3.11\n"
           "library\tonednn\t/usr/lib/x86_64-linux-gnu/libdnnl.so.2\tversion=2.6.3\tisa=0x7\n"
           "env\tONEDNN_MAX_CPU_ISA\tAVX2\n";
    FakeSource src(two_cores());
    src.add_process(1, 0, "init", {0, 1});
    src.add_process(41, 1, "orted", {1});
    src.add_process(42, 41, "python3", {1},
                    {{"TUNE_PROBE_TAG", "t1"},
                     {"OMPI_COMM_WORLD_RANK", "2"},
                     {"TUNE_THREAD_ORIGINS", origins.string()},
                     {"TUNE_LIBRARY_REPORTS", (origins / "libraries").string()}});
    NodeWatch watch(src, "t1");
    ASSERT_TRUE(watch.look());
    const auto verdict = watch.finish();
    if (owned) {
      EXPECT_FALSE(verdict.contains("libraries"));
      EXPECT_TRUE(fs::exists(origins / "libraries" / "42"));
    } else {
      ASSERT_TRUE(verdict.contains("libraries")) << verdict.dump();
      const auto back = library_reports_from_json(verdict["libraries"]);
      ASSERT_EQ(back.size(), 1u);
      EXPECT_EQ(back[0].rank, "2");
      ASSERT_EQ(back[0].libraries.size(), 1u);
      EXPECT_EQ(back[0].libraries[0].kind, "onednn");
      EXPECT_EQ(back[0].libraries[0].fields.at("isa"), "0x7");
      EXPECT_EQ(back[0].env.at("ONEDNN_MAX_CPU_ISA"), "AVX2");
      EXPECT_FALSE(fs::exists(origins));
    }
    fs::remove_all(base);
  }
}

// What another node sends is untrusted: entries of the wrong shape are dropped, not trusted.
TEST(Nodes, LibraryAnswersFromAnotherNodeOfTheWrongShapeAreDropped) {
  const auto back = library_reports_from_json(nlohmann::json::parse(
      R"([{"pid": "x"}, 7, {"pid": 5, "rank": 3, "libraries": [{"kind": 1}, {"kind": "openmp",
      "path": "/l/libgomp.so.1", "fields": {"threads": "2", "bad": []}}], "env": {"A": 1}}])"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].pid, 5);
  EXPECT_EQ(back[0].rank, "-");
  ASSERT_EQ(back[0].libraries.size(), 1u);
  EXPECT_EQ(back[0].libraries[0].fields, (std::map<std::string, std::string>{{"threads", "2"}}));
  EXPECT_TRUE(back[0].env.empty());
  EXPECT_TRUE(library_reports_from_json(nlohmann::json::object()).empty());
}

nlohmann::json node_verdict(bool over, const std::string& diagnosis) {
  return {{"observed_oversubscribed", over},
          {"diagnosis", diagnosis},
          {"ranks", nlohmann::json::array()}};
}

TEST(Nodes, MergedVerdictNamesTheNodeAndRankThatOversubscribed) {
  std::vector<NodeObservation> nodes = {
      {"10.99.0.1", "h1", {0, 1}, node_verdict(false, "ok: 2 ranks at 99%/98% CPU"), ""},
      {"10.99.0.2",
       "h2",
       {2, 3},
       node_verdict(
           true, "oversubscribed: 2.0 runnable threads on cpuset 1 (1 PU, 2.0x); rank 3: 50% CPU"),
       ""},
      {"10.99.0.3", "", {4}, std::nullopt, "ssh: connect refused"}};
  const auto j = merge_node_verdicts(nodes, nullptr);
  EXPECT_TRUE(j["observed_oversubscribed"].get<bool>());
  EXPECT_EQ(j["host"], "10.99.0.2");
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["diagnosis"],
            "oversubscribed on h2 (10.99.0.2, ranks 2-3): 2.0 runnable threads on cpuset 1 (1 PU, "
            "2.0x); rank 3: 50% CPU; ok on h1 (10.99.0.1, ranks 0-1): 2 ranks at 99%/98% CPU; no "
            "sample from 10.99.0.3 (rank 4): ssh: connect refused");
}

// Two nodes oversubscribed, the second one's queue costly (its ranks spun in libgomp): the merged
// verdict carries that node's verdict, so its cost clause is the trial's, and reads back costly.
TEST(Nodes, TheMergedVerdictCarriesANodeWhoseQueueCostFirst) {
  auto quiet = node_verdict(true, "oversubscribed: 3.0 runnable threads; no sign it costs the job");
  quiet["queue_cost"] = {{"costly", false}};
  auto costly = node_verdict(true, "oversubscribed: 3.0 runnable threads; it costs CPU time");
  costly["queue_cost"] = {{"costly", true}};
  costly["pus"] = 2;
  costly["ranks"] = {
      {{"rank", 2},
       {"cpu_libraries", {{{"library", "libgomp"}, {"share", 0.6}, {"samples", 60}}}}}};
  std::vector<NodeObservation> nodes = {{"10.99.0.1", "h1", {0, 1}, quiet, ""},
                                        {"10.99.0.2", "h2", {2, 3}, costly, ""}};
  const auto j = merge_node_verdicts(nodes, nullptr);
  EXPECT_EQ(j["host"], "10.99.0.2");
  const auto back = verdict_from_json(j);
  ASSERT_TRUE(back) << back.error().key;
  EXPECT_TRUE(back->queue_cost.costly);
  // Without a costly node the first oversubscribed one stays first, as before.
  nodes[1].verdict = quiet;
  EXPECT_EQ(merge_node_verdicts(nodes, nullptr)["host"], "10.99.0.1");
}

}  // namespace
}  // namespace tune::probes
