// What a verdict's queueing cost the job, against comparable trials (the same but for smaller
// pools), and the verdicts' precision and recall scored only where such a trial exists.
#include <gtest/gtest.h>

#include <sstream>

#include "search/trial.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/prediction_quality.h"
#include "tuner/judge/verdict_cost.h"
#include "tuner/report/report_model.h"
#include "tuner/report/reporter.h"

namespace tune::tuner {
namespace {

// A trial of two ranks on `cpusets` with `pools` threads per rank in each pool group, its
// parameters, its figure, and its observed verdict (the ranks' own threads' wait share).
struct Spec {
  std::map<std::string, double> params;
  double value = 0;
  bool flagged = false;
  std::map<std::string, int> pools;
  double main_wait = 0.1;
  std::string cpuset = "0-1";
  double spin = 0;      // each rank's share of its CPU samples in libgomp
  double switches = 0;  // involuntary switches per second (the verdict's, over 2 PUs)
};

search::FrozenTrial make(int number, const Spec& s) {
  search::FrozenTrial t;
  t.number = number;
  t.state = search::TrialState::complete;
  t.value = s.value;
  t.params = s.params;
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < 2; ++r) {
    nlohmann::json groups = nlohmann::json::array();
    // As probes::Prediction::to_json writes each group: its threads and how many are busy.
    groups.push_back({{"name", "main"}, {"threads", 1}, {"busy", 1}});
    for (const auto& [name, n] : s.pools)
      groups.push_back({{"name", name}, {"threads", n}, {"busy", n}});
    groups.push_back({{"name", "runtime"}, {"threads", 3}, {"busy", 0}});
    ranks.push_back({{"rank", r}, {"cpuset", s.cpuset}, {"groups", groups}});
  }
  t.system_attrs[k_attr_probe_prediction] = {{"oversubscribed", s.flagged}, {"ranks", ranks}};
  nlohmann::json seen = nlohmann::json::array();  // the verdict's ranks, as the monitor wrote them
  for (int r = 0; r < 2; ++r) {
    nlohmann::json shares = {{{"library", "libopenblas"}, {"share", 1 - s.spin}, {"samples", 90}}};
    if (s.spin > 0) shares.push_back({{"library", "libgomp"}, {"share", s.spin}, {"samples", 10}});
    seen.push_back({{"rank", r}, {"cpu_libraries", shares}});
  }
  t.system_attrs[k_attr_probe_verdict] = {
      {"observed_oversubscribed", s.flagged},
      {"pus", 2},
      {"nonvoluntary_per_s", s.switches},
      {"ranks", seen},
      {"sustained", {{"main_wait_share", s.main_wait}, {"helper_wait_share", 0.8}}}};
  return t;
}

search::VectorStudyView study_of(const std::vector<Spec>& specs,
                                 search::Direction direction = search::Direction::maximize) {
  search::VectorStudyView v(direction);
  int n = 0;
  for (const auto& s : specs) v.mutable_trials().push_back(make(n++, s));
  return v;
}

// `sh -c 'echo time: {x}'`: no pool at all, each trial faster or slower by its x alone. No
// trial is the same but for smaller pools: nothing is scored, and no "recall 0%" is made up.
TEST(VerdictCost, AStudyWithoutPoolsScoresNothing) {
  std::vector<Spec> specs;
  for (int x = 0; x < 4; ++x) specs.push_back({{{"x", double(x)}}, 1.0 + x, false, {}, 0.0});
  const auto v = study_of(specs, search::Direction::minimize);
  EXPECT_TRUE(pool_parameters(v).empty());
  const auto costs = verdict_costs(v);
  ASSERT_EQ(costs.size(), 4U);
  for (const auto& [number, cost] : costs) EXPECT_EQ(cost.against, -1);
  const FigureQuality q = figure_quality(v);
  EXPECT_EQ(q.trials, 0);
  EXPECT_EQ(q.unscored, 4);
  EXPECT_EQ(q.false_negative, 0);
  EXPECT_FALSE(q.recall);
  EXPECT_EQ(figure_quality_text(q),
            "verdicts against the job's own figure: none of 4 trials scored (no comparable "
            "trial, the same but for smaller pools)");
  EXPECT_EQ(figure_quality_json(q)["unscored"], 4);
}

// An allocator parameter makes one setting slow; the threads' parameter sizes the BLAS pool. The
// slow trial is compared with its own allocator's smaller pool only, never with the fast
// allocator's trial: the allocator's cost is not a missed oversubscription.
TEST(VerdictCost, ATrialSlowedByAParameterThatSizesNoPoolIsNoMissedOversubscription) {
  const auto v = study_of({
      {{{"threads", 2}, {"alloc", 0}}, 100, false, {{"blas", 2}}},  // #0
      {{{"threads", 1}, {"alloc", 0}}, 101, false, {{"blas", 1}}},  // #1
      {{{"threads", 2}, {"alloc", 1}}, 200, false, {{"blas", 2}}},  // #2: the fast allocator
      {{{"threads", 1}, {"alloc", 1}}, 198, false, {{"blas", 1}}},  // #3
  });
  EXPECT_EQ(pool_parameters(v), std::vector<std::string>{"threads"});
  const auto costs = verdict_costs(v);
  EXPECT_EQ(costs.at(0).against, 1);  // not #2 nor #3: another allocator
  EXPECT_EQ(costs.at(0).smaller_pools, std::vector<std::string>{"blas"});
  EXPECT_FALSE(costs.at(0).slowed);
  EXPECT_EQ(costs.at(1).against, -1);  // nothing smaller than one thread
  EXPECT_EQ(costs.at(2).against, 3);
  const FigureQuality q = figure_quality(v);
  EXPECT_EQ(q.trials, 2);  // #0 and #2
  EXPECT_EQ(q.unscored, 2);
  EXPECT_EQ(q.false_negative, 0);
  EXPECT_EQ(q.true_negative, 2);
}

// Two runs of every setting (so the noise is known, about 1%): 2 BLAS threads per rank ran at
// half the speed of 1, and the verdict said so: counted as a true positive, its cost stated.
TEST(VerdictCost, AContendedTrialWhoseSmallerPoolsRanFasterBeyondTheNoiseIsCounted) {
  Spec spinning{{{"threads", 2}}, 100, true, {{"blas", 2}}, 0.66};
  spinning.spin = 0.6;  // #0 spun in libgomp: costly; #2 was preempted 3000 times per PU-second
  Spec preempted{{{"threads", 2}}, 102, true, {{"blas", 2}}, 0.62};
  preempted.switches = 6000;
  const auto v = study_of({
      spinning,                                       // #0
      {{{"threads", 1}}, 200, false, {{"blas", 1}}},  // #1
      preempted,                                      // #2
      {{{"threads", 1}}, 197, false, {{"blas", 1}}},  // #3
  });
  const auto costs = verdict_costs(v);
  const VerdictCost& c = costs.at(0);
  EXPECT_EQ(c.against, 1);  // the fastest of the two runs with one thread
  EXPECT_EQ(c.comparable, 2);
  EXPECT_TRUE(c.noise_known);
  EXPECT_TRUE(c.slowed);
  EXPECT_NEAR(c.ratio, 2.0, 1e-9);
  EXPECT_TRUE(c.costly);
  EXPECT_TRUE(costs.at(2).costly);
  EXPECT_EQ(verdict_cost_text(c),
            "the ranks' own threads waited 66% of their runnable time (their helpers 80%); the "
            "fastest comparable trial, #1 (smaller blas), was 2.00x better, beyond the noise: the "
            "queueing cost throughput");
  const FigureQuality q = figure_quality(v);
  EXPECT_EQ(q.trials, 2);
  EXPECT_EQ(q.true_positive, 2);
  EXPECT_EQ(q.false_positive, 0);
  EXPECT_EQ(q.costly_true_positive, 2);
  EXPECT_TRUE(q.noise_known);
  EXPECT_EQ(figure_quality_text(q),
            "verdicts against the job's own figure, 2 of 4 trials scored (those with a comparable "
            "trial, the same but for smaller pools): precision 100% (2 of 2), recall 100% (2 of "
            "2) (slowed: a comparable trial better beyond the noise); the verdict that it cost "
            "(spin-waiting or preemption seen): precision 100% (2 of 2), recall 100% (2 of 2)");
}

// Issue 48: the JSON report carries each judged trial's cost, so a recorded grid keeps per point
// whether it was slowed (bench/grids/record.py), not only the totals.
TEST(VerdictCost, TheJsonReportCarriesEachJudgedTrialsCost) {
  auto v = study_of({
      {{{"threads", 2}}, 100, true, {{"blas", 2}}, 0.66},  // #0
      {{{"threads", 1}}, 200, false, {{"blas", 1}}},       // #1
      {{{"threads", 2}}, 102, true, {{"blas", 2}}, 0.62},  // #2
      {{{"threads", 1}}, 197, false, {{"blas", 1}}},       // #3
  });
  const search::SearchSpace space = {{"threads", search::FloatDistribution{1, 2, false, {}}}};
  for (auto& t : v.mutable_trials()) t.distributions["threads"] = space.front().second;
  ReportOptions options;
  options.importance = false;
  std::ostringstream out;
  auto reporter = make_reporter("json");
  ASSERT_TRUE(reporter) << reporter.error();
  (*reporter)->write(out, build_report(v, "demo", space, options));
  const auto j = nlohmann::json::parse(out.str());
  const auto& t0 = j["trials"][0];
  ASSERT_TRUE(t0["verdict_cost"].is_object()) << t0.dump();
  EXPECT_EQ(t0["verdict_cost"]["against"], 1);
  EXPECT_EQ(t0["verdict_cost"]["slowed"], true);
  EXPECT_EQ(t0["verdict_cost"]["flagged"], true);
  EXPECT_NEAR(t0["verdict_cost"]["main_wait_share"].get<double>(), 0.66, 1e-9);
  // #1 has no comparable trial with smaller pools: judged, against none, not slowed.
  EXPECT_EQ(j["trials"][1]["verdict_cost"]["against"], -1);
}

// The DDP job: each rank's one torch thread beside OpenBLAS's pool, the threads queued 66%, and
// one BLAS thread fewer ran no faster: the verdict flagged a queue that cost nothing.
TEST(VerdictCost, AQueueThatCostsNothingIsSaidSoAndCountsAgainstTheVerdict) {
  const auto v = study_of({
      {{{"blas", 2}}, 1534, true, {{"blas", 2}, {"torch_intra_op", 0}}, 0.66},
      {{{"blas", 1}}, 1560, false, {{"blas", 1}, {"torch_intra_op", 0}}},
      {{{"blas", 2}}, 1500, true, {{"blas", 2}, {"torch_intra_op", 0}}, 0.64},
      {{{"blas", 1}}, 1530, false, {{"blas", 1}, {"torch_intra_op", 0}}},
  });
  const VerdictCost c = verdict_costs(v).at(0);
  EXPECT_EQ(c.against, 1);
  EXPECT_TRUE(c.noise_known);
  EXPECT_FALSE(c.slowed);
  EXPECT_EQ(verdict_cost_text(c),
            "the ranks' own threads waited 66% of their runnable time (their helpers 80%); the "
            "fastest comparable trial, #1 (smaller blas), was 1.02x: within the noise, no "
            "measurable cost");
  EXPECT_FALSE(c.costly);  // no spin, 0 switches: the queue showed no cost either
  const FigureQuality q = figure_quality(v);
  EXPECT_EQ(q.false_positive, 2);
  EXPECT_EQ(q.true_positive, 0);
  EXPECT_EQ(q.costly_false_positive, 0);  // the verdict that it cost was not made
  EXPECT_EQ(q.costly_true_negative, 2);
  EXPECT_FALSE(q.costly_precision);
  ASSERT_FALSE(q.contradictions.empty());
  EXPECT_TRUE(q.contradictions[0].flagged);
}

// Other placements (a rank bound to each PU against unbound ranks) are not comparable, whatever
// their pools: the binding is a setting of its own.
TEST(VerdictCost, AnotherPlacementIsNotComparable) {
  Spec bound{{{"threads", 1}, {"bind", 1}}, 300, false, {{"blas", 1}}};
  bound.cpuset = "0";
  const auto v = study_of({
      {{{"threads", 2}, {"bind", 0}}, 100, true, {{"blas", 2}}, 0.5},
      bound,
  });
  EXPECT_EQ(verdict_costs(v).at(0).against, -1);
  EXPECT_EQ(verdict_cost_text(verdict_costs(v).at(0)),
            "the ranks' own threads waited 50% of their runnable time (their helpers 80%); no "
            "comparable trial (the same but for smaller pools): the cost is not measured");
}

}  // namespace
}  // namespace tune::tuner
