// The knob families beyond pool sizes (issue 38): how an OpenMP team waits (OMP_WAIT_POLICY,
// GOMP_SPINCOUNT, KMP_BLOCKTIME) and where it runs (OMP_PROC_BIND, OMP_PLACES) as the prediction
// counts them, and the catalog's entries that exist only on some machines (SMT, an allocator
// whose library is installed).
#include <gtest/gtest.h>

#include <set>

#include "probes/knob_catalog.h"
#include "probes/predict.h"

namespace tune::probes {
namespace {

Topology machine(const std::string& desc) { return read_synthetic_topology(desc).value(); }

// A program whose only pool is the OpenMP team, of the given program tag.
ProgramModel openmp_program(std::string program = "any") {
  ProgramModel m;
  m.program = std::move(program);
  PoolModel team;
  team.pool = program == "torch" ? "torch_intra_op" : "openmp";
  m.pools.push_back(team);
  return m;
}

LaunchPlan one_rank(std::map<std::string, std::string> env) {
  LaunchPlan p;
  p.program_argv = {"/opt/app/solver"};
  p.env = std::move(env);
  return p;
}

LaunchPlan unbound_ranks(int np, std::map<std::string, std::string> env) {
  LaunchPlan p = one_rank(std::move(env));
  p.uses_mpirun = true;
  p.ranks_per_node = np;
  p.n = np;
  p.bind_to = "none";
  return p;
}

// One rank on 2 PUs with a team of 4: by the catalog's turns model the team takes turns on the
// PUs (2 busy: not oversubscribed); spinning idle threads stay runnable (4 busy on 2 PUs).
TEST(KnobFamilies, WaitPolicyDecidesWhetherTheTeamSpins) {
  const Topology topo = machine("pack:1 core:2 pu:1");
  auto busy = [&](std::map<std::string, std::string> env, const std::string& program = "any") {
    env["OMP_NUM_THREADS"] = "4";
    const Prediction p = predict(topo, one_rank(env), openmp_program(program));
    return std::pair{p.ranks.at(0).busy_threads, p.oversubscribed};
  };
  EXPECT_EQ(busy({}), (std::pair{2, false}));
  EXPECT_EQ(busy({{"OMP_WAIT_POLICY", "passive"}}), (std::pair{2, false}));
  EXPECT_EQ(busy({{"OMP_WAIT_POLICY", "ACTIVE"}}), (std::pair{4, true}));
  // A runtime's own variable wins over OMP_WAIT_POLICY.
  EXPECT_EQ(busy({{"OMP_WAIT_POLICY", "active"}, {"GOMP_SPINCOUNT", "0"}}), (std::pair{2, false}));
  EXPECT_EQ(busy({{"OMP_WAIT_POLICY", "passive"}, {"GOMP_SPINCOUNT", "infinite"}}),
            (std::pair{4, true}));
  EXPECT_EQ(busy({{"GOMP_SPINCOUNT", "30000000"}}), (std::pair{4, true}));
  EXPECT_EQ(busy({{"GOMP_SPINCOUNT", "300000"}}), (std::pair{2, false}));  // the default
  EXPECT_EQ(busy({{"OMP_WAIT_POLICY", "active"}, {"KMP_BLOCKTIME", "0"}}), (std::pair{2, false}));
  EXPECT_EQ(busy({{"KMP_BLOCKTIME", "infinite"}}), (std::pair{4, true}));
  // PyTorch's intra-op pool is the OpenMP team: OMP_WAIT_POLICY reaches it; GOMP_SPINCOUNT is
  // libgomp's, not a knob of a torch program (its runtime is told by the probe run, not here).
  EXPECT_EQ(busy({{"OMP_WAIT_POLICY", "active"}}, "torch"), (std::pair{4, true}));
  EXPECT_EQ(busy({{"GOMP_SPINCOUNT", "infinite"}}, "torch"), (std::pair{2, false}));
  // The group says which variable decided.
  const Prediction p =
      predict(topo, one_rank({{"OMP_NUM_THREADS", "4"}, {"OMP_WAIT_POLICY", "active"}}),
              openmp_program());
  bool told = false;
  for (const ThreadGroup& g : p.ranks.at(0).groups)
    told = told || g.detail.find("OMP_WAIT_POLICY=active: idle threads spin") != std::string::npos;
  EXPECT_TRUE(told);
}

// Two unbound ranks on a 4-core SMT node, each with a team of 4: floating, 8 busy threads on 8
// PUs. Bound to one place per PU, both teams start at the first place: they stack on PUs 0-3.
// One place per core: each team's 4 places are the 4 cores (all 8 PUs), as unbound.
TEST(KnobFamilies, BoundTeamsRunOnPlacesFromTheFirst) {
  const Topology topo = machine("pack:1 core:4 pu:2");
  auto run = [&](std::map<std::string, std::string> env, std::string threads = "4") {
    env["OMP_NUM_THREADS"] = threads;
    return predict(topo, unbound_ranks(2, env), openmp_program());
  };
  const Prediction floating = run({});
  EXPECT_FALSE(floating.oversubscribed);
  EXPECT_EQ(floating.ranks.at(0).cpuset.size(), 8u);
  const Prediction threads = run({{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "threads"}});
  EXPECT_TRUE(threads.oversubscribed) << threads.summary;
  EXPECT_EQ(threads.ranks.at(0).cpuset, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(threads.ranks.at(1).cpuset, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_FALSE(threads.notes.empty());
  EXPECT_NE(threads.notes.back().find("4 places of 8"), std::string::npos) << threads.notes.back();
  const Prediction cores = run({{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}});
  EXPECT_FALSE(cores.oversubscribed) << cores.summary;
  EXPECT_EQ(cores.ranks.at(0).cpuset.size(), 8u);
  // OMP_PLACES alone binds (libgomp: OMP_PROC_BIND defaults to true); false floats.
  EXPECT_TRUE(run({{"OMP_PLACES", "threads"}}).oversubscribed);
  EXPECT_FALSE(run({{"OMP_PROC_BIND", "false"}, {"OMP_PLACES", "threads"}}).oversubscribed);
  // Binding alone: one place per PU.
  EXPECT_TRUE(run({{"OMP_PROC_BIND", "true"}}).oversubscribed);
  // A team of 2 spread over the 4 core places takes cores 0 and 2.
  const Prediction spread = run({{"OMP_PROC_BIND", "spread"}, {"OMP_PLACES", "cores"}}, "2");
  EXPECT_EQ(spread.ranks.at(0).cpuset, (std::vector<int>{0, 1, 4, 5}));
  // More threads than places: they share them (said), the team keeps every place.
  const Prediction more = run({{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}}, "6");
  EXPECT_EQ(more.ranks.at(0).cpuset.size(), 8u);
  ASSERT_FALSE(more.notes.empty());
  EXPECT_NE(more.notes.back().find("more threads than places"), std::string::npos);
  // Places the prediction does not model are said, and predicted unbound.
  const Prediction list = run({{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "{0,1},{2,3}"}});
  EXPECT_EQ(list.ranks.at(0).cpuset.size(), 8u);
  ASSERT_FALSE(list.notes.empty());
  EXPECT_NE(list.notes.back().find("not modelled"), std::string::npos);
}

TEST(KnobFamilies, SmtKnobsExistOnlyOnSmtMachines) {
  const KnobCatalog& c = knob_catalog();
  const KnobContext flat = knob_context(machine("pack:1 core:2 pu:1"), 1);
  const KnobContext smt = knob_context(machine("pack:2 core:4 pu:2"), 2);
  const Knob* hw = c.find("mpirun_use_hwthread_cpus");
  ASSERT_NE(hw, nullptr);
  EXPECT_EQ(hw->variable, "--use-hwthread-cpus");
  EXPECT_FALSE(c.available(*hw, flat));
  EXPECT_TRUE(c.available(*hw, smt));
  EXPECT_TRUE(c.available(*c.find("omp_places"), flat));
  EXPECT_EQ(c.resolve(*c.find("omp_places"), flat)->choices, std::vector<std::string>{"cores"});
  EXPECT_EQ(c.resolve(*c.find("omp_places"), smt)->choices,
            (std::vector<std::string>{"threads", "cores", "sockets"}));
  const auto bind = c.resolve(*c.find("mpirun_bind_to"), flat)->choices;
  EXPECT_EQ(std::count(bind.begin(), bind.end(), "hwthread"), 0);
}

// --use-hwthread-cpus: every PU a slot, so 4 ranks on 2 cores x 2 PUs are not more than the
// slots (bound one per hardware thread) where by cores they are (unbound: Open MPI's rule).
TEST(KnobFamilies, HardwareThreadSlotsBindEachRankToAPu) {
  const Topology topo = machine("pack:1 core:2 pu:2");
  MpirunOptions options;
  options.n = "4";
  std::vector<std::string> args = {"--use-hwthread-cpus", "/opt/app/solver"};
  ASSERT_EQ(read_mpirun_options(args, options), 1u);
  EXPECT_TRUE(options.use_hwthread_cpus);
  LaunchPlan plan = launch_plan_from_mpirun(options, {"/opt/app/solver"}, {});
  EXPECT_TRUE(plan.hwthread_slots);
  const Prediction slots = predict(topo, plan, openmp_program());
  EXPECT_EQ(slots.bind_to, "hwthread");
  ASSERT_EQ(slots.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(slots.ranks[static_cast<std::size_t>(r)].cpuset, std::vector<int>{r});
  plan.hwthread_slots = false;
  EXPECT_EQ(predict(topo, plan, openmp_program()).bind_to, "none");
}

TEST(KnobFamilies, AllocatorChoicesAreTheLibrariesInstalled) {
  const KnobCatalog& c = knob_catalog();
  const Knob* alloc = c.find_variable("LD_PRELOAD");
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->name, "allocator");
  KnobContext ctx = knob_context(machine("pack:1 core:2 pu:1"), 1);
  std::set<std::string> files;
  ctx.file_exists = [&](const std::string& path) { return files.contains(path); };
  EXPECT_TRUE(c.resolve(*alloc, ctx)->choices.empty());
  files.insert("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
  EXPECT_EQ(c.resolve(*alloc, ctx)->choices,
            std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"});
  files.insert("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4");
  EXPECT_EQ(c.resolve(*alloc, ctx)->choices.size(), 2u);
}

TEST(KnobFamilies, BusyRulesMatchValuesAndThresholds) {
  const KnobCatalog& c = knob_catalog();
  const Knob& gomp = *c.find("gomp_spincount");
  EXPECT_EQ(gomp.affects, "openmp");
  EXPECT_EQ(knob_busy(gomp, "0"), PoolBusy::turns);
  EXPECT_EQ(knob_busy(gomp, "INFINITY"), PoolBusy::spin);
  EXPECT_EQ(knob_busy(gomp, "300001"), PoolBusy::spin);
  EXPECT_EQ(knob_busy(gomp, "300000"), std::nullopt);
  EXPECT_EQ(knob_busy(gomp, "junk"), std::nullopt);
  EXPECT_EQ(knob_busy(*c.find("omp_num_threads"), "4"), std::nullopt);
  // Each runtime's variable applies to the programs that map it.
  EXPECT_TRUE(gomp.applies_to("libgomp"));
  EXPECT_FALSE(gomp.applies_to("libomp"));
  EXPECT_TRUE(c.find("kmp_blocktime")->applies_to("libomp"));
}

TEST(KnobFamilies, BadFamilyEntriesFailAtTheirKey) {
  const std::string head =
      "schema_version: 1\nprograms: [any]\nother_controls: [wait_policy]\n"
      "pools:\n  openmp: {unit: thread, busy: turns, env: [], default: 1, default_text: one}\n"
      "knobs:\n";
  const std::string knob =
      "  - {name: w, set_by: env, variable: W, controls: wait_policy, type: choice, choices: [a],"
      " default: default, default_text: x, programs: [any]";
  auto error = [&](const std::string& extra) {
    auto parsed = KnobCatalog::parse(head + knob + extra + "}\n", "k.yaml");
    return parsed ? std::string() : parsed.error();
  };
  EXPECT_EQ(error(", affects: openmp, busy: {a: spin}"), "");
  EXPECT_NE(error(", busy: {a: spin}").find("need `affects:`"), std::string::npos);
  EXPECT_NE(error(", affects: nope").find("'nope' is not a pool"), std::string::npos);
  EXPECT_NE(error(", affects: openmp, busy: {a: fast}").find("knobs.w.busy.a"), std::string::npos);
  EXPECT_NE(error(", affects: openmp, busy: {'>x': spin}").find("expected >N"), std::string::npos);
  EXPECT_NE(error(", when: moon").find("knobs.w.when"), std::string::npos);
  auto file_choice = KnobCatalog::parse(
      head + "  - {name: a, set_by: env, variable: LD_PRELOAD, controls: wait_policy, type: "
             "choice, choices: [{value: lib.so, when: file}], default: default, default_text: "
             "x, programs: [any]}\n",
      "k.yaml");
  ASSERT_FALSE(file_choice);
  EXPECT_NE(file_choice.error().find("absolute path"), std::string::npos) << file_choice.error();
}

}  // namespace
}  // namespace tune::probes
