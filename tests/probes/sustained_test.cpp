// The sustained verdict and the duty cycles, on invented trials driven sample by sample: bursts at
// the start and the end of a run do not make a verdict, a load held through the run does, and
// each named thread group's busy share is measured as it was.
#include <gtest/gtest.h>

#include "probes/monitor.h"
#include "tests/common/fake_source.h"

namespace tune::probes {
namespace {

// mpirun (100) with two unbound ranks (101, 102) on 2 PUs; each rank has `extra` more threads
// (tids 1000*(r+1)+k, k = 1..extra), named `name`.
struct Trial {
  FakeSource src{*read_synthetic_topology("pack:1 core:2 pu:1")};
  int extra = 0;

  explicit Trial(int extra_threads, const std::string& name = "tune-trainer")
      : extra(extra_threads) {
    src.add_process(100, 1, "mpirun", {0, 1});
    for (int r = 0; r < 2; ++r) {
      src.add_process(101 + r, 100, "tune-trainer", {0, 1},
                      {{"OMPI_COMM_WORLD_RANK", std::to_string(r)}});
      for (int k = 1; k <= extra; ++k) {
        src.add_thread(101 + r, tid(r, k));
        src.set_thread_name(tid(r, k), name);
      }
    }
  }
  static pid_t tid(int r, int k) { return k == 0 ? 101 + r : 1000 * (r + 1) + k; }
  // One 0.2 s step: in each rank the main thread and the first `busy_extra` extra threads are
  // runnable, sharing the 2 PUs evenly; the rest sleep.
  void step(int busy_extra) {
    src.advance(0.2);
    const int runnable = 2 * (1 + busy_extra);
    const double share = 0.2 * std::min(1.0, 2.0 / runnable);
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k <= extra; ++k) {
        const bool busy = k <= busy_extra;
        src.run_thread(tid(r, k), busy ? share : 0.0, busy ? 'R' : 'S', r, busy ? 3 : 0);
      }
  }
};

Verdict run(Trial& t, const std::vector<int>& busy_per_step) {
  TrialMonitor m(t.src, 100);
  m.sample_once();
  for (int b : busy_per_step) {
    t.step(b);
    m.sample_once();
  }
  return m.verdict();
}

TEST(Sustained, AStartUpBurstDoesNotMakeOversubscribed) {
  // Every pool spins up at once for the first 0.6 s (8 runnable threads on 2 PUs), then one
  // thread per rank for 3.4 s. The mean over the run is 2.75 runnable threads (1.4x) -- what the
  // old verdict judged -- but the sustained load is 2 threads on 2 PUs.
  Trial t(3);
  std::vector<int> busy(20, 0);
  busy[0] = busy[1] = busy[2] = 3;
  const Verdict v = run(t, busy);
  EXPECT_GT(v.mean_runnable / v.pus, 1.2);
  EXPECT_FALSE(v.observed_oversubscribed) << v.diagnosis;
  ASSERT_FALSE(v.sustained.loads.empty());
  EXPECT_DOUBLE_EQ(v.sustained.loads.front().median_runnable, 2.0);
  EXPECT_EQ(v.diagnosis.substr(0, 4), "ok: ");
}

TEST(Sustained, AFinalBurstDoesNotMakeOversubscribedEither) {
  Trial t(3);
  std::vector<int> busy(20, 0);
  busy[18] = busy[19] = 3;  // the final evaluation starts every pool
  EXPECT_FALSE(run(t, busy).observed_oversubscribed);
}

TEST(Sustained, ASustainedTwofoldLoadIsOversubscribed) {
  Trial t(1);  // 2 threads per rank busy throughout: 4 on 2 PUs, each getting half a PU
  const Verdict v = run(t, std::vector<int>(20, 1));
  EXPECT_TRUE(v.observed_oversubscribed);
  const SustainedLoad* w = v.sustained.worst();
  ASSERT_NE(w, nullptr);
  EXPECT_DOUBLE_EQ(w->median_runnable, 4.0);
  EXPECT_NEAR(w->waiting_share, 0.5, 1e-9);
  EXPECT_NEAR(w->over_fraction, 1.0, 1e-9);
  EXPECT_NE(v.diagnosis.find("oversubscribed: 4.0 runnable threads on 2 PUs (2.0x, 50% waiting)"),
            std::string::npos)
      << v.diagnosis;
  // The window leaves out the first 20% and the last 10% of the 4 s sampled.
  EXPECT_NEAR(v.sustained.window_from_s, 0.8, 1e-9);
  EXPECT_NEAR(v.sustained.window_to_s, 3.6, 1e-9);
  const auto j = v.to_json();
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["sustained"]["loads"][0]["median_runnable"], 4.0);
}

TEST(Sustained, HalfTheWindowOverTheLimitIsATieNotAVerdict) {
  // Every other step one extra thread per rank: 2 and 4 runnable on 2 PUs in turn, so the median
  // of an even window lands between them, over the limit, with only half the samples over it.
  Trial t(1);
  std::vector<int> busy;
  for (int i = 0; i < 20; ++i) busy.push_back(i % 2);
  const Verdict v = run(t, busy);
  const SustainedLoad& whole = v.sustained.loads.front();
  EXPECT_GT(whole.median_runnable / 2, 1.2);
  EXPECT_DOUBLE_EQ(whole.over_fraction, 0.5);
  EXPECT_FALSE(v.observed_oversubscribed) << v.diagnosis;
}

TEST(Sustained, RunnableThreadsThatAllRanAreNoSlowdown) {
  // 4 threads per sample in state R but each got a full PU's time: the counts caught threads
  // waking, not waiting, so no slowdown backs the count.
  Trial t(1);
  TrialMonitor m(t.src, 100);
  m.sample_once();
  for (int i = 0; i < 20; ++i) {
    t.src.advance(0.2);
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k <= 1; ++k) t.src.run_thread(Trial::tid(r, k), 0.2, 'R', r);
    m.sample_once();
  }
  const Verdict v = m.verdict();
  EXPECT_FALSE(v.observed_oversubscribed) << v.diagnosis;
  EXPECT_NEAR(v.sustained.loads.front().waiting_share, 0.0, 1e-9);
}

// Steps of 0.2 s in which all 4 threads (2 per rank) share the 2 PUs, each `cpu` seconds, and
// wait `wait` seconds on a run queue (schedstat); `runnable_extra`: whether the samples catch the
// extra threads in state R.
Verdict run_measured(double cpu, double wait, bool runnable_extra) {
  Trial t(1);
  TrialMonitor m(t.src, 100);
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k <= 1; ++k) t.src.wait_thread(Trial::tid(r, k), 0.0);
  m.sample_once();
  for (int i = 0; i < 20; ++i) {
    t.src.advance(0.2);
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k <= 1; ++k) {
        t.src.run_thread(Trial::tid(r, k), cpu, k == 0 || runnable_extra ? 'R' : 'S', r);
        t.src.wait_thread(Trial::tid(r, k), wait);
      }
    m.sample_once();
  }
  return m.verdict();
}

TEST(Sustained, AMeasuredQueueIsOversubscribedWhenTheSamplesMissIt) {
  // A team per rank that meets at barriers: the samples catch only the main threads runnable (2
  // on 2 PUs), yet each of the 4 threads waited half of every step for a CPU: 2 threads queued on
  // 2 PUs all along (a PyTorch DDP script with 2 intra-op threads per rank, unbound).
  const Verdict v = run_measured(0.1, 0.1, false);
  const SustainedLoad& whole = v.sustained.loads.front();
  EXPECT_DOUBLE_EQ(whole.median_runnable, 2.0);
  ASSERT_TRUE(whole.wait_measured);
  EXPECT_NEAR(whole.waiting_threads, 2.0, 1e-9);
  EXPECT_NEAR(whole.measured_wait_share, 0.5, 1e-9);
  EXPECT_TRUE(v.observed_oversubscribed) << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("50% waiting, 2.0 queued for a CPU on average"), std::string::npos)
      << v.diagnosis;
  EXPECT_EQ(v.to_json()["sustained"]["loads"][0]["waiting_threads"], 2.0);
}

TEST(Sustained, AQueueAnotherJobMakesIsNotTheSettings) {
  // The 4 threads wait 0.7 per PU, but between them they asked for 0.8 CPUs plus that queue, 2.2
  // threads on 2 PUs: something else holds the CPUs (another job, another namespace "host").
  const Verdict v = run_measured(0.04, 0.07, false);
  const SustainedLoad& whole = v.sustained.loads.front();
  EXPECT_NEAR(whole.waiting_threads / 2, 0.7, 1e-9);
  EXPECT_NEAR(whole.cpu_rate + whole.waiting_threads, 2.2, 1e-9);
  EXPECT_FALSE(v.observed_oversubscribed) << v.diagnosis;
}

TEST(Sustained, CountsOverTheLimitWithoutTheQueueTheyClaimAreNoVerdict) {
  // 4 threads in state R in every sample, but the kernel says they hardly waited (0.1 threads
  // queued per PU): the samples caught threads waking, not a queue; the estimate from CPU time
  // alone would have called it.
  const Verdict v = run_measured(0.1, 0.01, true);
  const SustainedLoad& whole = v.sustained.loads.front();
  EXPECT_DOUBLE_EQ(whole.median_runnable, 4.0);
  EXPECT_NEAR(whole.waiting_share, 0.5, 1e-9);
  EXPECT_NEAR(whole.waiting_threads, 0.2, 1e-9);
  EXPECT_FALSE(v.observed_oversubscribed) << v.diagnosis;
  // Without schedstat the same counts decide as before.
  Trial t(1);
  EXPECT_TRUE(run(t, std::vector<int>(20, 1)).observed_oversubscribed);
}

TEST(Sustained, TheWindowStartsWhenTheRanksHaveStartedTheirThreads) {
  // A script that imports for 2.2 s on its main thread alone (one runnable thread per rank), then
  // starts 2 more threads per rank that keep all 6 runnable for 1.8 s. The fixed window (0.8 to
  // 3.6 s) would be half import, half samples at 2 runnable threads and half at 6: a tie, ok.
  // From the moment the threads exist it is 6 on 2 PUs.
  Trial t(0);
  TrialMonitor m(t.src, 100);
  m.sample_once();
  for (int i = 0; i < 20; ++i) {
    if (i == 11)
      for (int r = 0; r < 2; ++r)
        for (int k = 1; k <= 2; ++k) t.src.add_thread(101 + r, Trial::tid(r, k));
    t.src.advance(0.2);
    const int per_rank = i < 11 ? 1 : 3;
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < per_rank; ++k)
        t.src.run_thread(Trial::tid(r, k), 0.2 * 2.0 / (2 * per_rank), 'R', r);
    m.sample_once();
  }
  const Verdict v = m.verdict();
  EXPECT_NEAR(v.sustained.window_from_s, 2.4, 1e-9);  // the first sample with the threads
  EXPECT_NEAR(v.sustained.window_to_s, 3.6, 1e-9);
  EXPECT_DOUBLE_EQ(v.sustained.loads.front().median_runnable, 6.0);
  EXPECT_TRUE(v.observed_oversubscribed) << v.diagnosis;
}

TEST(Sustained, DutyCyclesOfNamedGroups) {
  // Two iterator workers per rank, one of them runnable in a quarter of the samples, the other
  // never: the group's runnable duty is 1/8; the main thread's is 1.
  Trial t(2, "tt-iter");
  TrialMonitor m(t.src, 100);
  m.sample_once();
  for (int i = 0; i < 40; ++i) {
    t.src.advance(0.2);
    for (int r = 0; r < 2; ++r) {
      t.src.run_thread(Trial::tid(r, 0), 0.2, 'R', r);
      const bool on = i % 4 == 0;
      t.src.run_thread(Trial::tid(r, 1), on ? 0.1 : 0.0, on ? 'R' : 'S', r);
    }
    m.sample_once();
  }
  const Verdict v = m.verdict();
  ASSERT_TRUE(v.sustained.duty.contains("iterator_workers"));
  const DutyCycle& it = v.sustained.duty.at("iterator_workers");
  EXPECT_DOUBLE_EQ(it.threads, 2.0);
  EXPECT_NEAR(it.runnable, 0.125, 0.03);  // the window holds whole periods of 4 only roughly
  EXPECT_NEAR(it.cpu, 0.0625, 0.02);      // 0.1 s of CPU in one 0.2 s step of 4, of 2 threads
  const DutyCycle& main = v.sustained.duty.at("main");
  EXPECT_DOUBLE_EQ(main.threads, 1.0);
  EXPECT_DOUBLE_EQ(main.runnable, 1.0);
  EXPECT_NEAR(main.cpu, 1.0, 1e-9);
  EXPECT_FALSE(v.sustained.duty.contains("openmp"));
  EXPECT_EQ(v.to_json()["duty_cycles"]["iterator_workers"]["threads"], 2.0);
}

TEST(Sustained, ThreadsAreGroupedByName) {
  EXPECT_EQ(thread_group_of("tune-trainer", true), GroupId::main);
  EXPECT_EQ(thread_group_of("tt-iter", true), GroupId::main);  // a rank's own thread
  EXPECT_EQ(thread_group_of("tt-iter", false), GroupId::iterator_workers);
  EXPECT_EQ(thread_group_of("tt-omp", false), GroupId::openmp);
  EXPECT_EQ(thread_group_of("tt-blas", false), GroupId::blas);
  EXPECT_EQ(thread_group_of("tt-cv", false), GroupId::opencv);
  EXPECT_EQ(thread_group_of("tt-comm", false), GroupId::comm);
  EXPECT_EQ(thread_group_of("python3", false, true), GroupId::dataloader_workers);  // a worker
  EXPECT_EQ(thread_group_of("tune-trainer", false), GroupId::other);
}

TEST(Sustained, LongRunsAreThinnedKeepingTimeAndCpu) {
  std::vector<SampleRecord> records(9);
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i].t = static_cast<double>(i);
    records[i].dt = i == 0 ? 0 : 1;
    records[i].cpu_s = 0.5;
    records[i].ranks[7].groups[0].cpu_s = 0.25;
  }
  thin_records(records, 8);
  ASSERT_EQ(records.size(), 5u);
  double dt = 0, cpu = 0, group = 0;
  for (const SampleRecord& r : records) {
    dt += r.dt;
    cpu += r.cpu_s;
    group += r.ranks.at(7).groups[0].cpu_s;
  }
  EXPECT_DOUBLE_EQ(dt, 8.0);
  EXPECT_DOUBLE_EQ(cpu, 4.5);
  EXPECT_DOUBLE_EQ(group, 2.25);
  EXPECT_DOUBLE_EQ(records.back().t, 8.0);
}

// Two unbound ranks on 2 PUs, each with 3 more threads named `name`, over 20 steps of 0.2 s
// (schedstat measured). Each rank's main thread runs 0.17 s and waits 0.03 s a step; thread 1
// (the program's pool when `pool_busy`) runs `pool_cpu` and waits as long; threads 2 and 3 (and
// thread 1 otherwise) wake briefly: 0.01 s of CPU and 0.04 s queued a step. With `busy_helpers`
// the 3 helpers take a third of 0.1 s each and the main thread runs 0.1 s and waits 0.1 s.
Verdict run_with_helpers(const std::string& name, std::optional<int> program_threads,
                         double pool_cpu = 0.0, bool busy_helpers = false) {
  Trial t(3, name);
  MonitorOptions o;
  o.program_threads = program_threads;
  TrialMonitor m(t.src, 100, o);
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k <= 3; ++k) t.src.wait_thread(Trial::tid(r, k), 0.0);
  m.sample_once();
  for (int i = 0; i < 20; ++i) {
    t.src.advance(0.2);
    for (int r = 0; r < 2; ++r) {
      t.src.run_thread(Trial::tid(r, 0), busy_helpers ? 0.1 : 0.17 - pool_cpu, 'R', r);
      t.src.wait_thread(Trial::tid(r, 0), busy_helpers ? 0.1 : 0.03 + pool_cpu);
      for (int k = 1; k <= 3; ++k) {
        const bool pool = k == 1 && pool_cpu > 0;
        const double helper_cpu = busy_helpers ? 0.1 / 3 : 0.01;
        t.src.run_thread(Trial::tid(r, k), pool ? pool_cpu : helper_cpu, pool ? 'R' : 'S', r);
        t.src.wait_thread(Trial::tid(r, k), pool ? pool_cpu : 0.04);
      }
    }
    m.sample_once();
  }
  return m.verdict();
}

TEST(Sustained, RuntimeThreadsAloneDoNotMakeASettingOversubscribed) {
  // 3 helper threads per rank (MPI's progress threads, gloo's) wake beside the ranks' main
  // threads and take half the PUs: each main thread loses half its runnable time to the queue,
  // all of it made by the helpers. Told that the program starts no unnamed pool thread, the
  // monitor counts them as the runtimes' own: oversubscribed with them, not by the settings.
  const Verdict v = run_with_helpers("python3", 0, 0.0, true);
  ASSERT_EQ(v.sustained.loads.size(), 2u);
  const SustainedLoad& l = v.sustained.loads[1];
  EXPECT_NEAR(l.main_wait_share, 0.5, 1e-9);
  EXPECT_NEAR(l.waiting_threads, 2.2, 1e-9);
  EXPECT_NEAR(l.runtime_threads, 6.0, 1e-9);
  EXPECT_NEAR(l.runtime_cpu_rate, 1.0, 1e-9);
  EXPECT_NEAR(l.knob_waiting_threads, 0.0, 1e-9);
  EXPECT_TRUE(l.with_runtime_oversubscribed);
  EXPECT_FALSE(l.oversubscribed);
  EXPECT_FALSE(v.observed_oversubscribed) << v.diagnosis;
  EXPECT_TRUE(v.sustained.runtime_only);
  EXPECT_NEAR(v.sustained.duty.at("runtime").threads, 3.0, 1e-9);
  EXPECT_FALSE(v.sustained.duty.contains("other"));
  EXPECT_NE(v.diagnosis.find("not oversubscribed by the settings: 3.0 runtime threads per rank "
                             "(no knob's: MPI progress, communication helpers) used 1.0 CPUs and "
                             "queued cpuset 0-1 to 1.1 per PU, 0.0 without them; to leave them a "
                             "PU, run fewer ranks or threads on cpuset 0-1 than its PUs"),
            std::string::npos)
      << v.diagnosis;
  EXPECT_EQ(v.to_json()["sustained"]["runtime_only"], true);
  // Not told what the program starts, the monitor cannot tell them from a pool: as before.
  const Verdict unknown = run_with_helpers("python3", std::nullopt, 0.0, true);
  EXPECT_TRUE(unknown.observed_oversubscribed) << unknown.diagnosis;
  EXPECT_NEAR(unknown.sustained.duty.at("other").threads, 3.0, 1e-9);
  // A runtime that names its threads is told by the name alone.
  const Verdict named = run_with_helpers("NCCL Progress", std::nullopt, 0.0, true);
  EXPECT_FALSE(named.observed_oversubscribed) << named.diagnosis;
  EXPECT_TRUE(named.sustained.runtime_only);
  // Helpers that wake briefly beside ranks that hardly wait (15% of their runnable time) make a
  // queue of 0.75 threads per PU and cost nothing: no verdict either way.
  const Verdict light = run_with_helpers("python3", 0);
  EXPECT_NEAR(light.sustained.loads[1].waiting_threads, 1.5, 1e-9);
  EXPECT_FALSE(light.observed_oversubscribed) << light.diagnosis;
  EXPECT_FALSE(light.sustained.runtime_only);
}

TEST(Sustained, ThePoolsThreadsAreTheBusiestUnnamedOnes) {
  // Thread 1 of each rank is the program's pool (an OpenBLAS worker spinning beside its rank):
  // told the program starts one unnamed pool thread per rank, the monitor keeps the busiest as
  // the program's ("other") and the other two as the runtimes'; the pool's queue is the
  // settings' and decides.
  const Verdict v = run_with_helpers("hpcc", 1, 0.08);
  EXPECT_NEAR(v.sustained.duty.at("other").threads, 1.0, 1e-9);
  EXPECT_NEAR(v.sustained.duty.at("runtime").threads, 2.0, 1e-9);
  const SustainedLoad& l = v.sustained.loads[1];
  EXPECT_GT(l.knob_waiting_threads / 2, 0.67);
  EXPECT_TRUE(l.oversubscribed);
  EXPECT_TRUE(v.observed_oversubscribed) << v.diagnosis;
  EXPECT_FALSE(v.sustained.runtime_only);
  EXPECT_NE(v.diagnosis.find("besides 2.0 runtime threads per rank (no knob's), not counted"),
            std::string::npos)
      << v.diagnosis;
}

// Two ranks, each bound to its own PU and each with a DataLoader worker process on that PU:
// per 0.2 s step the rank's own thread runs `main_cpu` and waits `main_wait`, its worker runs
// 0.2 - main_cpu and waits `worker_wait`.
Verdict run_with_workers(double main_cpu, double main_wait, double worker_wait) {
  FakeSource src{*read_synthetic_topology("pack:1 core:2 pu:1")};
  src.add_process(100, 1, "mpirun", {0, 1});
  for (int r = 0; r < 2; ++r) {
    src.add_process(101 + r, 100, "python3", {r}, {{"OMPI_COMM_WORLD_RANK", std::to_string(r)}});
    src.add_process(201 + r, 101 + r, "pt_data_worker", {r});
  }
  TrialMonitor m(src, 100);
  for (int r = 0; r < 2; ++r) {
    src.wait_thread(101 + r, 0.0);
    src.wait_thread(201 + r, 0.0);
  }
  m.sample_once();
  for (int i = 0; i < 20; ++i) {
    src.advance(0.2);
    for (int r = 0; r < 2; ++r) {
      src.run_thread(101 + r, main_cpu, 'R', r);
      src.wait_thread(101 + r, main_wait);
      src.run_thread(201 + r, 0.2 - main_cpu, 'R', r);
      src.wait_thread(201 + r, worker_wait);
    }
    m.sample_once();
  }
  return m.verdict();
}

TEST(Sustained, AWorkerQueuedBesideItsRankIsNotOversubscribedWhileTheRankHardlyWaits) {
  // Each worker waits 71% of its runnable time behind its rank (0.6 threads queued per PU, which
  // a count of the queue came close to calling oversubscribed), but the rank's own thread, which
  // every step waits for, lost only 11% of its time: the fastest setting of its placement.
  const Verdict v = run_with_workers(0.16, 0.02, 0.1);
  const SustainedLoad& pu0 = v.sustained.loads.at(1);
  ASSERT_TRUE(pu0.wait_measured);
  EXPECT_NEAR(pu0.waiting_threads, 0.6, 1e-9);
  EXPECT_TRUE(pu0.by_main);
  EXPECT_NEAR(pu0.main_wait_share, 0.02 / 0.18, 1e-9);
  EXPECT_FALSE(v.observed_oversubscribed) << v.diagnosis;
}

TEST(Sustained, TheRanksOwnThreadsWaitAgainstTheirHelpersOverEveryRank) {
  // The critical path against the threads that queue while it runs, over both ranks: the
  // workers waited 0.1 s per 0.04 s of CPU, the ranks' own threads 0.02 per 0.16.
  const Verdict v = run_with_workers(0.16, 0.02, 0.1);
  ASSERT_TRUE(v.sustained.main_measured);
  EXPECT_NEAR(v.sustained.main_wait_share, 0.02 / 0.18, 1e-9);
  EXPECT_NEAR(v.sustained.main_busy, 0.18 / 0.2, 1e-9);
  EXPECT_NEAR(v.sustained.helper_wait_share, 0.1 / 0.14, 1e-9);
  const auto j = v.to_json()["sustained"];
  EXPECT_EQ(j["main_wait_share"], 0.111);
  EXPECT_EQ(j["helper_wait_share"], 0.714);
}

TEST(Sustained, ARankThatLosesHalfItsTimeToTheQueueIsOversubscribed) {
  const Verdict v = run_with_workers(0.1, 0.1, 0.1);
  const SustainedLoad& pu0 = v.sustained.loads.at(1);
  EXPECT_NEAR(pu0.main_wait_share, 0.5, 1e-9);
  EXPECT_TRUE(v.observed_oversubscribed) << v.diagnosis;
  EXPECT_EQ(v.to_json()["sustained"]["loads"][1]["main_wait_share"], 0.5);
}

}  // namespace
}  // namespace tune::probes
