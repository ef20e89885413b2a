// Whether a queue for the CPUs cost the job: spin-waiting runtimes in the ranks' CPU time, or
// more involuntary switches than time slicing makes. The figures are those of the recorded grids
// (bench/grids/*/grid-2026-12-07-cpu.json) on 2 PUs.
#include "probes/queue_cost.h"

#include <gtest/gtest.h>

namespace tune::probes {
namespace {

std::vector<LibraryShare> shares(std::initializer_list<std::pair<const char*, double>> list) {
  std::vector<LibraryShare> out;
  for (const auto& [library, share] : list) out.push_back({library, share, 100});
  return out;
}

TEST(QueueCost, OnlyTheRuntimesWhoseIdleThreadsSpinCountAsSpin) {
  EXPECT_TRUE(is_spin_runtime("libgomp"));
  EXPECT_TRUE(is_spin_runtime("libomp"));
  EXPECT_TRUE(is_spin_runtime("libiomp5"));
  EXPECT_TRUE(is_spin_runtime("libtbb"));
  EXPECT_FALSE(is_spin_runtime("libopenblas"));  // its yields show as switches instead
  EXPECT_FALSE(is_spin_runtime("libgomp-plugin"));
}

// The trainer unbound: each rank's OpenMP team spins in libgomp while the other rank's threads
// wait for the same two PUs (5.9x slower than bound).
TEST(QueueCost, AnOpenMpTeamSpinningBesideTheWorkIsCostly) {
  const auto c = queue_cost({shares({{"libgomp", 0.40}, {"libopenblas", 0.12}}),
                             shares({{"libgomp", 0.38}, {"libopenblas", 0.13}})},
                            39142, 2, true);
  EXPECT_TRUE(c.costly);
  EXPECT_TRUE(c.spin);
  EXPECT_TRUE(c.preemption);
  EXPECT_NEAR(c.spin_share, 0.39, 1e-9);
  EXPECT_EQ(c.spin_library, "libgomp");
  EXPECT_EQ(queue_cost_text(c),
            "it costs CPU time: the ranks spent 39% of their CPU time spin-waiting in libgomp, "
            "and 19571 involuntary switches per PU-second");
}

// NumPy's GEMM with two OpenBLAS threads per rank on two PUs: the idle threads yield in a loop
// inside libopenblas, which a library's share cannot tell from work; the switches can.
TEST(QueueCost, ThreadsPreemptedFarMoreThanTimeSlicingIsCostly) {
  const auto c =
      queue_cost({shares({{"libopenblas", 0.99}}), shares({{"libopenblas", 0.99}})}, 7649, 2, true);
  EXPECT_TRUE(c.costly);
  EXPECT_FALSE(c.spin);
  EXPECT_TRUE(c.preemption);
  EXPECT_EQ(queue_cost_text(c),
            "it costs CPU time: 3825 involuntary switches per PU-second, more than time slicing "
            "alone makes (1000)");
}

// The DDP job bound to a core per rank: DataLoader workers queue behind their rank's one torch
// thread (it waited 50%), and the job's figure did not move (1.02x): pipelining.
TEST(QueueCost, WorkersQueuedBehindTheirRankWithoutSpinOrPreemptionShowNoCost) {
  const auto c = queue_cost(
      {shares({{"libopencv_imgproc", 0.53}, {"python3.11", 0.18}}), shares({{"libc", 0.5}})}, 172,
      2, true);
  EXPECT_FALSE(c.costly);
  EXPECT_TRUE(c.spin_measured);
  EXPECT_EQ(queue_cost_text(c),
            "no sign it costs the job: no spin-waiting runtime held 5% of the ranks' CPU time "
            "and 86 involuntary switches per PU-second is what time slicing makes (helpers "
            "queued behind their rank, as pipelining does)");
}

TEST(QueueCost, WithoutACpuProfileOnlyTheSwitchesSpeak) {
  const auto quiet = queue_cost({{}, {}}, 230, 2, true);
  EXPECT_FALSE(quiet.spin_measured);
  EXPECT_FALSE(quiet.costly);
  EXPECT_NE(queue_cost_text(quiet).find("spin-waiting not measured (CPU time per library not "
                                        "sampled)"),
            std::string::npos);
  EXPECT_TRUE(queue_cost({{}, {}}, 5000, 2, true).costly);
}

// Spin below the share, an unqueued verdict, a bad figure: no claim, nothing said when unjudged.
TEST(QueueCost, SmallSpinAnUnqueuedVerdictOrABadFigureClaimNoCost) {
  EXPECT_FALSE(queue_cost({shares({{"libgomp", 0.03}})}, 100, 2, true).costly);
  const auto ok = queue_cost({shares({{"libgomp", 0.6}})}, 9000, 2, false);
  EXPECT_FALSE(ok.costly);
  EXPECT_TRUE(ok.spin);  // measured all the same
  EXPECT_EQ(queue_cost_text(ok), "");
  const auto nan = queue_cost({shares({{"libgomp", std::nan("")}})}, -5, 0, true);
  EXPECT_FALSE(nan.costly);
  EXPECT_EQ(nan.spin_share, 0);
  EXPECT_EQ(nan.switches_per_pu_s, 0);
}

// Two spin runtimes in one rank (libgomp beside TBB's pool) add up; the larger is named.
TEST(QueueCost, TwoSpinRuntimesAddUpAndTheLargerIsNamed) {
  const auto c = queue_cost({shares({{"libgomp", 0.03}, {"libtbb", 0.04}})}, 0, 2, true);
  EXPECT_TRUE(c.costly);
  EXPECT_NEAR(c.spin_share, 0.07, 1e-9);
  EXPECT_EQ(c.spin_library, "libtbb");
}

}  // namespace
}  // namespace tune::probes
