// Live: a deliberately oversubscribed MPI job (2 ranks x 3 spinning threads, unbound, on this
// machine's PUs) and a well-set one (2 ranks x 1 thread, bound to a core each) are watched from
// /proc; their verdicts must differ, and the sampler must stay under 1% of one core.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "probes/monitor.h"

extern char** environ;

namespace tune::probes {
namespace {

struct Watched {
  Verdict verdict;
  Prediction prediction;
  int exit_code = -1;
};

Watched run_and_watch(const std::string& bind, int threads, double seconds) {
  std::vector<std::string> argv = {MPIRUN};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  for (const char* a : {"-n", "2", "--oversubscribe", "--bind-to"}) argv.push_back(a);
  argv.push_back(bind);
  argv.insert(argv.end(), {PROBES_SPIN, "--omp-threads", std::to_string(threads), "--seconds",
                           std::to_string(seconds)});
  Watched w;
  auto source = make_live_source();
  auto topo = source->topology();
  EXPECT_TRUE(topo) << topo.error();
  ProgramModel spin;  // probes_spin: one OpenMP team, sized by its flag
  spin.pools.emplace_back();
  spin.pools.back().pool = "openmp";
  spin.pools.back().flag = "--omp-threads";
  w.prediction = predict(*topo, launch_plan_from_argv(argv, {}), spin);

  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, cargv[0], nullptr, nullptr, cargv.data(), environ), 0);
  TrialMonitor monitor(*source, pid);  // default interval, 200 ms
  monitor.start();
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  monitor.stop();
  w.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  w.verdict = monitor.verdict(&w.prediction);
  std::printf(
      "bind %s, %d threads: %s\n  predicted: %s\n  sampler: %.3f%% of one core (%d samples)\n",
      bind.c_str(), threads, w.verdict.diagnosis.c_str(), w.prediction.summary.c_str(),
      w.verdict.sampler_cpu_pct, w.verdict.samples);
  return w;
}

TEST(LiveProbes, OversubscribedAndWellSetJobsGetDifferentVerdicts) {
  const long pus = sysconf(_SC_NPROCESSORS_ONLN);
  ASSERT_GE(pus, 1);
  // 3 spinning threads per PU-share: 2 ranks x (pus + 1) threads on `pus` PUs, unbound.
  const int bad_threads = static_cast<int>(pus) + 1;
  const Watched bad = run_and_watch("none", bad_threads, 2.0);
  const Watched good = run_and_watch("core", 1, 2.0);
  ASSERT_EQ(bad.exit_code, 0);
  ASSERT_EQ(good.exit_code, 0);

  EXPECT_TRUE(bad.prediction.oversubscribed) << bad.prediction.summary;
  EXPECT_TRUE(bad.verdict.observed_oversubscribed) << bad.verdict.diagnosis;
  EXPECT_EQ(bad.verdict.predicted_oversubscribed, true);
  ASSERT_EQ(bad.verdict.ranks.size(), 2u);
  EXPECT_GE(bad.verdict.ranks[0].max_threads, bad_threads);
  EXPECT_GT(bad.verdict.mean_runnable, 1.2 * static_cast<double>(pus));

  EXPECT_FALSE(good.verdict.observed_oversubscribed) << good.verdict.diagnosis;
  EXPECT_EQ(good.verdict.predicted_oversubscribed, good.prediction.oversubscribed);
  ASSERT_EQ(good.verdict.ranks.size(), 2u);
  if (pus >= 2) {
    EXPECT_FALSE(good.prediction.oversubscribed) << good.prediction.summary;
    // Bound to a core each: one PU, not the same one, as predicted.
    EXPECT_EQ(good.verdict.ranks[0].allowed_pus.size(), 1u);
    EXPECT_NE(good.verdict.ranks[0].allowed_pus, good.verdict.ranks[1].allowed_pus);
    EXPECT_TRUE(good.verdict.binding_issues.empty()) << good.verdict.binding_issues.front();
  }
  EXPECT_NE(bad.verdict.diagnosis, good.verdict.diagnosis);
  EXPECT_EQ(bad.verdict.diagnosis.rfind("oversubscribed: ", 0), 0u);
  EXPECT_EQ(good.verdict.diagnosis.rfind("ok: ", 0), 0u);

  // The sampler's own CPU time over the sampled wall time, at the default 200 ms interval.
  EXPECT_LT(bad.verdict.sampler_cpu_pct, 1.0);
  EXPECT_LT(good.verdict.sampler_cpu_pct, 1.0);
}

}  // namespace
}  // namespace tune::probes
