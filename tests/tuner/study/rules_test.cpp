// Issue 38 point 1: the rule baselines (tuner/study/rules.h) worked out on a study's own
// parameters, per launcher rule, on machines given by their figures; and the `rules:` key.
// Issue 48: each rule as its tool applies it, with the tool's own condition (cited per test).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tuner/study/rules.h"

namespace tune::tuner {
namespace {

using search::ParamValue;

StudySpec spec_of(const std::string& yaml) {
  auto spec = parse_study_spec(yaml, "s.yaml");
  EXPECT_TRUE(spec) << spec.error();
  return spec ? *spec : StudySpec{};
}

// A PyTorch-like job under mpirun: OpenMP and OpenBLAS by environment, a DataLoader worker flag
// declared as such, and mpirun's binding; run today with everything at its default, unbound.
const std::string k_study = R"(name: s
launch: {mpirun: {n: 2, bind_to: '{bind}'}}
command: [python3, train.py, '--workers={workers}']
env: {OMP_NUM_THREADS: '{omp}', OPENBLAS_NUM_THREADS: '{blas}'}
params:
  omp: [null, 1, 2, 4, 8]
  blas: [null, 1, 2, 4, 8]
  workers: {type: int, low: 0, high: 8}
  bind: [null, none, core, socket, numa]
knobs:
  workers: {knob: torch_dataloader_workers}
enqueue:
  - {omp: null, blas: null, workers: 4, bind: none}
)";

RuleMachine machine(int pus, int cores, int packages, int ranks_per_node, int ranks,
                    int numa_nodes = 0) {
  RuleMachine m;
  m.pus = pus;
  m.cores = cores;
  m.packages = packages;
  m.numa_nodes = numa_nodes > 0 ? numa_nodes : packages;
  m.ranks = ranks;
  m.ranks_per_node = ranks_per_node;
  return m;
}

const RuleEntry* entry_of(const std::vector<RuleEntry>& entries, const std::string& rule) {
  for (const auto& e : entries)
    for (const auto& r : e.rules)
      if (r == rule) return &e;
  return nullptr;
}

std::vector<RuleEntry> rules_on(const std::string& yaml, const RuleMachine& m,
                                std::vector<std::string>* notes = nullptr) {
  auto spec = spec_of(yaml);
  spec.rules = rule_names();
  std::vector<std::string> n;
  auto out = enqueue_with_rules(spec, m, n);
  if (notes) *notes = n;
  return out;
}

TEST(Rules, EachParameterIsReadFromWhereItsPlaceholderStands) {
  const auto targets = param_targets(spec_of(k_study));
  EXPECT_EQ(targets.at("omp").pool, "openmp");
  EXPECT_EQ(targets.at("blas").pool, "blas");
  EXPECT_EQ(targets.at("workers").pool, "dataloader_workers");
  EXPECT_EQ(targets.at("bind").control, "binding");
}

// The text a rule labels an entry with.
std::string text_of(const RuleEntry& e, const std::string& rule) {
  for (std::size_t i = 0; i < e.rules.size(); ++i)
    if (e.rules[i] == rule) return e.texts[i];
  return "";
}

// torch/distributed/run.py, config_from_args: `if "OMP_NUM_THREADS" not in os.environ and
// nproc_per_node > 1: os.environ["OMP_NUM_THREADS"] = "1"`; torchrun binds nothing.
TEST(Rules, TorchrunSetsOmpNumThreadsToOneWhereUnsetAndBindsNothing) {
  // 16 PUs, 8 cores, one package, 4 ranks on it.
  const auto entries = rules_on(k_study, machine(16, 8, 1, 4, 4));
  const auto* e = entry_of(entries, "torchrun");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->from_enqueue);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{1}});
  // Only OMP_NUM_THREADS: OpenBLAS, unset, falls back on it at run time, as under torchrun.
  EXPECT_EQ(e->params.at("blas"), ParamValue{});
  EXPECT_EQ(e->params.at("workers"), ParamValue{std::int64_t{4}});  // as run
  EXPECT_EQ(e->params.at("bind"), ParamValue{std::string("none")});
}

TEST(Rules, TorchrunWithoutAnOmpParameterSetsThePoolsThatFallBackOnIt) {
  // torch's intra-op pool, left unset, reads OMP_NUM_THREADS at start; a set pool does not.
  const std::string study = R"(name: s
launch: {mpirun: {n: 2}}
command: [python3, train.py, '--threads={t}', '--cv={cv}']
params:
  t: [null, 1, 2]
  cv: [null, 1, 2]
knobs:
  t: {knob: torch_intra_op_threads}
  cv: {pool: opencv}
enqueue:
  - {t: null, cv: null}
)";
  const auto entries = rules_on(study, machine(4, 4, 1, 2, 2));
  const auto* e = entry_of(entries, "torchrun");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("t"), ParamValue{std::int64_t{1}});
  EXPECT_EQ(e->params.at("cv"), ParamValue{});  // OpenCV does not read OMP_NUM_THREADS
}

TEST(Rules, TorchrunWithOneProcessPerNodeChangesNothing) {
  // One rank on each of 4 nodes: nproc_per_node = 1.
  const auto entries = rules_on(k_study, machine(16, 8, 1, 1, 4));
  const auto* e = entry_of(entries, "torchrun");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->from_enqueue);  // labels the command as run, never run on its own
  EXPECT_EQ(e->params.at("omp"), ParamValue{});
  EXPECT_NE(text_of(*e, "torchrun").find("changes nothing here: one process per node"),
            std::string::npos)
      << text_of(*e, "torchrun");
}

TEST(Rules, TorchrunAndLightningLeaveAnOmpNumThreadsThatIsSet) {
  // Set by the command as run's parameter.
  std::string study = k_study;
  study.replace(study.find("{omp: null"), 10, "{omp: 2");
  for (const char* rule : {"torchrun", "lightning"}) {
    const auto entries = rules_on(study, machine(16, 8, 1, 4, 4));
    const auto* e = entry_of(entries, rule);
    ASSERT_NE(e, nullptr) << rule;
    EXPECT_TRUE(e->from_enqueue) << rule;
    EXPECT_NE(text_of(*e, rule).find("OMP_NUM_THREADS is set as run"), std::string::npos)
        << text_of(*e, rule);
  }
  // Set by a literal `env:` entry, and by the environment the trials inherit.
  const std::string literal = R"(name: s
launch: {mpirun: {n: 2}}
command: [python3, train.py, '--threads={t}']
env: {OMP_NUM_THREADS: '3'}
params:
  t: [null, 1, 2]
knobs:
  t: {knob: torch_intra_op_threads}
enqueue:
  - {t: null}
)";
  const auto lit = rules_on(literal, machine(4, 4, 1, 2, 2));
  ASSERT_NE(entry_of(lit, "lightning"), nullptr);
  EXPECT_TRUE(entry_of(lit, "lightning")->from_enqueue);
  std::string unset_env = literal;
  const std::string env_line = "env: {OMP_NUM_THREADS: '3'}\n";
  unset_env.erase(unset_env.find(env_line), env_line.size());
  auto m = machine(4, 4, 1, 2, 2);
  const auto free_entries = rules_on(unset_env, m);
  ASSERT_NE(entry_of(free_entries, "lightning"), nullptr);
  EXPECT_EQ(entry_of(free_entries, "lightning")->params.at("t"), ParamValue{std::int64_t{2}});
  m.omp_env_set = true;
  const auto inherited = rules_on(unset_env, m);
  EXPECT_TRUE(entry_of(inherited, "lightning")->from_enqueue);
}

// lightning_fabric/utilities/distributed.py, _set_num_threads_if_needed: when OMP_NUM_THREADS
// is unset, torch.set_num_threads(CPUs // local ranks) and OMP_NUM_THREADS to match; no worker.
TEST(Rules, LightningSetsThreadsOnlyNeverAWorker) {
  const auto e_all = rules_on(k_study, machine(16, 8, 1, 4, 4));
  const auto* e = entry_of(e_all, "lightning");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{4}});      // 16 PUs / 4 local ranks
  EXPECT_EQ(e->params.at("blas"), ParamValue{});                    // not torch's to set
  EXPECT_EQ(e->params.at("workers"), ParamValue{std::int64_t{4}});  // as run
  EXPECT_EQ(e->params.at("bind"), ParamValue{std::string("none")});
}

// pytorch_lightning/trainer/connectors/data_connector.py, _worker_check: warns when a torch
// DataLoader has `num_workers < 2 and upper_bound > 1`, upper_bound = max(1, CPUs // local
// ranks - 1) (lightning_fabric/utilities/data.py, suggested_max_num_workers).
TEST(Rules, LightningWorkersOnlyWhereLightningsWarningFires) {
  std::string zero = k_study;
  zero.replace(zero.find("workers: 4,"), 11, "workers: 0,");
  // 16 PUs / 4 ranks - 1 = 3 > 1, 0 workers as run: the warning fires, 3 workers.
  const auto fires = rules_on(zero, machine(16, 8, 1, 4, 4));
  const auto* e = entry_of(fires, "lightning_workers");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->from_enqueue);
  EXPECT_EQ(e->params.at("workers"), ParamValue{std::int64_t{3}});
  EXPECT_EQ(e->params.at("omp"), ParamValue{});  // threads as run
  // 4 workers as run: no warning.
  const auto many = rules_on(k_study, machine(16, 8, 1, 4, 4));
  EXPECT_TRUE(entry_of(many, "lightning_workers")->from_enqueue);
  // 2 ranks on 2 PUs: the bound is max(1, 2 / 2 - 1) = 1, not above 1: no warning.
  const auto small = rules_on(zero, machine(2, 2, 1, 2, 2));
  const auto* s = entry_of(small, "lightning_workers");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->from_enqueue);
  EXPECT_EQ(s->params.at("workers"), ParamValue{std::int64_t{0}});
  EXPECT_NE(text_of(*s, "lightning_workers").find("is not above 1"), std::string::npos)
      << text_of(*s, "lightning_workers");
  // An iterator that is no torch DataLoader (the bundled trainer's) is not Lightning's to warn.
  const std::string trainer = R"(name: s
launch: {mpirun: {n: 2}}
command: [prog, '--iterator-workers={w}']
params:
  w: [null, 0, 1, 2, 4]
knobs:
  w: {knob: trainer_iterator_workers}
enqueue:
  - {w: 0}
)";
  std::vector<std::string> notes;
  const auto it = rules_on(trainer, machine(16, 8, 1, 2, 2), &notes);
  EXPECT_EQ(entry_of(it, "lightning_workers"), nullptr);
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "lightning_workers: the study has no parameter it sets"),
            notes.end());
}

TEST(Rules, CoresPerRankSplitsThePhysicalCoresAndBindsWhereARankHasAWholeUnit) {
  // 8 cores over 4 ranks: 2 threads each; two cores are no core nor package: unbound, said so.
  std::vector<std::string> notes;
  const auto entries = rules_on(k_study, machine(16, 8, 1, 4, 4), &notes);
  const auto* e = entry_of(entries, "cores_per_rank");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{2}});
  EXPECT_EQ(e->params.at("blas"), ParamValue{std::int64_t{2}});
  EXPECT_EQ(e->params.at("bind"), ParamValue{std::string("none")});
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("slot:PE=2"), std::string::npos) << notes.front();
  // Two packages of 4 cores, 2 ranks: each rank has its package.
  const auto two_all = rules_on(k_study, machine(8, 8, 2, 2, 2));
  const auto* two = entry_of(two_all, "cores_per_rank");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->params.at("omp"), ParamValue{std::int64_t{4}});
  EXPECT_EQ(two->params.at("bind"), ParamValue{std::string("socket")});
  // One core a rank: bound to it.
  const auto one_all = rules_on(k_study, machine(2, 2, 1, 2, 2));
  const auto* one = entry_of(one_all, "cores_per_rank");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->params.at("bind"), ParamValue{std::string("core")});
}

// orte/mca/rmaps/base/rmaps_base_map_job.c (Open MPI 3.x-4.x): with no binding given, core
// for nprocs <= 2, else NUMA when hwloc has a NUMA node object, else the package; an
// oversubscribed node clears the default binding (none).
TEST(Rules, OpenMpisDefaultBindsToCoreUpToTwoRanksAndToTheNumaNodeAbove) {
  const auto two_all = rules_on(k_study, machine(4, 4, 1, 2, 2));
  const auto* two = entry_of(two_all, "openmpi");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->params.at("bind"), ParamValue{std::string("core")});
  const auto four_all = rules_on(k_study, machine(16, 8, 1, 4, 4));
  const auto* four = entry_of(four_all, "openmpi");
  ASSERT_NE(four, nullptr);
  EXPECT_EQ(four->params.at("bind"), ParamValue{std::string("numa")});
  // SNC-like: 2 packages of 2 NUMA nodes each, 8 ranks: NUMA, not the package.
  const auto snc_all = rules_on(k_study, machine(64, 32, 2, 8, 8, 4));
  const auto* snc = entry_of(snc_all, "openmpi");
  ASSERT_NE(snc, nullptr);
  EXPECT_EQ(snc->params.at("bind"), ParamValue{std::string("numa")});
  // 4 ranks on 2 cores: oversubscribed, Open MPI binds nothing.
  const auto over_all = rules_on(k_study, machine(2, 2, 1, 4, 4));
  const auto* over = entry_of(over_all, "openmpi");
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->params.at("bind"), ParamValue{std::string("none")});
}

TEST(Rules, CoresPerRankBindsAnSncRankToItsNumaNode) {
  // 2 packages of 2 NUMA nodes, 32 cores, 4 ranks: each rank has a NUMA node of 8 cores.
  const auto entries = rules_on(k_study, machine(64, 32, 2, 4, 4, 4));
  const auto* e = entry_of(entries, "cores_per_rank");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{8}});
  EXPECT_EQ(e->params.at("bind"), ParamValue{std::string("numa")});
}

TEST(Rules, ARuleThatGivesTheCommandAsRunLabelsTheBaseline) {
  // Run unbound today: horovodrun's -bind-to none is the command as run.
  const auto entries = rules_on(k_study, machine(16, 8, 1, 4, 4));
  ASSERT_FALSE(entries.empty());
  EXPECT_TRUE(entries.front().from_enqueue);
  // Lightning's worker warning does not fire on 4 workers: that rule labels it too.
  EXPECT_EQ(entries.front().rules,
            (std::vector<std::string>{"lightning_workers", "horovodrun"}));
  // A binding left to mpirun (null) is Open MPI's rule already.
  std::string study = k_study;
  study.replace(study.find("bind: none}"), 11, "bind: null}");
  const auto left = rules_on(study, machine(16, 8, 1, 4, 4));
  EXPECT_NE(std::find(left.front().rules.begin(), left.front().rules.end(), "openmpi"),
            left.front().rules.end());
  // No two entries have the same setting.
  for (std::size_t i = 0; i < entries.size(); ++i)
    for (std::size_t j = i + 1; j < entries.size(); ++j)
      EXPECT_NE(entries[i].params, entries[j].params) << i << " " << j;
}

TEST(Rules, AValueOutsideTheDomainIsClampedAndSaid) {
  // 64 PUs / 2 ranks = 32 threads: the nearest choice is 8.
  const auto e_all = rules_on(k_study, machine(64, 32, 1, 2, 2));
  const auto* e = entry_of(e_all, "lightning");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{8}});
  EXPECT_NE(e->texts.front().find("omp=8 (for 32)"), std::string::npos) << e->texts.front();
}

TEST(Rules, ARuleWithNothingToSetIsNotEnqueued) {
  const std::string study = R"(name: s
command: [prog, '--size={size}']
params:
  size: [1, 2]
enqueue:
  - {size: 1}
)";
  std::vector<std::string> notes;
  const auto entries = rules_on(study, machine(4, 4, 1, 1, 1), &notes);
  EXPECT_EQ(entries.size(), 1u);
  // torchrun's condition (more than one process per node) does not hold: it labels the command
  // as run; every other rule has no parameter to set.
  EXPECT_EQ(entries.front().rules, std::vector<std::string>{"torchrun"});
  EXPECT_EQ(notes.size(), rule_names().size() - 1);
}

TEST(Rules, WithoutTheCommandAsRunNoRuleIsGuessed) {
  // `workers` has no null and the study enqueues nothing: there is no "as run" to change.
  std::string study = k_study;
  study.erase(study.find("enqueue:"));
  std::vector<std::string> notes;
  const auto entries = rules_on(study, machine(16, 8, 1, 4, 4), &notes);
  EXPECT_TRUE(entries.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes.front().find("'workers'"), std::string::npos) << notes.front();
}

TEST(Rules, TheKeyTakesKnownNamesOrAll) {
  EXPECT_EQ(spec_of(k_study + "rules: all\n").rules, rule_names());
  EXPECT_EQ(spec_of(k_study + "rules: [torchrun, openmpi]\n").rules,
            (std::vector<std::string>{"torchrun", "openmpi"}));
  const auto bad = parse_study_spec(k_study + "rules: [torchrun, slurmish]\n", "s.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("s.yaml:14: key 'rules[1]': unknown rule 'slurmish'"),
            std::string::npos)
      << bad.error();
  EXPECT_FALSE(parse_study_spec(k_study + "rules: [torchrun, torchrun]\n", "s.yaml"));
}

}  // namespace
}  // namespace tune::tuner
