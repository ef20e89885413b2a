// The knob catalog: the embedded probes/knobs.yaml loads and every knob is well formed, ranges
// resolve against the machine, bad catalog text fails at the key, and the bundled trainer's
// thread model is the catalog's.
#include <gtest/gtest.h>

#include <algorithm>

#include "probes/knob_catalog.h"
#include "probes/predict.h"

namespace tune::probes {
namespace {

// An invented machine; value() fails the test loudly should hwloc refuse the description.
Topology machine(const std::string& desc) { return read_synthetic_topology(desc).value(); }

TEST(KnobCatalog, EmbeddedCatalogLoadsAndEveryKnobIsWellFormed) {
  const KnobCatalog& c = knob_catalog();
  ASSERT_GE(c.knobs().size(), 30u);
  EXPECT_TRUE(knob_catalog_text().starts_with("# The knob catalog")) << "embedded with comments";
  KnobContext ctx = knob_context(machine("pack:2 core:4 pu:2"), 2);
  ctx.file_exists = [](const std::string&) { return true; };  // every allocator installed
  for (const Knob& k : c.knobs()) {
    SCOPED_TRACE(k.name);
    EXPECT_TRUE(c.is_control(k.controls));
    EXPECT_FALSE(k.default_text.empty());
    EXPECT_FALSE(k.programs.empty());
    EXPECT_TRUE(k.variable.empty() ? !k.example.empty() : true) << "a script flag needs example";
    const auto range = c.resolve(k, ctx);
    ASSERT_TRUE(range) << range.error();
    if (k.type == "choice" || k.type == "bool") {
      EXPECT_FALSE(range->choices.empty());
    } else {
      EXPECT_LE(range->low, range->high);
    }
    if (k.default_value == "pool") {
      EXPECT_NE(c.pool(k.controls), nullptr);
    }
  }
  // Every pool can be set by some knob, and each pool's variables are knobs.
  for (const KnobPool& p : c.pools()) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(c.controlling(p.name).empty());
    for (const auto& v : p.env) EXPECT_NE(c.find_variable(v), nullptr);
  }
}

TEST(KnobCatalog, HoldsTheKnobsIssue14Names) {
  const KnobCatalog& c = knob_catalog();
  for (const char* variable : {"OMP_NUM_THREADS",
                               "OPENBLAS_NUM_THREADS",
                               "MKL_NUM_THREADS",
                               "OPENCV_FOR_THREADS_NUM",
                               "--bind-to",
                               "--map-by",
                               "coll_tuned_use_dynamic_rules",
                               "coll_tuned_allreduce_algorithm",
                               "coll_tuned_allreduce_algorithm_segmentsize",
                               "NCCL_ALGO",
                               "NCCL_PROTO",
                               "NCCL_NTHREADS",
                               "NCCL_BUFFSIZE",
                               "NCCL_MIN_NCHANNELS",
                               "--iterator-workers",
                               "--omp-threads",
                               "--blas-threads",
                               "--opencv-threads",
                               "--double-buffering",
                               "--allreduce",
                               "--bucket-mb"})
    EXPECT_NE(c.find_variable(variable), nullptr) << variable;
  for (const char* name : {"torch_intra_op_threads", "torch_inter_op_threads",
                           "torch_dataloader_workers", "chainer_iterator_workers"})
    EXPECT_NE(c.find(name), nullptr) << name;
  EXPECT_EQ(c.find_variable("OMP_NUM_THREADS")->controls, "openmp");
  EXPECT_EQ(c.find("torch_dataloader_workers")->controls, "dataloader_workers");
  EXPECT_EQ(c.pool("dataloader_workers")->unit, "process");
  EXPECT_EQ(c.find("coll_tuned_allreduce_algorithm")->needs,
            std::vector<std::string>{"coll_tuned_use_dynamic_rules=1"});
  EXPECT_EQ(c.find("nope"), nullptr);
  EXPECT_EQ(c.pool("nope"), nullptr);
}

TEST(KnobCatalog, RangesResolveAgainstTheTopologyAndRanksPerNode) {
  const KnobCatalog& c = knob_catalog();
  // 2 packages x 4 cores x 2 PUs = 16 PUs, 8 cores; 4 ranks per node.
  const KnobContext big = knob_context(machine("pack:2 core:4 pu:2"), 4);
  EXPECT_EQ(big.pus_per_rank(), 4);
  EXPECT_EQ(big.cores_per_rank(), 2);
  const auto omp = c.resolve(*c.find("omp_num_threads"), machine("pack:2 core:4 pu:2"), 4);
  ASSERT_TRUE(omp);
  EXPECT_EQ(omp->low, 1);
  EXPECT_EQ(omp->high, 4);
  const auto bind = c.resolve(*c.find("mpirun_bind_to"), big);
  EXPECT_NE(std::find(bind->choices.begin(), bind->choices.end(), "hwthread"), bind->choices.end());

  // 2 cores without SMT, 2 ranks: one PU each; no hardware threads, no GPUs.
  const KnobContext small = knob_context(machine("pack:1 core:2 pu:1"), 2);
  const auto one = c.resolve(*c.find("omp_num_threads"), small);
  EXPECT_EQ(one->high, 1);
  const auto no_smt = c.resolve(*c.find("mpirun_bind_to"), small);
  EXPECT_EQ(std::find(no_smt->choices.begin(), no_smt->choices.end(), "hwthread"),
            no_smt->choices.end());
  const auto algos = c.resolve(*c.find("trainer_allreduce"), small);
  EXPECT_EQ(algos->choices,
            (std::vector<std::string>{"mpi", "ring", "rabenseifner", "hierarchical"}));

  // Pool defaults: the cpuset's PUs for libgomp, the machine's cores for PyTorch.
  KnobContext rank = small;
  rank.cpuset_pus = 1;
  EXPECT_EQ(c.pool_default(*c.pool("openmp"), rank), 1);
  EXPECT_EQ(c.pool_default(*c.pool("torch_intra_op"), rank), 2);
  EXPECT_EQ(c.pool_default(*c.pool("dataloader_workers"), rank), 0);
}

TEST(KnobCatalog, ExpressionsAreNumbersNamesOrMultiples) {
  KnobContext ctx;
  ctx.pus = 8;
  ctx.cores = 4;
  ctx.ranks_per_node = 2;
  EXPECT_EQ(evaluate_knob_expression("2*cores", ctx).value(), 8);
  EXPECT_EQ(evaluate_knob_expression("pus_per_rank", ctx).value(), 4);
  EXPECT_EQ(evaluate_knob_expression("0.25", ctx).value(), 0.25);
  const auto bad = evaluate_knob_expression("sockets", ctx);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("'sockets': unknown name"), std::string::npos) << bad.error();
  EXPECT_FALSE(evaluate_knob_expression("x*pus", ctx));
}

// A minimal valid catalog, with `knob` as its one knob.
std::string catalog_with(const std::string& knob, const std::string& pool_env = "[]") {
  return "schema_version: 1\nprograms: [any]\nother_controls: [binding]\n"
         "pools:\n  openmp:\n    unit: thread\n    busy: turns\n    env: " +
         pool_env +
         "\n    default: cpuset_pus\n    default_text: per PU\n"
         "knobs:\n" +
         knob;
}

TEST(KnobCatalog, BadCatalogTextFailsAtTheKeyAndLine) {
  const std::string good =
      "  - {name: omp, set_by: env, variable: OMP_NUM_THREADS, controls: openmp, type: int,\n"
      "     low: 1, high: pus_per_rank, default: pool, default_text: x, programs: [any]}\n";
  ASSERT_TRUE(KnobCatalog::parse(catalog_with(good), "k.yaml"));
  struct Case {
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {catalog_with(good.substr(0, good.find("openmp")) + "gpu" + good.substr(good.find(", type"))),
       "k.yaml:12: key 'knobs.omp.controls': 'gpu' is neither a pool nor in other_controls"},
      {catalog_with(good, "[OMP_NUM_THREAD]"),
       "k.yaml:8: key 'pools.openmp.env': 'OMP_NUM_THREAD' is not an env knob"},
      {catalog_with(good.substr(0, good.find("pus_per_rank")) + "sockets" +
                    good.substr(good.find(", default:"))),
       "key 'knobs.omp.high': 'sockets': unknown name"},
      {catalog_with(good + good), "key 'knobs.omp': duplicate knob name"},
      {catalog_with("  - {name: b, set_by: env, variable: V, controls: binding, type: choice,\n"
                    "     choices: [a], default: z, default_text: x, programs: [any]}\n"),
       "key 'knobs.b.default': 'z' is not one of the choices"},
      {catalog_with("  - {name: b, set_by: env, variable: V, controls: binding, type: bool,\n"
                    "     default: false, default_text: x, programs: [python]}\n"),
       "key 'knobs.b.programs': unknown program 'python'"},
  };
  for (const Case& c : cases) {
    const auto parsed = KnobCatalog::parse(c.text, "k.yaml");
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_NE(parsed.error().find(c.error), std::string::npos) << parsed.error();
    EXPECT_EQ(parsed.error().find('\n'), std::string::npos) << "one line";
  }
}

TEST(KnobCatalog, TheTrainersThreadModelIsTheCatalogs) {
  const ProgramModel& m = trainer_program_model();
  EXPECT_EQ(m.program, "tune-trainer");
  std::vector<std::string> pools;
  for (const PoolModel& p : m.pools) pools.push_back(p.pool + " " + p.flag);
  EXPECT_EQ(pools,
            (std::vector<std::string>{"iterator_workers --iterator-workers", "openmp --omp-threads",
                                      "blas --blas-threads", "opencv --opencv-threads",
                                      "comm --double-buffering"}));
  // --iterator-workers has a default of its own (2); --omp-threads 0 means "unset".
  const Knob* workers = knob_catalog().find_variable("--iterator-workers", "tune-trainer");
  EXPECT_EQ(m.pools[0].program_default, std::stoi(workers->default_value));
  EXPECT_FALSE(m.pools[1].program_default);
  EXPECT_TRUE(m.pools[4].flag_is_switch);
}

}  // namespace
}  // namespace tune::probes
