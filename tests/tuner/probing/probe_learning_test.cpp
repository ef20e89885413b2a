// The probes' learning kept across trials (tuner/probing/probe_learning.h): folding in only the
// trials finished since the last update gives what a full recomputation over the same trials
// gives, whatever the order and batches they arrive in, and a history that is not the folded
// one plus new trials is recomputed.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "probes/learned_duty.h"
#include "probes/predict.h"
#include "probes/topology.h"
#include "probes/verdict_memory.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/probing/probe_learning.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;
using search::TrialState;

const probes::Topology& machine() {
  static const probes::Topology t = *probes::read_synthetic_topology("pack:1 core:4 pu:1");
  return t;
}

probes::LaunchPlan plan(int ranks, const std::string& bind, int threads) {
  probes::LaunchPlan p;
  p.uses_mpirun = true;
  p.ranks_per_node = ranks;
  p.bind_to = bind;
  p.program_argv = {"python3", "train.py", "--threads", std::to_string(threads)};
  return p;
}

probes::ProgramModel torch_model() {
  probes::ProgramModel m;
  m.program = "torch";
  probes::PoolModel intra;
  intra.pool = "torch_intra_op";
  intra.flag = "--threads";
  m.pools.push_back(intra);
  return m;
}

// A recorded study: each trial's stored prediction, verdict and duty cycles as the probe hooks
// write them (probes::predict, the monitor's verdict JSON, probes::duty_record), for layouts of
// 1-4 ranks bound or not with 1-4 intra-op threads, measured loads drawn at random; some trials
// failed at start (teach nothing), some timed out (teach), some have no probe records.
std::vector<FrozenTrial> recorded_history(int n, unsigned seed) {
  std::mt19937 rng(seed);
  const std::vector<std::string> binds = {"none", "core"};
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < n; ++i) {
    FrozenTrial t;
    t.number = i;
    t.trial_id = 1000 + i;
    const int pick = static_cast<int>(rng() % 10);
    t.state = pick == 0 ? TrialState::fail : TrialState::complete;
    if (pick == 1) {
      t.state = TrialState::fail;
      t.system_attrs[k_attr_fail_reason] = std::string(k_timed_out_reason) + " 10 s";
    }
    if (pick == 2) {
      trials.push_back(std::move(t));  // probes were off, or the record was lost
      continue;
    }
    const int ranks = 1 + static_cast<int>(rng() % 4);
    const int threads = 1 + static_cast<int>(rng() % 4);
    const auto predicted =
        probes::predict(machine(), plan(ranks, binds[rng() % 2], threads), torch_model());
    std::map<std::string, probes::DutyCycle> measured;
    measured["main"] = {1.0, 0.9, unit(rng)};
    measured["other"] = {threads + 1.0, 0.5, threads * unit(rng)};
    if (rng() % 2) measured["openmp"] = {2.0, 0.3, unit(rng)};
    t.system_attrs[k_attr_probe_prediction] = predicted.to_json();
    t.system_attrs[k_attr_probe_verdict] = {{"observed_oversubscribed", unit(rng) < 0.4}};
    t.system_attrs[k_attr_probe_duty] = probes::duty_record(&predicted, measured);
    trials.push_back(std::move(t));
  }
  return trials;
}

// Everything a prediction reads from the learned state, for every key the history can hold.
void expect_same(const ProbeLearning& a, const ProbeLearning& b) {
  ASSERT_EQ(a.learned().trials(), b.learned().trials());
  ASSERT_EQ(a.learned().groups(), b.learned().groups());
  for (const auto& g : a.learned().groups()) {
    for (int pus = 0; pus <= 5; ++pus) {
      for (int threads = 0; threads <= 6; ++threads) {
        EXPECT_EQ(a.learned().load(g, threads, pus), b.learned().load(g, threads, pus))
            << g << " " << threads << " threads on " << pus << " PUs";
        const auto oa = a.learned().other(threads, pus);
        const auto ob = b.learned().other(threads, pus);
        ASSERT_EQ(oa.has_value(), ob.has_value());
        if (oa) {
          EXPECT_EQ(oa->load, ob->load);
          EXPECT_EQ(oa->threads, ob->threads);
        }
      }
    }
  }
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (const std::string bind : {"none", "core"}) {
      for (int threads = 1; threads <= 4; ++threads) {
        const auto p = probes::predict(machine(), plan(ranks, bind, threads), torch_model());
        const auto signature = probes::layout_signature(p.to_json());
        EXPECT_EQ(a.memory().seen(signature), b.memory().seen(signature)) << signature;
        auto pa = p;
        auto pb = p;
        probes::apply_learned_duty(machine(), pa, a.learned(), 1.0);
        probes::apply_verdict_memory(pa, a.memory());
        probes::apply_learned_duty(machine(), pb, b.learned(), 1.0);
        probes::apply_verdict_memory(pb, b.memory());
        EXPECT_EQ(pa.to_json(), pb.to_json());
      }
    }
  }
}

// The study as the runner sees it trial after trial: the first `n` trials, the last `running`
// of them still running (no records yet), in `order`.
std::vector<FrozenTrial> as_of(const std::vector<FrozenTrial>& all, std::size_t n,
                               std::size_t running) {
  std::vector<FrozenTrial> out(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
  for (std::size_t i = n - std::min(n, running); i < n; ++i) {
    out[i].state = TrialState::running;
    out[i].system_attrs = nlohmann::json::object();
  }
  return out;
}

TEST(ProbeLearning, TrialByTrialEqualsAFullRecomputation) {
  const auto all = recorded_history(300, 7);
  const auto full = ProbeLearning::recompute(all);
  ASSERT_GT(full.learned().trials(), 100);  // the history teaches something
  ProbeLearning kept;
  for (std::size_t n = 1; n <= all.size(); ++n) {
    const auto now = as_of(all, n, 2);  // two workers: the last two still run
    kept.update(now);
    if (n % 50 == 0) expect_same(kept, ProbeLearning::recompute(now));
  }
  kept.update(all);
  expect_same(kept, full);
  EXPECT_EQ(kept.recomputations(), 0) << "one fold per trial, never the whole history again";
  EXPECT_EQ(kept.folded(), all.size());
}

TEST(ProbeLearning, OutOfOrderAndInBatchesEqualsAFullRecomputation) {
  auto all = recorded_history(240, 11);
  std::mt19937 rng(3);
  std::shuffle(all.begin(), all.end(), rng);  // another worker's trials arrive in any order
  const auto full = ProbeLearning::recompute(all);
  ProbeLearning kept;
  std::size_t n = 0;
  for (const std::size_t batch : {1, 17, 40, 2, 90, 60, 30}) {
    n = std::min(all.size(), n + batch);
    // Trials still running anywhere in the list, finished at a later update.
    auto now = as_of(all, n, 0);
    for (std::size_t i = 0; i < now.size(); i += 7) {
      if (i + 20 < now.size()) continue;
      now[i].state = TrialState::running;
      now[i].system_attrs = nlohmann::json::object();
    }
    std::shuffle(now.begin(), now.end(), rng);
    kept.update(now);
    expect_same(kept, ProbeLearning::recompute(now));
  }
  kept.update(all);
  expect_same(kept, full);
  EXPECT_EQ(kept.recomputations(), 0);
}

TEST(ProbeLearning, AnotherHistoryIsRecomputed) {
  const auto all = recorded_history(120, 5);
  ProbeLearning kept;
  kept.update(all);
  // A folded trial gone (another study, a fresh one): what the rest teach, no more.
  const std::vector<FrozenTrial> fewer(all.begin() + 10, all.end());
  kept.update(fewer);
  expect_same(kept, ProbeLearning::recompute(fewer));
  EXPECT_EQ(kept.recomputations(), 1);
  kept.update({});
  EXPECT_EQ(kept.learned().trials(), 0);
  // A folded trial whose state is not what was folded.
  kept.update(all);
  auto changed = all;
  for (auto& t : changed)
    if (t.state == TrialState::complete) t.state = TrialState::fail;
  kept.update(changed);
  expect_same(kept, ProbeLearning::recompute(changed));
  EXPECT_EQ(kept.learned().trials(), ProbeLearning::recompute(changed).learned().trials());
  // Trial ids that repeat (an invented history) count every trial, each update afresh.
  auto repeated = all;
  for (auto& t : repeated) t.trial_id = -1;
  const auto once = ProbeLearning::recompute(repeated);
  kept.update(repeated);
  kept.update(repeated);
  expect_same(kept, once);
  expect_same(once, ProbeLearning::recompute(all));
}

// Through a study view's change log (as the runner hands the probes its StudyCache): trials
// appear running, then finish, in batches, and each update reads only what changed; at every step
// the result equals a full recomputation over the same trials.
TEST(ProbeLearning, ThroughTheChangeLogEqualsAFullRecomputation) {
  const auto all = recorded_history(300, 13);
  search::VectorStudyView view(search::Direction::minimize);
  ProbeLearning kept;
  std::mt19937 rng(5);
  std::size_t started = 0, finished = 0;
  while (finished < all.size()) {
    // A few trials start (running, no records yet), a few of the running ones end.
    const std::size_t start = std::min(all.size() - started, std::size_t{1 + rng() % 4});
    for (std::size_t i = 0; i < start; ++i, ++started) {
      FrozenTrial running = all[started];
      running.state = TrialState::running;
      running.system_attrs = nlohmann::json::object();
      view.add(std::move(running));
    }
    const std::size_t end = std::min(started - finished, std::size_t{rng() % 4});
    for (std::size_t i = 0; i < end; ++i, ++finished) view.replace(finished, all[finished]);
    kept.update(view);
    if (rng() % 10 == 0) expect_same(kept, ProbeLearning::recompute(view.trials()));
  }
  kept.update(view);
  expect_same(kept, ProbeLearning::recompute(all));
  EXPECT_EQ(kept.recomputations(), 0) << "the log said what changed: nothing recomputed";
  EXPECT_EQ(kept.folded(), all.size());
  // A view whose log cannot say (its trials were changed in place) is read whole.
  view.mutable_trials().resize(100);
  kept.update(view);
  expect_same(kept, ProbeLearning::recompute(view.trials()));
}

}  // namespace
}  // namespace tune::tuner
