// Issue 24 point 5, end to end: predictions right on programs tune did not write. Two studies of
// tests/e2e/foreign_jobs run with the probes on, each over its first three enqueued settings,
// which cover both classes (oversubscribed and not):
// - hpcc (Debian's package: MPI, linked to OpenBLAS's pthread build), whose `program:` section
//   says it starts OpenBLAS's pool with nothing set: two ranks x two BLAS threads unbound
//   (OPENBLAS_NUM_THREADS unset) at risk of oversubscription, and observed so in the runs it
//   slowed; one BLAS thread per rank, or bound to a core (the variable unset or 1), neither;
// - ddp_env.py, a PyTorch DDP script written unlike examples/pytorch_ddp (imports on one line,
//   threads from OMP_NUM_THREADS, no flags): torch recognized (`kind: torch`), and the best trial
//   runs one thread per rank and is not called oversubscribed, though gloo's and Open MPI's own
//   threads queue beside it (counted apart as runtime threads).
// Precision and recall of the prediction against the observed verdict are asserted >= 90% on
// the script and printed for both. hpcc's are not asserted run by run: its prediction is checked
// by setting, and its observed verdict against the run's own HPL figure (see its test; the
// 12-trial figures are bench/probes/foreign_jobs.py's). hpcc and python3-torch are test
// dependencies (scripts/install-deps.sh test); without them the test fails saying so. The script
// trains 30 steps here. About a minute on the quiet 2-core machine; an oversubscribed hpcc trial
// can take 30 s more when other jobs load it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/prediction_quality.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::ParamValue;
using search::TrialState;

class ForeignJobsE2E : public test_support::TempDirTest {
 protected:
  ForeignJobsE2E() : TempDirTest("tune-foreign-e2e-") {}

  void SetUp() override {
    TempDirTest::SetUp();
    for (const auto& e :
         fs::directory_iterator(fs::path(TUNE_SOURCE_DIR) / "tests" / "e2e" / "foreign_jobs"))
      fs::copy(e.path(), m_dir / e.path().filename());
  }
  test_support::CommandOutput run(const std::vector<std::string>& argv) {
    return test_support::run_command(argv, m_dir, {}, "foreign-e2e");
  }
  // `tune --trials COUNT STUDY` (the study's first COUNT enqueued settings), the trials that ran
  // (the other enqueued ones wait).
  std::vector<search::FrozenTrial> tune_three(const std::string& study, const std::string& name,
                                              int count = 3) {
    const auto o = run({TUNE_BIN, "--trials", std::to_string(count), study});
    EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
    auto trials = test_support::stored_trials(m_dir / "tune-out" / name / "study.db", name);
    std::erase_if(trials, [](const auto& t) { return t.state == TrialState::waiting; });
    return trials;
  }
};

ParamValue value_of(const search::FrozenTrial& t, const std::string& name) {
  const auto p = t.params.find(name);
  if (p == t.params.end()) return ParamValue{};
  return search::to_external(t.distributions.at(name), p->second);
}

bool observed(const search::FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_probe_verdict);
  EXPECT_NE(it, t.system_attrs.end()) << "trial " << t.number << " has no verdict";
  return it != t.system_attrs.end() && it->value("observed_oversubscribed", false);
}

bool predicted(const search::FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_probe_prediction);
  EXPECT_NE(it, t.system_attrs.end()) << "trial " << t.number << " has no prediction";
  return it != t.system_attrs.end() && it->value("oversubscribed", false);
}

// Precision and recall both defined and >= 90%; printed for the closing note.
void expect_quality(const std::vector<search::FrozenTrial>& trials, const std::string& what) {
  const PredictionQuality q = prediction_quality(trials);
  std::cout << "[ measured ] " << what << ": " << prediction_quality_text(q) << "\n";
  ASSERT_TRUE(q.precision.has_value() && q.recall.has_value()) << prediction_quality_text(q);
  EXPECT_GE(*q.precision, 0.9) << prediction_quality_text(q);
  EXPECT_GE(*q.recall, 0.9) << prediction_quality_text(q);
}

std::string dump(const search::FrozenTrial& t) { return t.system_attrs.dump(); }

double wall_of(const search::FrozenTrial& t) {
  const auto it = t.user_attrs.find(k_attr_wall_time);
  return it != t.user_attrs.end() && it->is_number() ? it->get<double>() : 0.0;
}

bool at_risk(const search::FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_probe_prediction);
  return it != t.system_attrs.end() && it->value("at_risk", false);
}

// hpcc's ground truth is not one verdict per setting: two ranks x two BLAS threads unbound run
// at full speed when the kernel places each rank's two threads on one PU, and 5-10x slower in
// HPL when it places them on different PUs (measured: 4 of 8 runs at 3.7-4.0 GFLOP/s, the others
// 33-38, as fast as one thread per rank bound to a core); the placement is made at start and
// kept. So the prediction is checked per setting: the unbound two-thread setting is at risk in
// every trial (by the rules first, then by the runs observed), the others in none; and the
// observed verdict against the run's own HPL figure: oversubscribed when it is under half the
// bound runs' median. The figure, not the wall time, because other tests sharing the 2 cores
// slow every run's start-up alike. All six enqueued settings run. A run at full speed is never
// called oversubscribed; a slowed one may be missed: on the VM as it ran on 2026-11-28 the
// rank's own thread waited 17-21% of its runnable time in the slowed placement (OpenBLAS's
// team spinning at its barriers, HPL 3.8-6.4 GFLOP/s against 47-52), under the verdict's 25% limit,
// in 6 of 6 slowed runs of 20 (docs/probes.md, "hpcc"), where it had waited 25% or more in 39 of
// about 40 before. The misses are printed.
TEST_F(ForeignJobsE2E, HpccsBlasThreadsArePredictedAndObserved) {
  ASSERT_TRUE(fs::exists("/usr/bin/hpcc"))
      << "hpcc is missing (scripts/install-deps.sh test installs it)";
  const auto trials = tune_three("hpcc.yaml", "foreign-hpcc", 6);
  ASSERT_EQ(trials.size(), 6u);
  std::vector<double> bound;
  for (const auto& t : trials) {
    ASSERT_EQ(t.state, TrialState::complete) << t.number << " " << dump(t);
    ASSERT_TRUE(t.value.has_value()) << t.number;
    if (value_of(t, "bind_to") == ParamValue{std::string("core")}) bound.push_back(*t.value);
  }
  ASSERT_EQ(bound.size(), 3u);
  std::sort(bound.begin(), bound.end());
  const double bound_hpl = bound[1];
  ASSERT_GT(bound_hpl, 0);
  int risky = 0, agreed = 0;
  for (const auto& t : trials) {
    const bool unbound = value_of(t, "bind_to") == ParamValue{std::string("none")};
    const auto blas = value_of(t, "blas_threads");
    if (unbound && (blas == ParamValue{} || blas == ParamValue{std::int64_t{2}})) {
      ++risky;
      // The first such trial has nothing observed to go on: the catalog's model alone says 4
      // busy threads on 2 PUs. Later ones weigh that against the runs observed.
      if (t.number == 0) {
        EXPECT_TRUE(predicted(t)) << "2 ranks x 2 BLAS threads on 2 PUs, trial " << t.number;
      }
      EXPECT_TRUE(at_risk(t)) << "trial " << t.number << " " << dump(t);
      const bool slowed = *t.value < 0.5 * bound_hpl;
      if (observed(t) == slowed) ++agreed;
      if (!slowed) {
        EXPECT_FALSE(observed(t)) << "a run at full speed called oversubscribed, trial " << t.number
                                  << " " << dump(t);
      }
      std::cout << "[ measured ] hpcc trial " << t.number << ": HPL " << *t.value * 1000
                << " GFLOP/s (bound runs' median " << bound_hpl * 1000 << "), " << wall_of(t)
                << " s, observed " << (observed(t) ? "oversubscribed" : "ok") << ", predicted "
                << (predicted(t) ? "oversubscribed" : "ok") << ", at risk\n";
    } else {
      EXPECT_FALSE(predicted(t)) << "trial " << t.number << " " << dump(t);
      EXPECT_FALSE(at_risk(t)) << "trial " << t.number << " " << dump(t);
      EXPECT_FALSE(observed(t)) << "trial " << t.number << " " << dump(t);
    }
  }
  EXPECT_EQ(risky, 2);
  std::cout << "[ measured ] hpcc: " << agreed << " of " << risky
            << " unbound two-thread runs' verdicts agree with their HPL figure\n";
  const PredictionQuality q = prediction_quality(trials);
  std::cout << "[ measured ] hpcc: " << prediction_quality_text(q) << "\n";
}

TEST_F(ForeignJobsE2E, ATorchScriptsBestRunsOneThreadPerRankAndIsNotCalledOversubscribed) {
  const auto torch = run({"/usr/bin/python3", "-c", "import torch"});
  ASSERT_EQ(torch.exit_code, 0)
      << "python3-torch is missing (scripts/install-deps.sh test installs it): " << torch.err;
  std::string study = test_support::read_file(m_dir / "ddp_env.yaml");
  const std::string sixty = "DDP_ENV_STEPS: \"60\"";
  const auto steps = study.find(sixty);
  ASSERT_NE(steps, std::string::npos);
  test_support::write_file(m_dir / "ddp_env.yaml",
                           study.replace(steps, sixty.size(), "DDP_ENV_STEPS: \"30\""));
  const auto trials = tune_three("ddp_env.yaml", "foreign-ddp-env");
  ASSERT_EQ(trials.size(), 3u);
  const search::FrozenTrial* best = nullptr;
  for (const auto& t : trials) {
    ASSERT_EQ(t.state, TrialState::complete) << t.number << " " << dump(t);
    if (best == nullptr || *t.value > *best->value) best = &t;
    // Torch recognized: OMP_NUM_THREADS sizes its intra-op pool, unset it is torch's own 1.
    const auto& p = t.system_attrs.at(k_attr_probe_prediction);
    bool intra_op = false;
    for (const auto& g : p["ranks"][0]["groups"])
      intra_op = intra_op || g["name"] == "torch_intra_op";
    EXPECT_TRUE(intra_op) << "trial " << t.number << " " << p.dump();
  }
  ASSERT_NE(best, nullptr);
  const auto& p = best->system_attrs.at(k_attr_probe_prediction);
  EXPECT_EQ(p["ranks"][0]["busy_threads"], 1) << "the best runs 1 thread per rank: " << p.dump();
  EXPECT_FALSE(observed(*best)) << dump(*best);
  // The runtimes' own threads were counted apart, not as the program's.
  const auto& duty = best->system_attrs.at(k_attr_probe_duty);
  EXPECT_TRUE(duty["groups"].contains("runtime")) << duty.dump();
  std::cout << "[ measured ] torch best: trial " << best->number << " " << *best->value
            << " samples/s, omp_threads="
            << search::param_value_to_string(value_of(*best, "omp_threads")) << "\n";
  expect_quality(trials, "torch");
}

// Issue 36 points 1-3 on a real DataLoader: examples/pytorch_opencv/train.py (PyTorch DDP,
// DataLoader workers augmenting with OpenCV) in two settings: one torch thread and no workers
// at Open MPI's default binding (a core per rank; its ranks' threads waited 8-9% in issue 36's
// studies, never flagged, 0.92x the best), and 2 torch threads with 1 worker unbound, where
// torch's, OpenBLAS's and TBB's pools all take both PUs in every process (2-4x slower). The
// first setting unbound is no fixed point: its ranks' threads waited 12% in one study and 45% in
// the other (torch's OpenBLAS pool spinning beside the ranks; docs/probes.md), and this test
// failed 1 run in 11 on it, a run 40% slower than that setting's usual figure.
// The preloaded libtune_threads.so names the pools by the library that started them, the ranks'
// own run-queue delay (real schedstat) decides the verdicts, and the report judges them against
// the job's img/s. 1,024 images: about 15 s on the quiet 2-core machine.
TEST_F(ForeignJobsE2E, ADataLoaderJobsPoolsAreNamedByOriginAndItsVerdictsMatchItsFigure) {
  const auto cv = run({"/usr/bin/python3", "-c", "import torch, cv2"});
  ASSERT_EQ(cv.exit_code, 0)
      << "python3-torch or python3-opencv is missing (scripts/install-deps.sh test): " << cv.err;
  fs::copy(fs::path(TUNE_SOURCE_DIR) / "examples" / "pytorch_opencv" / "train.py",
           m_dir / "train.py");
  test_support::write_file(m_dir / "cv.yaml", R"(name: foreign-cv
direction: maximize
timeout: 120s
launch:
  mpirun: {n: 2, bind_to: "{bind_to}", oversubscribe: true}
command: [/usr/bin/python3, "{study_dir}/train.py", --images=1024, "--threads={threads}", "--workers={workers}"]
knobs:
  threads: {knob: torch_intra_op_threads}
  workers: {knob: torch_dataloader_workers}
objective: {regex: 'img/s: ([0-9.]+)'}
params:
  threads: [1, 2]
  workers: [0, 1]
  bind_to: [null, none]
enqueue:
  - {threads: 1, workers: 0, bind_to: null}
  - {threads: 2, workers: 1, bind_to: none}
)");
  const auto trials = tune_three("cv.yaml", "foreign-cv", 2);
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) ASSERT_EQ(t.state, TrialState::complete) << dump(t);
  const auto& fast = trials[0].number == 0 ? trials[0] : trials[1];
  const auto& slow = trials[0].number == 0 ? trials[1] : trials[0];
  std::cout << "[ measured ] img/s bound, 1 thread, no workers: " << *fast.value
            << "; unbound, 2 threads, 1 worker: " << *slow.value << "\n";
  // The pools, by origin: gloo's threads are the runtime's; TBB's (OpenCV) run in the worker.
  const auto pools = [](const search::FrozenTrial& t) {
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& p :
         t.system_attrs.at(k_attr_probe_verdict).value("pools", nlohmann::json::array()))
      by_name[p.at("name").get<std::string>()] = p;
    return by_name;
  };
  const auto slow_pools = pools(slow);
  ASSERT_TRUE(slow_pools.contains("gloo")) << dump(slow);
  EXPECT_EQ(slow_pools.at("gloo")["group"], "runtime");
  ASSERT_TRUE(slow_pools.contains("TBB (OpenCV)")) << dump(slow);
  EXPECT_TRUE(slow_pools.at("TBB (OpenCV)")["in_workers"]) << dump(slow);
  ASSERT_TRUE(slow_pools.contains("OpenMP")) << dump(slow);  // torch's 2 intra-op threads
  // The verdicts follow the ranks' own wait, measured.
  const auto& loads = slow.system_attrs.at(k_attr_probe_verdict)["sustained"]["loads"];
  ASSERT_TRUE(loads.back()["main_wait_share"].is_number()) << dump(slow);
  EXPECT_TRUE(observed(slow)) << dump(slow);
  EXPECT_FALSE(observed(fast)) << dump(fast);
  EXPECT_GT(*fast.value, *slow.value);
  // The stored environment is the study's: no preload, no origins folder.
  EXPECT_FALSE(slow.user_attrs.at(k_attr_env).contains("LD_PRELOAD")) << slow.user_attrs.dump();
  const auto report = run({TUNE_BIN, "report", "cv.yaml"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  // The two settings differ in their binding too: no comparable pair (judge/verdict_cost.h), so
  // the verdicts are not scored against the figure, and the report says so.
  EXPECT_NE(report.out.find("verdicts against the job's own figure: none of 2 trials scored"),
            std::string::npos)
      << report.out;
  // Where the CPU time went is beside each verdict.
  EXPECT_NE(report.out.find("CPU time per library: rank 0: "), std::string::npos) << report.out;
}

}  // namespace
}  // namespace tune::tuner
