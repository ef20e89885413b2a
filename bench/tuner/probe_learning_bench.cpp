// The probes' per-trial learning cost against the study's length (issue 27 point 1): the
// prediction of trial n after learning from trials 0..n-1, as tune did before (every trial
// re-read: ProbeLearning::recompute) and as it does now (ProbeLearning::update folding the one
// trial that finished since), on a history shaped like a small mpirun study's records (2 ranks,
// 1-4 threads, bound or not; duty cycles and a verdict per trial). Prints microseconds per trial.
//   bench_probe_learning [max_trials=10000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "probes/learned_duty.h"
#include "probes/predict.h"
#include "probes/topology.h"
#include "probes/verdict_memory.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/probing/probe_learning.h"

using namespace tune;

namespace {

probes::LaunchPlan plan(const std::string& bind, int threads) {
  probes::LaunchPlan p;
  p.uses_mpirun = true;
  p.ranks_per_node = 2;
  p.bind_to = bind;
  p.program_argv = {"./app", "--threads", std::to_string(threads)};
  return p;
}

probes::ProgramModel model() {
  probes::ProgramModel m;
  probes::PoolModel omp;
  omp.pool = "openmp";
  omp.flag = "--threads";
  m.pools.push_back(omp);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const int max_trials = argc > 1 ? std::atoi(argv[1]) : 10000;
  const probes::Topology topo = *probes::read_synthetic_topology("pack:1 core:4 pu:1");
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<search::FrozenTrial> trials;
  for (int i = 0; i < max_trials; ++i) {
    search::FrozenTrial t;
    t.number = i;
    t.trial_id = i + 1;
    t.state = search::TrialState::complete;
    const int threads = 1 + static_cast<int>(rng() % 4);
    const auto p = probes::predict(topo, plan(rng() % 2 ? "core" : "none", threads), model());
    std::map<std::string, probes::DutyCycle> measured;
    measured["main"] = {1.0, 0.1, 0.5 + unit(rng) / 2};
    measured["openmp"] = {threads - 1.0, 0.5, unit(rng)};
    t.system_attrs[tuner::k_attr_probe_prediction] = p.to_json();
    t.system_attrs[tuner::k_attr_probe_verdict] = {{"observed_oversubscribed", unit(rng) < 0.3}};
    t.system_attrs[tuner::k_attr_probe_duty] = probes::duty_record(&p, measured);
    trials.push_back(std::move(t));
  }
  const probes::Prediction next = probes::predict(topo, plan("none", 3), model());
  using Clock = std::chrono::steady_clock;
  auto predict_after = [&](const tuner::ProbeLearning& l) {
    probes::Prediction p = next;
    probes::apply_learned_duty(topo, p, l.learned(), 1.0);
    probes::apply_verdict_memory(p, l.memory());
    return p.oversubscribed;
  };
  std::printf("%8s %22s %22s\n", "trials", "recomputed us/trial", "incremental us/trial");
  tuner::ProbeLearning kept;
  std::vector<search::FrozenTrial> seen;
  int sink = 0;
  for (int block = max_trials / 10; block <= max_trials; block += max_trials / 10) {
    // Trials up to `block` less 20, folded one at a time (untimed), then 20 timed either way.
    while (static_cast<int>(seen.size()) < block - 20) {
      seen.push_back(trials[seen.size()]);
      kept.update(seen);
    }
    double full_s = 0, incremental_s = 0;
    for (int i = 0; i < 20; ++i) {
      seen.push_back(trials[seen.size()]);
      const auto t0 = Clock::now();
      sink += predict_after(tuner::ProbeLearning::recompute(seen));
      const auto t1 = Clock::now();
      kept.update(seen);
      sink += predict_after(kept);
      const auto t2 = Clock::now();
      full_s += std::chrono::duration<double>(t1 - t0).count();
      incremental_s += std::chrono::duration<double>(t2 - t1).count();
    }
    std::printf("%8d %22.1f %22.1f\n", block, full_s / 20 * 1e6, incremental_s / 20 * 1e6);
  }
  return sink < 0;  // keeps the work from being optimised away
}
