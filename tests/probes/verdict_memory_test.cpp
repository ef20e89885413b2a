// Predictions that remember: a layout already observed is predicted as it was observed, and at
// risk when some of its runs were oversubscribed; a new layout, a tie or another node's record
// leaves the model's verdict alone.
#include <gtest/gtest.h>

#include "probes/predict.h"
#include "probes/topology.h"
#include "probes/verdict_memory.h"

namespace tune::probes {
namespace {

LaunchPlan two_ranks(std::string bind, std::string threads) {
  LaunchPlan p;
  p.uses_mpirun = true;
  p.ranks_per_node = 2;
  p.bind_to = std::move(bind);
  p.program_argv = {"python3", "train.py", "--threads", std::move(threads)};
  return p;
}

ProgramModel torch_model() {
  ProgramModel m;
  m.program = "torch";
  PoolModel intra;
  intra.pool = "torch_intra_op";
  intra.flag = "--threads";
  m.pools.push_back(intra);
  return m;
}

nlohmann::json verdict(bool over) { return {{"observed_oversubscribed", over}}; }

TEST(VerdictMemory, AnObservedLayoutIsPredictedAsItWasObserved) {
  const Topology t = *read_synthetic_topology("pack:1 core:2 pu:1");
  const Prediction one = predict(t, two_ranks("none", "1"), torch_model());
  const Prediction two = predict(t, two_ranks("none", "2"), torch_model());
  EXPECT_NE(layout_signature(one.to_json()), layout_signature(two.to_json()));
  EXPECT_FALSE(one.oversubscribed) << one.summary;

  VerdictMemory memory;
  EXPECT_TRUE(memory.add(one.to_json(), verdict(true)));
  EXPECT_TRUE(memory.add(one.to_json(), verdict(true)));
  EXPECT_TRUE(memory.add(one.to_json(), verdict(false)));
  Prediction again = predict(t, two_ranks("none", "1"), torch_model());
  apply_verdict_memory(again, memory);
  ASSERT_TRUE(again.remembered.has_value());
  EXPECT_TRUE(again.oversubscribed);
  EXPECT_TRUE(again.summary.starts_with("oversubscribed: ")) << again.summary;
  EXPECT_NE(again.summary.find("observed oversubscribed in 2 of 3 earlier trials with these "
                               "threads and cpusets"),
            std::string::npos)
      << again.summary;
  EXPECT_DOUBLE_EQ(prediction_constraint(again), 0.5);
  EXPECT_EQ(again.to_json()["remembered"], true);

  // Another layout: the model's own answer.
  Prediction other = predict(t, two_ranks("none", "2"), torch_model());
  const bool model = other.oversubscribed;
  apply_verdict_memory(other, memory);
  EXPECT_FALSE(other.remembered.has_value());
  EXPECT_EQ(other.oversubscribed, model);
}

// A layout oversubscribed in some runs and not in others (hpcc's unbound BLAS threads): the
// likelier outcome is the verdict, and the setting is called at risk with the chance learned
// from its runs, the rules' verdict weighing as one run.
TEST(VerdictMemory, ALayoutOversubscribedInSomeRunsIsAtRisk) {
  const Topology t = *read_synthetic_topology("pack:1 core:2 pu:1");
  const Prediction fresh = predict(t, two_ranks("none", "2"), torch_model());
  ASSERT_TRUE(fresh.oversubscribed) << fresh.summary;  // 4 busy threads on 2 PUs by the rules
  EXPECT_TRUE(fresh.rules_oversubscribed);
  EXPECT_TRUE(fresh.at_risk);
  EXPECT_DOUBLE_EQ(fresh.risk, 1.0);
  EXPECT_EQ(fresh.to_json()["at_risk"], true);

  VerdictMemory memory;
  for (int i = 0; i < 10; ++i) memory.add(fresh.to_json(), verdict(i < 4));
  Prediction mixed = predict(t, two_ranks("none", "2"), torch_model());
  apply_verdict_memory(mixed, memory);
  EXPECT_FALSE(mixed.oversubscribed);  // 6 of 10 runs were ok
  EXPECT_TRUE(mixed.at_risk);
  EXPECT_DOUBLE_EQ(mixed.risk, 5.0 / 11);
  EXPECT_EQ(mixed.risk_runs, 10);
  EXPECT_NE(mixed.summary.find("at risk (45%): oversubscribed in 4 of 10 earlier runs, and the "
                               "threads exceed the PUs when all are busy"),
            std::string::npos)
      << mixed.summary;

  // Runs observed ok clear the rules' hazard after five: 1/5 is still at risk, 1/6 is not.
  VerdictMemory calm;
  for (int i = 0; i < 4; ++i) calm.add(fresh.to_json(), verdict(false));
  Prediction four = predict(t, two_ranks("none", "2"), torch_model());
  apply_verdict_memory(four, calm);
  EXPECT_TRUE(four.at_risk);
  EXPECT_FALSE(four.oversubscribed);
  calm.add(fresh.to_json(), verdict(false));
  Prediction five = predict(t, two_ranks("none", "2"), torch_model());
  apply_verdict_memory(five, calm);
  EXPECT_FALSE(five.at_risk);
  EXPECT_DOUBLE_EQ(five.risk, 1.0 / 6);

  // A layout the rules call ok is at risk once one run in five was observed oversubscribed.
  const Prediction one = predict(t, two_ranks("none", "1"), torch_model());
  EXPECT_FALSE(one.at_risk);
  VerdictMemory rare;
  rare.add(one.to_json(), verdict(true));
  for (int i = 0; i < 4; ++i) rare.add(one.to_json(), verdict(false));
  Prediction once = predict(t, two_ranks("none", "1"), torch_model());
  apply_verdict_memory(once, rare);
  EXPECT_FALSE(once.oversubscribed);
  EXPECT_DOUBLE_EQ(once.risk, 1.0 / 6);
  EXPECT_FALSE(once.at_risk);
  rare.add(one.to_json(), verdict(true));
  Prediction twice = predict(t, two_ranks("none", "1"), torch_model());
  apply_verdict_memory(twice, rare);
  EXPECT_TRUE(twice.at_risk);
}

TEST(VerdictMemory, ATieOrARecordItCannotReadChangesNothing) {
  const Topology t = *read_synthetic_topology("pack:1 core:2 pu:1");
  const Prediction p = predict(t, two_ranks("core", "1"), torch_model());
  VerdictMemory memory;
  EXPECT_TRUE(memory.add(p.to_json(), verdict(true)));
  EXPECT_TRUE(memory.add(p.to_json(), verdict(false)));
  Prediction tie = p;
  apply_verdict_memory(tie, memory);
  EXPECT_FALSE(tie.remembered.has_value());
  EXPECT_EQ(tie.oversubscribed, p.oversubscribed);
  // The verdict stays the model's; the one oversubscribed run of two makes the setting at risk.
  EXPECT_EQ(tie.summary, p.summary + "; at risk (33%): oversubscribed in 1 of 2 earlier runs");
  // A trial with no observed verdict, a multi-node record, junk: not added.
  EXPECT_FALSE(memory.add(p.to_json(), nlohmann::json::object()));
  nlohmann::json multi = p.to_json();
  multi["nodes"] = nlohmann::json::array();
  EXPECT_FALSE(memory.add(multi, verdict(true)));
  EXPECT_FALSE(memory.add(nlohmann::json::array(), verdict(true)));
  EXPECT_FALSE(memory.add({{"ranks", {{{"rank", "x"}}}}}, verdict(true)));
  EXPECT_FALSE(memory.add({{"ranks", {{{"rank", 0}, {"cpuset", 7}}}}}, verdict(true)));
  EXPECT_FALSE(memory.add({{"ranks", {{{"rank", 0}, {"groups", "main"}}}}}, verdict(true)));
  EXPECT_FALSE(
      memory.add({{"ranks", {{{"rank", 0}, {"groups", {{{"name", "main"}, {"threads", "1"}}}}}}}},
                 verdict(true)));
  EXPECT_EQ(memory.seen(layout_signature(p.to_json())), (std::pair<int, int>{1, 2}));
}

}  // namespace
}  // namespace tune::probes
