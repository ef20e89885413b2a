// Predictions that learn: what earlier trials measured per thread group re-counts a prediction,
// so an idle pool stops counting as busy and a spinning one keeps counting.
#include <gtest/gtest.h>

#include "probes/learned_duty.h"

namespace tune::probes {
namespace {

Topology two_pus() { return *read_synthetic_topology("pack:1 core:2 pu:1"); }

// The quickstart's unbound defaults: 2 iterator workers, OpenMP, OpenBLAS and OpenCV one per PU.
Prediction unbound_defaults() {
  LaunchPlan plan;
  plan.uses_mpirun = true;
  plan.ranks_per_node = 2;
  plan.bind_to = "none";
  plan.program_argv = {"tune-trainer"};
  return predict(two_pus(), plan, trainer_program_model());
}

DutyCycle duty(double threads, double runnable) { return DutyCycle{threads, runnable, runnable}; }

TEST(LearnedDuty, IdlePoolsStopCountingAsBusy) {
  const Prediction prior = unbound_defaults();
  ASSERT_TRUE(prior.oversubscribed) << prior.summary;  // the prior counts every pool as busy
  // Two earlier trials measured the same settings: the main thread busy, OpenMP and the iterator
  // workers mostly idle, OpenBLAS's thread idle (its work was done by the caller).
  LearnedDuty learned;
  const std::map<std::string, DutyCycle> measured = {{"main", duty(1, 0.95)},
                                                     {"openmp", duty(1, 0.05)},
                                                     {"blas", duty(1, 0.0)},
                                                     {"opencv", duty(1, 0.0)},
                                                     {"iterator_workers", duty(2, 0.02)}};
  EXPECT_TRUE(learned.add(duty_record(&prior, measured)));
  EXPECT_TRUE(learned.add(duty_record(&prior, measured)));
  Prediction p = prior;
  apply_learned_duty(two_pus(), p, learned, 1.2);
  EXPECT_FALSE(p.oversubscribed) << p.summary;
  EXPECT_NEAR(p.load, 2 * (0.95 + 0.05 + 0.04), 1e-9);
  EXPECT_LT(prediction_constraint(p), 0);
  EXPECT_NE(p.summary.find("duty cycles of 2 earlier trials"), std::string::npos) << p.summary;
  EXPECT_EQ(p.to_json()["basis"], "duty cycles of 2 earlier trials");
}

TEST(LearnedDuty, SpinningPoolsKeepCountingAsBusy) {
  const Prediction prior = unbound_defaults();
  LearnedDuty learned;
  learned.add(duty_record(&prior, {{"main", duty(1, 1.0)},
                                   {"blas", duty(1, 0.9)},
                                   {"openmp", duty(1, 0.6)},
                                   {"iterator_workers", duty(2, 0.02)}}));
  Prediction p = prior;
  apply_learned_duty(two_pus(), p, learned, 1.2);
  EXPECT_TRUE(p.oversubscribed) << p.summary;
  ASSERT_EQ(p.cpusets.size(), 1u);
  EXPECT_GT(p.cpusets[0].over_probability, 0.5);
  EXPECT_GT(prediction_constraint(p), 0);
}

TEST(LearnedDuty, NothingLearnedKeepsThePrior) {
  const Prediction prior = unbound_defaults();
  Prediction p = prior;
  apply_learned_duty(two_pus(), p, LearnedDuty{}, 1.2);
  EXPECT_EQ(p.summary, prior.summary);
  EXPECT_EQ(p.oversubscribed, prior.oversubscribed);
  EXPECT_DOUBLE_EQ(p.load, prior.busy_threads);
}

TEST(LearnedDuty, LoadsAreKeyedByThreadsAndCpuset) {
  LearnedDuty l;
  auto record = [](int pus, int threads, double load) {
    return nlohmann::json{
        {"schema_version", 1},
        {"pus", pus},
        {"groups", {{"openmp", {{"predicted_threads", threads}, {"load", load}}}}}};
  };
  EXPECT_TRUE(l.add(record(2, 1, 0.6)));
  EXPECT_TRUE(l.add(record(2, 1, 0.8)));
  EXPECT_TRUE(l.add(record(1, 1, 0.0)));
  EXPECT_TRUE(l.add(record(2, 3, 1.5)));
  EXPECT_EQ(l.trials(), 4);
  EXPECT_DOUBLE_EQ(*l.load("openmp", 1, 2), 0.7);  // median at (2 PUs, 1 thread)
  EXPECT_DOUBLE_EQ(*l.load("openmp", 1, 1), 0.0);  // libgomp throttled on 1 PU
  EXPECT_DOUBLE_EQ(*l.load("openmp", 2, 1), 0.0);  // per-thread duty on 1 PU
  EXPECT_DOUBLE_EQ(*l.load("openmp", 2, 2), 1.2);  // 2 x median(0.6, 0.8, 0.5)
  // A team's duty is not carried to another cpuset size (libgomp spins only while the team fits
  // its PUs): nothing learned for 4 PUs, the prior stays.
  EXPECT_FALSE(l.load("openmp", 3, 4).has_value());
  // Workers that loop on their own work are: any cpuset at that count.
  EXPECT_TRUE(l.add(nlohmann::json{
      {"schema_version", 1},
      {"pus", 2},
      {"groups", {{"iterator_workers", {{"predicted_threads", 3}, {"load", 0.4}}}}}}));
  EXPECT_DOUBLE_EQ(*l.load("iterator_workers", 3, 4), 0.4);
  // "other" (what the monitor cannot name: a script's helper threads, its team) is not scaled by
  // the count the prediction gave it, nor carried to another cpuset size or to fewer threads.
  EXPECT_TRUE(
      l.add(nlohmann::json{{"schema_version", 1},
                           {"pus", 2},
                           {"groups", {{"other", {{"predicted_threads", 2}, {"load", 1.8}}}}}}));
  EXPECT_DOUBLE_EQ(*l.load("other", 2, 2), 1.8);
  EXPECT_DOUBLE_EQ(*l.load("other", 3, 2), 1.8);    // what 2 threads measured, unscaled
  EXPECT_EQ(l.other(3, 2)->threads, 2);             // the third keeps its prior count
  EXPECT_NEAR(*l.load("other", 1, 2), 0.8, 1e-12);  // less the thread too many
  EXPECT_DOUBLE_EQ(*l.load("other", 0, 2), 0.0);
  EXPECT_EQ(l.other(1, 2)->threads, 1);
  EXPECT_FALSE(l.load("other", 2, 1).has_value());
  EXPECT_DOUBLE_EQ(*l.load("openmp", 0, 4), 0.0);
  EXPECT_FALSE(l.load("blas", 1, 2).has_value());  // never measured: the prior stays
  EXPECT_FALSE(l.add(nlohmann::json{{"schema_version", 99}, {"groups", {{"x", 1}}}}));
  EXPECT_FALSE(l.add(nlohmann::json::array()));
  EXPECT_FALSE(l.add(nlohmann::json{{"schema_version", "1"}, {"groups", {{"x", 1}}}}));
  EXPECT_EQ(l.trials(), 6);
}

TEST(LearnedDuty, ThreadsTheModelDoesNotNameAreAddedAsMeasured) {
  const Prediction prior = unbound_defaults();
  LearnedDuty learned;
  learned.add(duty_record(&prior, {{"main", duty(1, 1.0)}, {"other", duty(2, 0.5)}}));
  Prediction p = prior;
  apply_learned_duty(two_pus(), p, learned, 1.2);
  bool found = false;
  for (const ThreadGroup& g : p.ranks[0].groups)
    if (g.name == "other") {
      found = true;
      EXPECT_DOUBLE_EQ(g.load, 1.0);
      EXPECT_EQ(g.source, "measured");
    }
  EXPECT_TRUE(found);
}

// An opaque torch script, unbound on 2 PUs: `threads` intra-op threads per rank as the study's
// knob says (the monitor sees the extra ones as "other": torch does not name them).
Prediction torch_script(int threads) {
  LaunchPlan plan;
  plan.uses_mpirun = true;
  plan.ranks_per_node = 2;
  plan.bind_to = "none";
  plan.program_argv = {"python3", "train.py"};
  ProgramModel model;
  model.program = "torch";
  model.pools.push_back(PoolModel{"torch_intra_op", "", false, threads, "", std::nullopt});
  return predict(two_pus(), plan, model);
}

// What a 2-thread trial measured in "other" (its spinning intra-op thread) says nothing about a
// 1-thread trial, whose "other" holds only MPI's helpers: "other" is keyed by the threads the
// prediction gave the pools the monitor cannot name.
TEST(LearnedDuty, OtherIsKeyedByThePoolsTheMonitorCannotName) {
  const Prediction two = torch_script(2);
  const Prediction one = torch_script(1);
  ASSERT_TRUE(two.oversubscribed);
  ASSERT_FALSE(one.oversubscribed);
  LearnedDuty learned;
  learned.add(duty_record(&two, {{"main", duty(1, 0.9)}, {"other", duty(3, 0.6)}}));
  learned.add(duty_record(&one, {{"main", duty(1, 0.9)}, {"other", duty(2, 0.02)}}));
  learned.add(duty_record(&two, {{"main", duty(1, 0.9)}, {"other", duty(3, 0.7)}}));
  Prediction p1 = one;
  apply_learned_duty(two_pus(), p1, learned, 1.2);
  EXPECT_FALSE(p1.oversubscribed) << p1.summary;
  Prediction p2 = two;
  apply_learned_duty(two_pus(), p2, learned, 1.2);
  EXPECT_TRUE(p2.oversubscribed) << p2.summary;
}

// Measured on `tune init`'s PyTorch example (2 ranks, unbound, 2 PUs): the baseline with 2
// intra-op threads per rank queues every thread, "other" at 1.77 runnable per rank beside 0.75 of
// the main thread; with 1 thread, "other" (torch's and gloo's helpers) still measured 1.29, and
// the cpuset oversubscribed (1.2 threads queued per PU). The first 1-thread trial is predicted
// from the baseline's "other" less the intra-op thread it no longer has.
TEST(LearnedDuty, OtherMeasuredBesideMoreThreadsLosesTheirShare) {
  const Prediction two = torch_script(2);
  LearnedDuty learned;
  learned.add(duty_record(&two, {{"main", duty(1, 0.75)}, {"other", duty(9.5, 1.77 / 9.5)}}));
  Prediction p1 = torch_script(1);
  apply_learned_duty(two_pus(), p1, learned, 1.2);
  EXPECT_TRUE(p1.oversubscribed) << p1.summary;
  double main = 0, helpers = 0;
  for (const ThreadGroup& g : p1.ranks[0].groups) {
    if (g.name == "other") helpers = g.load;
    if (g.name == "main") main = g.load;
  }
  EXPECT_NEAR(helpers, 0.77, 1e-9);
  EXPECT_DOUBLE_EQ(main, 0.75);
  // With 3 intra-op threads (2 unnamed) the one measured keeps its load, the second its prior.
  Prediction p3 = torch_script(3);
  const double prior_unnamed = p3.ranks[0].load - 1.0;  // all but the main thread
  apply_learned_duty(two_pus(), p3, learned, 1.2);
  double unnamed = 0, other = 0;
  for (const ThreadGroup& g : p3.ranks[0].groups) {
    if (g.name == "torch_intra_op") unnamed += g.load;
    if (g.name == "other") other = g.load;
  }
  EXPECT_NEAR(other, 1.77, 1e-9);
  EXPECT_DOUBLE_EQ(unnamed, prior_unnamed / 2);
  EXPECT_TRUE(p3.oversubscribed) << p3.summary;
}

}  // namespace
}  // namespace tune::probes
