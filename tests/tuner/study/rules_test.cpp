// Issue 38 point 1: the rule baselines (tuner/study/rules.h) worked out on a study's own
// parameters, per launcher rule, on machines given by their figures; and the `rules:` key.
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
  bind: [null, none, core, socket]
knobs:
  workers: {knob: torch_dataloader_workers}
enqueue:
  - {omp: null, blas: null, workers: 4, bind: none}
)";

RuleMachine machine(int pus, int cores, int packages, int ranks_per_node, int ranks) {
  RuleMachine m;
  m.pus = pus;
  m.cores = cores;
  m.packages = packages;
  m.numa_nodes = packages;
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

TEST(Rules, TorchrunSetsOneThreadWhereUnsetAndBindsNothing) {
  // 16 PUs, 8 cores, one package, 4 ranks on it.
  const auto entries = rules_on(k_study, machine(16, 8, 1, 4, 4));
  const auto* e = entry_of(entries, "torchrun");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{1}});
  // OpenBLAS falls back to OMP_NUM_THREADS when its own variable is unset.
  EXPECT_EQ(e->params.at("blas"), ParamValue{std::int64_t{1}});
  EXPECT_EQ(e->params.at("workers"), ParamValue{std::int64_t{4}});  // as run
  EXPECT_EQ(e->params.at("bind"), ParamValue{std::string("none")});
}

TEST(Rules, TorchrunLeavesAThreadCountTheCommandSets) {
  std::string study = k_study;
  study.replace(study.find("{omp: null"), 10, "{omp: 2");
  const auto e_all = rules_on(study, machine(16, 8, 1, 4, 4));
  const auto* e = entry_of(e_all, "torchrun");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{2}});
}

TEST(Rules, LightningGivesPusPerRankThreadsAndOneWorkerFewer) {
  // 16 PUs / 4 local ranks = 4 threads; workers 4 - 1 = 3.
  const auto e_all = rules_on(k_study, machine(16, 8, 1, 4, 4));
  const auto* e = entry_of(e_all, "lightning");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->params.at("omp"), ParamValue{std::int64_t{4}});
  EXPECT_EQ(e->params.at("workers"), ParamValue{std::int64_t{3}});
  EXPECT_EQ(e->params.at("bind"), ParamValue{std::string("none")});  // as run
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

TEST(Rules, OpenMpisDefaultBindsToCoreUpToTwoRanksAndToThePackageAbove) {
  const auto two_all = rules_on(k_study, machine(4, 4, 1, 2, 2));
  const auto* two = entry_of(two_all, "openmpi");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->params.at("bind"), ParamValue{std::string("core")});
  const auto four_all = rules_on(k_study, machine(16, 8, 1, 4, 4));
  const auto* four = entry_of(four_all, "openmpi");
  ASSERT_NE(four, nullptr);
  EXPECT_EQ(four->params.at("bind"), ParamValue{std::string("socket")});
}

TEST(Rules, ARuleThatGivesTheCommandAsRunLabelsTheBaseline) {
  // Run unbound today: horovodrun's -bind-to none is the command as run.
  const auto entries = rules_on(k_study, machine(16, 8, 1, 4, 4));
  ASSERT_FALSE(entries.empty());
  EXPECT_TRUE(entries.front().from_enqueue);
  EXPECT_EQ(entries.front().rules, std::vector<std::string>{"horovodrun"});
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
  EXPECT_EQ(notes.size(), rule_names().size());
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
