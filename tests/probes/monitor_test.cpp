// The trial monitor on invented process trees: the FakeSource's clock and counters are moved by
// hand and sample_once() is called directly, so every figure is known exactly.
#include <gtest/gtest.h>

#include "probes/monitor.h"
#include "tests/common/fake_source.h"

namespace tune::probes {
namespace {

Topology two_cores() { return *read_synthetic_topology("pack:1 core:2 pu:1"); }

// mpirun (100) with two ranks (101, 102); rank r has `threads` threads (tids 1000*(r+1)+k).
struct Scene {
  FakeSource src{two_cores()};
  std::vector<pid_t> ranks = {101, 102};
  int threads = 1;

  Scene(int threads_per_rank, std::vector<int> cpus0, std::vector<int> cpus1)
      : threads(threads_per_rank) {
    src.add_process(100, 1, "mpirun", {0, 1});
    src.add_process(101, 100, "probes_spin", cpus0, {{"OMPI_COMM_WORLD_RANK", "0"}});
    src.add_process(102, 100, "probes_spin", cpus1, {{"OMPI_COMM_WORLD_RANK", "1"}});
    for (int r = 0; r < 2; ++r)
      for (int k = 1; k < threads; ++k)
        src.add_thread(ranks[static_cast<std::size_t>(r)], tid(r, k));
    // Already running when the monitor starts.
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < threads; ++k)
        src.run_thread(tid(r, k), 0, 'R', r == 0 ? cpus0[0] : cpus1[0]);
  }
  pid_t tid(int r, int k) const {
    return k == 0 ? ranks[static_cast<std::size_t>(r)] : 1000 * (r + 1) + k;
  }
  // Every thread runnable; `share` CPU seconds each per `dt`; nv involuntary and vol voluntary
  // switches each.
  void tick(double dt, double share, int nv, int cpu_of_rank0 = 0, int cpu_of_rank1 = 1,
            int vol = 0) {
    src.advance(dt);
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < threads; ++k)
        src.run_thread(tid(r, k), share, 'R', r == 0 ? cpu_of_rank0 : cpu_of_rank1,
                       static_cast<std::uint64_t>(nv), static_cast<std::uint64_t>(vol));
  }
};

TEST(Monitor, OversubscribedTreeIsFlaggedWithExactFigures) {
  Scene s(3, {0, 1}, {0, 1});  // unbound, 3 busy threads each: 6 on 2 PUs
  TrialMonitor m(s.src, 100);
  m.sample_once();
  for (int i = 0; i < 5; ++i) {
    s.tick(0.2, 0.2 * 2 / 6, 10);  // 2 PUs shared by 6 threads
    m.sample_once();
  }
  const Verdict v = m.verdict();
  EXPECT_EQ(v.samples, 6);
  EXPECT_NEAR(v.duration_s, 1.0, 1e-9);
  EXPECT_EQ(v.pus, 2);
  ASSERT_EQ(v.ranks.size(), 2u);
  EXPECT_EQ(v.ranks[0].rank, 0);
  EXPECT_EQ(v.ranks[0].pid, 101);
  EXPECT_EQ(v.ranks[0].max_threads, 3);
  EXPECT_NEAR(v.ranks[0].mean_cpu_pct, 100.0, 1e-9);
  EXPECT_NEAR(v.ranks[0].peak_cpu_pct, 100.0, 1e-9);
  EXPECT_NEAR(v.ranks[0].useful_cpu_pct, 100.0, 1e-9);  // 2 PUs shared by 2 ranks
  EXPECT_NEAR(v.ranks[0].nonvoluntary_per_s, 3 * 10 / 0.2, 1e-9);
  EXPECT_NEAR(v.nonvoluntary_per_s, 6 * 10 / 0.2, 1e-9);
  EXPECT_NEAR(v.mean_runnable, 6.0, 1e-9);
  EXPECT_EQ(v.peak_runnable, 6);
  EXPECT_NEAR(v.total_mean_cpu_pct, 200.0, 1e-9);
  EXPECT_TRUE(v.observed_oversubscribed);
  EXPECT_EQ(v.diagnosis.substr(0, 65),
            "oversubscribed: 6.0 runnable threads on 2 PUs (3.0x, 67% waiting)");
  EXPECT_NE(
      v.diagnosis.find("rank 0: 100% CPU (peak 100%, useful 100%) on a 2-PU cpuset, 3 threads"),
      std::string::npos)
      << v.diagnosis;
  EXPECT_TRUE(v.binding_issues.empty());
  // 150 involuntary switches per PU-second and no CPU profile (a fake source): the queue shows no
  // cost, and the diagnosis says which signs were read; the stored verdict reads back the same.
  EXPECT_TRUE(v.queue_cost.judged);
  EXPECT_FALSE(v.queue_cost.costly);
  EXPECT_NEAR(v.queue_cost.switches_per_pu_s, 150, 1e-9);
  EXPECT_NE(v.diagnosis.find("; no sign it costs the job: spin-waiting not measured"),
            std::string::npos)
      << v.diagnosis;
  const auto j = v.to_json();
  EXPECT_EQ(j["queue_cost"]["costly"], false);
  const auto back = verdict_from_json(j);
  ASSERT_TRUE(back) << back.error().key;
  EXPECT_FALSE(back->queue_cost.costly);
  EXPECT_NEAR(back->queue_cost.switches_per_pu_s, 150, 1e-9);
}

// The same tree preempted 100 times a tick per thread (1500 switches per PU-second): costly, and
// read back so from the stored verdict whatever its "queue_cost" object claims.
TEST(Monitor, ThreadsPreemptedBeyondTimeSlicingMakeTheQueueCostly) {
  Scene s(3, {0, 1}, {0, 1});
  TrialMonitor m(s.src, 100);
  m.sample_once();
  for (int i = 0; i < 5; ++i) {
    s.tick(0.2, 0.2 * 2 / 6, 100, 0, 1, 4);  // and 4 voluntary switches a tick
    m.sample_once();
  }
  const Verdict v = m.verdict();
  ASSERT_TRUE(v.observed_oversubscribed);
  EXPECT_NEAR(v.voluntary_per_s, 6 * 4 / 0.2, 1e-9);  // kept for the next sign, not judged
  EXPECT_NEAR(v.ranks[0].voluntary_per_s, 3 * 4 / 0.2, 1e-9);
  EXPECT_TRUE(v.queue_cost.costly);
  EXPECT_NE(v.diagnosis.find("; it costs CPU time: 1500 involuntary switches per PU-second"),
            std::string::npos)
      << v.diagnosis;
  auto j = v.to_json();
  j["queue_cost"]["costly"] = false;  // stored data is not trusted over its own figures
  const auto back = verdict_from_json(j);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->queue_cost.costly);
  EXPECT_NEAR(back->voluntary_per_s, 120, 1e-9);
}

TEST(Monitor, WellSetTreeIsNotFlaggedAndVerdictsDiffer) {
  Scene s(1, {0}, {1});  // bound to one core each, one busy thread each
  TrialMonitor m(s.src, 100);
  m.sample_once();
  for (int i = 0; i < 5; ++i) {
    s.tick(0.2, 0.2, 0);
    m.sample_once();
  }
  const Verdict v = m.verdict();
  EXPECT_FALSE(v.observed_oversubscribed);
  EXPECT_NEAR(v.ranks[1].mean_cpu_pct, 100.0, 1e-9);
  EXPECT_EQ(v.ranks[1].allowed_pus, std::vector<int>{1});
  EXPECT_EQ(v.ranks[1].ran_on_pus, std::vector<int>{1});
  EXPECT_EQ(v.diagnosis,
            "ok: 2 ranks at 100%/100% CPU (useful 100% each); 2.0 runnable threads on 2 PUs; 0 "
            "involuntary switches/s");
}

// A command whose processes ended before a sample caught them (/bin/cat) has no rank: the
// verdict says so instead of "0 ranks at  CPU".
TEST(Monitor, ACommandWhoseRanksWereNeverSampledSaysSo) {
  Scene s(1, {0}, {1});
  s.src.remove_process(101);
  s.src.remove_process(102);
  TrialMonitor m(s.src, 100);
  m.sample_once();
  s.src.advance(0.2);
  m.sample_once();
  const Verdict v = m.verdict();
  EXPECT_TRUE(v.ranks.empty());
  EXPECT_EQ(v.diagnosis.rfind("ok: no rank was sampled; ", 0), 0u) << v.diagnosis;
}

// A rank first sampled between mpirun's fork and its binding last ran on mpirun's PU 0, and ran
// there a few milliseconds more: no sign that the bound rank runs outside its cpuset (hpcc's
// bound trials said so nearly every time). Where a rank runs for real is weighed by CPU time.
TEST(Monitor, WhereARankRanBeforeItsFirstSampleIsNotABindingIssue) {
  Scene s(1, {0}, {1});
  s.src.run_thread(s.tid(1, 0), 0, 'R', 0);  // not yet moved to its core
  TrialMonitor m(s.src, 100);
  m.sample_once();
  s.src.advance(0.05);  // 2 ms more there, then bound
  s.src.run_thread(s.tid(0, 0), 0.05, 'R', 0);
  s.src.run_thread(s.tid(1, 0), 0.002, 'R', 0);
  m.sample_once();
  for (int i = 0; i < 5; ++i) {
    s.tick(0.2, 0.2, 0);
    m.sample_once();
  }
  const Verdict v = m.verdict();
  EXPECT_EQ(v.ranks[1].ran_on_pus, std::vector<int>{1});
  EXPECT_TRUE(v.binding_issues.empty()) << v.diagnosis;
}

TEST(Monitor, PeakAndMeanDifferAndUsefulMaximumComesFromOptions) {
  FakeSource src(two_cores());
  src.add_process(500, 1, "train", {0, 1});  // a plain command: the root is the only rank
  src.add_thread(500, 501);
  MonitorOptions opt;
  opt.useful_cpu_per_rank = 1.0;
  TrialMonitor m(src, 500, opt);
  m.sample_once();
  src.advance(1.0);
  src.run_thread(500, 0.5, 'R', 0);
  m.sample_once();
  src.advance(1.0);
  src.run_thread(500, 1.0, 'R', 0);
  src.run_thread(501, 1.0, 'R', 1);
  m.sample_once();
  const Verdict v = m.verdict();
  ASSERT_EQ(v.ranks.size(), 1u);
  EXPECT_EQ(v.ranks[0].rank, 0);
  EXPECT_NEAR(v.ranks[0].peak_cpu_pct, 200.0, 1e-9);
  EXPECT_NEAR(v.ranks[0].mean_cpu_pct, 125.0, 1e-9);
  EXPECT_NEAR(v.ranks[0].useful_cpu_pct, 100.0, 1e-9);
  EXPECT_EQ(v.ranks[0].ran_on_pus, (std::vector<int>{0, 1}));
  EXPECT_FALSE(v.observed_oversubscribed);  // 2 threads on 2 PUs
  EXPECT_NE(v.diagnosis.find("rank 0 above its useful 100%"), std::string::npos) << v.diagnosis;
  // Predicted ok and seen ok; a setting at risk says its odds beside.
  Prediction p;
  p.ranks.resize(1);
  p.ranks[0].cpuset = {0, 1};
  EXPECT_NE(m.verdict(&p).diagnosis.find("; as predicted"), std::string::npos);
  EXPECT_EQ(m.verdict(&p).diagnosis.find("at risk"), std::string::npos);
  p.at_risk = true;
  p.risk = 0.25;
  const std::string risky = m.verdict(&p).diagnosis;
  EXPECT_NE(risky.find("; as predicted (at risk: 25% of runs)"), std::string::npos) << risky;
}

TEST(Monitor, RanksSharingACoreAndBindingOutsideThePrediction) {
  Scene s(1, {0}, {0});  // both ranks bound to PU 0
  TrialMonitor m(s.src, 100);
  m.sample_once();
  s.tick(0.2, 0.1, 5, 0, 0);
  m.sample_once();
  Prediction p;
  p.oversubscribed = false;
  p.summary = "ok: predicted";
  p.ranks.resize(2);
  p.ranks[0].rank = 0;
  p.ranks[0].cpuset = {0};
  p.ranks[1].rank = 1;
  p.ranks[1].cpuset = {1};
  const Verdict v = m.verdict(&p);
  ASSERT_EQ(v.binding_issues.size(), 2u);
  EXPECT_EQ(v.binding_issues[0], "ranks 0 and 1 are both bound to PUs 0");
  EXPECT_EQ(v.binding_issues[1], "rank 1 is allowed on PUs 0, predicted 1");
  EXPECT_TRUE(v.observed_oversubscribed);  // 2 runnable threads on a 1-PU cpuset
  EXPECT_EQ(v.predicted_oversubscribed, false);
  EXPECT_NE(v.diagnosis.find("oversubscribed: 2.0 runnable threads on 1 PU (2.0x, 50% waiting)"),
            std::string::npos)
      << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("; not predicted"), std::string::npos) << v.diagnosis;
  // A setting oversubscribed in some of its earlier runs: likelier ok, but at risk.
  p.at_risk = true;
  p.risk = 0.45;
  const Verdict risky = m.verdict(&p);
  EXPECT_NE(risky.diagnosis.find("; predicted at risk (45% of runs), not likely"),
            std::string::npos)
      << risky.diagnosis;
}

TEST(Monitor, RanksConfinedByAContainerAreNotCalledBound) {
  FakeSource src(*read_synthetic_topology("pack:1 core:8 pu:1"));
  src.add_process(100, 1, "mpirun", {2, 3});  // the container allows PUs 2-3 only
  src.add_process(101, 100, "a", {2, 3}, {{"OMPI_COMM_WORLD_RANK", "0"}});
  src.add_process(102, 100, "a", {2, 3}, {{"OMPI_COMM_WORLD_RANK", "1"}});
  TrialMonitor m(src, 100);
  m.sample_once();
  EXPECT_TRUE(m.verdict().binding_issues.empty());
}

TEST(Monitor, ARankSeenBeforeItsBindingReportsItsLaterCpuset) {
  FakeSource src(*read_synthetic_topology("pack:1 core:2 pu:1"));
  src.add_process(100, 1, "mpirun", {0, 1});
  // Sampled between mpirun's fork and the binding: still on mpirun's cpuset.
  src.add_process(101, 100, "a", {0, 1}, {{"OMPI_COMM_WORLD_RANK", "0"}});
  TrialMonitor m(src, 100);
  m.sample_once(true);
  src.remove_process(101);
  src.add_process(101, 100, "a", {1}, {{"OMPI_COMM_WORLD_RANK", "0"}});
  src.advance(1.0);
  m.sample_once(true);
  const auto v = m.verdict();
  ASSERT_EQ(v.ranks.size(), 1u);
  EXPECT_EQ(v.ranks[0].allowed_pus, std::vector<int>{1});
}

TEST(Monitor, RankRunningOutsideItsPredictedCpusetIsReported) {
  Scene s(1, {0, 1}, {0, 1});
  TrialMonitor m(s.src, 100);
  m.sample_once();
  s.tick(0.2, 0.2, 0, 1, 0);  // rank 0 ran on PU 1
  m.sample_once();
  Prediction p;
  p.ranks.resize(2);
  p.ranks[0].cpuset = {0, 1};
  p.ranks[1].rank = 1;
  p.ranks[1].cpuset = {0, 1};
  p.ranks[0].rank = 0;
  EXPECT_TRUE(m.verdict(&p).binding_issues.empty());
  p.ranks[0].cpuset = {0};
  const Verdict v = m.verdict(&p);
  ASSERT_EQ(v.binding_issues.size(), 1u);
  EXPECT_EQ(v.binding_issues[0], "rank 0 is allowed on PUs 0-1, predicted 0");
}

TEST(Monitor, WrappersAndChildProcessesCountTowardTheirRank) {
  FakeSource src(two_cores());
  src.add_process(10, 1, "bash", {0, 1});  // a wrapper around mpirun: not a rank
  src.add_process(11, 10, "mpirun", {0, 1});
  src.add_process(12, 11, "task_wrapper.sh", {0, 1}, {{"PMIX_RANK", "1"}});
  src.add_process(13, 12, "python3", {0, 1});
  src.add_process(14, 13, "python3", {0, 1});  // an iterator worker process
  src.add_process(15, 11, "python3", {0, 1}, {{"PMIX_RANK", "0"}});
  TrialMonitor m(src, 10);
  m.sample_once();
  src.advance(0.5);
  src.run_thread(13, 0.25, 'R', 0);
  src.run_thread(14, 0.25, 'R', 1);
  src.run_thread(15, 0.1, 'S', 1);
  src.run_thread(11, 0.05, 'S', 1);  // mpirun's own time counts in the total only
  m.sample_once();
  const Verdict v = m.verdict();
  ASSERT_EQ(v.ranks.size(), 2u);
  EXPECT_EQ(v.ranks[0].pid, 15);
  EXPECT_EQ(v.ranks[1].pid, 12);
  EXPECT_EQ(v.ranks[1].comm, "task_wrapper.sh");
  EXPECT_NEAR(v.ranks[1].mean_cpu_pct, 100.0, 1e-9);
  EXPECT_EQ(v.ranks[1].max_threads, 3);
  EXPECT_NEAR(v.ranks[0].mean_cpu_pct, 20.0, 1e-9);
  EXPECT_NEAR(v.total_mean_cpu_pct, 130.0, 1e-9);
}

TEST(Monitor, ExitedAndReusedProcessesDoNotInventCpuTime) {
  FakeSource src(two_cores());
  src.add_process(20, 1, "mpirun", {0, 1});
  src.add_process(21, 20, "rank", {0, 1});
  src.add_thread(21, 2101);
  TrialMonitor m(src, 20);
  m.sample_once();
  src.advance(1.0);
  src.run_thread(21, 0.5, 'R', 0);
  src.run_thread(2101, 0.5, 'R', 1);
  m.sample_once();
  src.remove_thread(21, 2101);  // its time stays in the process's total, as in the kernel
  src.advance(1.0);
  src.run_thread(21, 0.5, 'R', 0);
  m.sample_once();
  // pid 21 exits and a new process gets the same pid with a large CPU total: no delta for it.
  src.remove_process(21);
  src.advance(1.0);
  src.add_process(21, 20, "rank", {0, 1});
  src.run_thread(21, 50.0, 'R', 0);
  m.sample_once();
  src.remove_process(21);
  src.remove_process(20);
  src.advance(1.0);
  m.sample_once();  // the tree is gone: nothing happens
  const Verdict v = m.verdict();
  EXPECT_EQ(v.samples, 4);
  ASSERT_EQ(v.ranks.size(), 1u);
  EXPECT_NEAR(v.ranks[0].peak_cpu_pct, 100.0, 1e-9);
  EXPECT_NEAR(v.ranks[0].mean_cpu_pct, 75.0, 1e-9);
}

TEST(Monitor, PredictedAndObservedAgreeWithTheCauseNamed) {
  Scene s(3, {0, 1}, {0, 1});
  TrialMonitor m(s.src, 100);
  m.sample_once();
  s.tick(0.2, 0.2 / 3, 20);
  m.sample_once();
  const Topology t = two_cores();
  LaunchPlan plan;
  plan.uses_mpirun = true;
  plan.ranks_per_node = 2;
  plan.bind_to = "none";
  plan.program_argv = {"tune-trainer", "--iterator-workers", "0"};
  const Prediction p = predict(t, plan);
  ASSERT_TRUE(p.oversubscribed);
  const Verdict v = m.verdict(&p);
  EXPECT_EQ(v.predicted_oversubscribed, true);
  EXPECT_NE(v.diagnosis.find("; predicted: openmp threads unset -> defaulted to 2, blas threads "
                             "unset -> defaulted to 2"),
            std::string::npos)
      << v.diagnosis;
  const auto j = v.to_json();
  EXPECT_EQ(j["schema_version"], k_verdict_schema_version);
  EXPECT_EQ(j["observed_oversubscribed"], true);
  EXPECT_EQ(j["predicted_oversubscribed"], true);
  EXPECT_EQ(j["ranks"][1]["allowed_pus"], "0-1");
  EXPECT_EQ(j["diagnosis"], v.diagnosis);
}

TEST(Monitor, StatusFilesAreReadAboutOnceASecondAndForNewProcesses) {
  Scene s(2, {0}, {1});
  TrialMonitor m(s.src, 100);  // default status interval: 1 s
  m.sample_once();             // first sample: 3 processes with status
  EXPECT_EQ(s.src.status_reads(), 3);
  for (int i = 0; i < 4; ++i) {
    s.tick(0.2, 0.2, 7);
    m.sample_once();
  }
  EXPECT_EQ(s.src.status_reads(), 3);  // 0.8 s: not yet
  s.src.add_process(103, 100, "late_rank", {0, 1}, {{"OMPI_COMM_WORLD_RANK", "2"}});
  s.tick(0.2, 0.2, 7);
  m.sample_once();  // 1.0 s: every process, the new one included
  EXPECT_EQ(s.src.status_reads(), 7);
  s.src.add_process(104, 100, "later_rank", {1}, {{"OMPI_COMM_WORLD_RANK", "3"}});
  s.tick(0.2, 0.2, 7);
  m.sample_once();  // only the new process
  EXPECT_EQ(s.src.status_reads(), 8);
  const Verdict v = m.verdict();
  ASSERT_EQ(v.ranks.size(), 4u);
  EXPECT_EQ(v.ranks[3].allowed_pus, std::vector<int>{1});
  // 2 threads x 7 switches per 0.2 s, counted between the reads at 0 s and 1.0 s.
  EXPECT_NEAR(v.ranks[0].nonvoluntary_per_s, 2 * 7 / 0.2, 1e-6);
}

TEST(Monitor, TooFewSamplesAreSaid) {
  FakeSource src(two_cores());
  src.add_process(7, 1, "x", {0, 1});
  TrialMonitor m(src, 7);
  m.sample_once();
  EXPECT_NE(m.verdict().diagnosis.find("(too few samples: 1)"), std::string::npos);
  TrialMonitor gone(src, 99);
  gone.sample_once();
  EXPECT_EQ(gone.verdict().samples, 0);
}

}  // namespace
}  // namespace tune::probes

namespace tune::probes {
namespace {

// The reader beside Verdict::to_json: a stored verdict comes back as the monitor made it (its
// sustained verdict and duty cycles included), and one not as written names the key.
TEST(VerdictJson, ReadsBackWhatToJsonWrote) {
  Scene s(3, {0, 1}, {0, 1});
  TrialMonitor m(s.src, 100);
  m.sample_once();
  for (int i = 0; i < 5; ++i) {
    s.tick(0.2, 0.2 * 2 / 6, 10);
    m.sample_once();
  }
  const Verdict v = m.verdict();
  const auto back = verdict_from_json(v.to_json());
  ASSERT_TRUE(back) << back.error().key << " " << back.error().why;
  EXPECT_EQ(back->to_json(), v.to_json());
  EXPECT_TRUE(back->observed_oversubscribed);
  EXPECT_TRUE(back->sustained.oversubscribed);
  ASSERT_EQ(back->ranks.size(), 2u);
  EXPECT_EQ(back->ranks[1].allowed_pus, v.ranks[1].allowed_pus);
  EXPECT_EQ(back->sustained.loads.size(), v.sustained.loads.size());
  EXPECT_EQ(back->sustained.duty.size(), v.sustained.duty.size());
}

TEST(VerdictJson, AMalformedVerdictNamesTheKey) {
  const auto key_of = [](const nlohmann::json& j) {
    const auto r = verdict_from_json(j);
    return r ? std::string("read") : r.error().key + " " + r.error().why;
  };
  EXPECT_EQ(key_of(nlohmann::json::array()), " is not a JSON object");
  EXPECT_EQ(key_of({{"schema_version", 9}}),
            ".schema_version is not a version this tune reads (1 to 3)");
  EXPECT_EQ(key_of({{"ranks", {{{"allowed_pus", 3}}}}}),
            ".ranks[0].allowed_pus is not of the type tune's probes write");
  EXPECT_EQ(key_of({{"sustained", {{"loads", {{{"main_wait_share", "x"}}}}}}}),
            ".sustained.loads[0].main_wait_share is not a number");
  EXPECT_EQ(key_of({{"duty_cycles", {{"openmp", 1}}}}), ".duty_cycles.openmp is not a JSON object");
  // A verdict of schema 1 and what other writers add to the stored object read as they are.
  EXPECT_EQ(key_of({{"schema_version", 1}, {"shares_machine_with", "x"}}), "read");
}

}  // namespace
}  // namespace tune::probes
