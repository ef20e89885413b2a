// The prediction's precision and recall of "oversubscribed" against the observed verdicts, as
// `tune report` (every format) and the end of a `tune` run show them.
#include <gtest/gtest.h>

#include <sstream>

#include "search/trial.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/prediction_quality.h"
#include "tuner/report/report.h"

namespace tune::tuner {
namespace {

search::FrozenTrial trial(int number, std::optional<bool> predicted, std::optional<bool> observed) {
  search::FrozenTrial t;
  t.number = number;
  t.state = search::TrialState::complete;
  t.value = 1.0 + number;
  if (predicted) t.system_attrs[k_attr_probe_prediction] = {{"oversubscribed", *predicted}};
  if (observed)
    t.system_attrs[k_attr_probe_verdict] = {{"observed_oversubscribed", *observed},
                                            {"diagnosis", *observed ? "oversubscribed" : "ok"}};
  return t;
}

// 3 true positives, 1 false positive, 2 false negatives, 4 true negatives; two trials lack one
// side (a skipped trial, a trial before the probes) and are not counted.
std::vector<search::FrozenTrial> study() {
  std::vector<search::FrozenTrial> t;
  int n = 0;
  for (int i = 0; i < 3; ++i) t.push_back(trial(n++, true, true));
  t.push_back(trial(n++, true, false));
  for (int i = 0; i < 2; ++i) t.push_back(trial(n++, false, true));
  for (int i = 0; i < 4; ++i) t.push_back(trial(n++, false, false));
  t.push_back(trial(n++, true, std::nullopt));
  t.push_back(trial(n++, std::nullopt, false));
  return t;
}

TEST(PredictionQuality, CountsPrecisionAndRecall) {
  const auto q = prediction_quality(study());
  EXPECT_EQ(q.trials, 10);
  EXPECT_EQ(q.true_positive, 3);
  EXPECT_EQ(q.false_positive, 1);
  EXPECT_EQ(q.false_negative, 2);
  EXPECT_EQ(q.true_negative, 4);
  EXPECT_DOUBLE_EQ(*q.precision, 0.75);
  EXPECT_DOUBLE_EQ(*q.recall, 0.6);
  EXPECT_EQ(prediction_quality_text(q),
            "the prediction against the probes' own verdicts (not the job's figure), 10 trials: "
            "precision 75% (3 of 4), recall 60% (3 of 5)");
}

// A trial that failed at start (a wrong path in its command) ran a second of start-up: its "ok"
// says nothing of its settings. One stopped at its time limit, by the pruner, or re-run counts.
TEST(PredictionQuality, OnlyTrialsThatRanTheirWorkCount) {
  auto failed = trial(0, true, false);
  failed.state = search::TrialState::fail;
  failed.system_attrs[k_attr_fail_reason] = "exit code 2: can't open file 'train.py'";
  auto timed_out = trial(1, true, true);
  timed_out.state = search::TrialState::fail;
  timed_out.system_attrs[k_attr_fail_reason] = std::string(k_timed_out_reason) + " 120.0s";
  auto pruned = trial(2, false, false);
  pruned.state = search::TrialState::pruned;
  auto running = trial(3, true, false);
  running.state = search::TrialState::running;
  EXPECT_FALSE(verdict_counts(failed));
  EXPECT_TRUE(verdict_counts(timed_out));
  EXPECT_TRUE(verdict_counts(pruned));
  EXPECT_FALSE(verdict_counts(running));
  const auto q = prediction_quality({failed, timed_out, pruned, running});
  EXPECT_EQ(q.trials, 2);
  EXPECT_EQ(q.true_positive, 1);
  EXPECT_EQ(q.false_positive, 0);
  EXPECT_EQ(q.true_negative, 1);
}

// hpcc's unbound BLAS threads, as measured: the setting is oversubscribed in some runs and not in
// others, so run by run half the "oversubscribed" predictions are wrong; by setting the
// prediction that it is at risk is right every time, and the chance beats the yes or no.
TEST(PredictionQuality, BySettingAtRiskIsJudgedAgainstAnyRunOfTheSameLayout) {
  auto run = [](int number, const std::string& cpuset, bool at_risk, double risk, bool observed) {
    auto t = trial(number, at_risk, observed);
    auto& p = t.system_attrs[k_attr_probe_prediction];
    p["at_risk"] = at_risk;
    p["risk"] = risk;
    p["ranks"] = {{{"rank", 0},
                   {"cpuset", cpuset},
                   {"groups", {{{"name", "blas"}, {"threads", cpuset == "0-1" ? 1 : 0}}}}}};
    return t;
  };
  std::vector<search::FrozenTrial> trials;
  int n = 0;
  // Unbound, two BLAS threads per rank: slowed in 2 runs of 4, predicted at risk in all.
  for (const bool observed : {true, false, true, false})
    trials.push_back(run(n++, "0-1", true, 0.5, observed));
  // Bound, one thread: never oversubscribed, never at risk.
  for (int i = 0; i < 4; ++i) trials.push_back(run(n++, "0", false, 0.0, false));
  const auto q = prediction_quality(trials);
  EXPECT_DOUBLE_EQ(*q.precision, 0.5);  // run by run
  EXPECT_DOUBLE_EQ(*q.recall, 1.0);
  EXPECT_EQ(q.risk_trials, 8);
  EXPECT_EQ(q.risk_true_positive, 4);
  EXPECT_EQ(q.risk_false_positive, 0);
  EXPECT_EQ(q.risk_false_negative, 0);
  EXPECT_DOUBLE_EQ(*q.risk_precision, 1.0);
  EXPECT_DOUBLE_EQ(*q.risk_recall, 1.0);
  EXPECT_DOUBLE_EQ(*q.brier, 4 * 0.25 / 8);    // 0.5 against 1 or 0 on half the runs, exact on half
  EXPECT_DOUBLE_EQ(*q.brier_yes_no, 2.0 / 8);  // "oversubscribed" wrong in 2 runs of 8
  EXPECT_NE(prediction_quality_text(q).find("; by setting (at risk vs oversubscribed in some run): "
                                            "precision 100% (4 of 4), recall 100% (4 of 4)"),
            std::string::npos)
      << prediction_quality_text(q);
  EXPECT_EQ(prediction_quality_json(q)["by_setting"]["precision"], 1.0);

  // A setting at risk whose runs were all ok is a false positive by setting; one never predicted
  // at risk that was oversubscribed once, a false negative for each of its runs.
  trials.push_back(run(n++, "1", true, 0.5, false));
  trials.push_back(run(n++, "0-1,2", false, 0.0, false));
  trials.push_back(run(n++, "0-1,2", false, 0.0, true));
  const auto r = prediction_quality(trials);
  EXPECT_EQ(r.risk_false_positive, 1);
  EXPECT_EQ(r.risk_false_negative, 2);
}

TEST(PredictionQuality, UndefinedSharesAreSaidNotInvented) {
  const auto q = prediction_quality({trial(0, false, false)});
  EXPECT_FALSE(q.precision.has_value());
  EXPECT_FALSE(q.recall.has_value());
  EXPECT_EQ(prediction_quality_json(q)["precision"], nullptr);
  EXPECT_NE(prediction_quality_text(q).find("precision n/a (none predicted)"), std::string::npos);
  EXPECT_EQ(prediction_quality_text(prediction_quality({})), "");
}

TEST(PredictionQuality, EveryReportFormatAndTheRunSummaryShowIt) {
  search::VectorStudyView view(search::Direction::minimize);
  view.mutable_trials() = study();
  const ReportData data = build_report(view, "s", {});
  const std::string line = "precision 75% (3 of 4), recall 60% (3 of 5)";
  for (const char* format : {"text", "markdown", "html"}) {
    auto reporter = make_reporter(format);
    ASSERT_TRUE(reporter) << format;
    std::ostringstream out;
    (*reporter)->write(out, data);
    EXPECT_NE(out.str().find(line), std::string::npos) << format << ":\n" << out.str();
  }
  const auto j = report_to_json(data);
  EXPECT_EQ(j["prediction_quality"]["true_positive"], 3);
  EXPECT_DOUBLE_EQ(j["prediction_quality"]["recall"].get<double>(), 0.6);
  std::ostringstream summary;
  print_summary(summary, "s", view);
  EXPECT_NE(summary.str().find("probes: the prediction against the probes' own verdicts"),
            std::string::npos)
      << summary.str();
}

// A trial with its figure (img/s, higher is better), its observed verdict and how many ranks
// the monitor saw (bound to a core each, or unbound: the binding does not make another job).
search::FrozenTrial judged(int number, double value, bool flagged, int ranks, bool bound = true) {
  search::FrozenTrial t;
  t.number = number;
  t.state = search::TrialState::complete;
  t.value = value;
  t.params = {{"x", static_cast<double>(number)}};
  nlohmann::json list = nlohmann::json::array();
  for (int r = 0; r < ranks; ++r)
    list.push_back({{"rank", r}, {"allowed_pus", bound ? std::to_string(r) : "0-1"}});
  t.system_attrs[k_attr_probe_verdict] = {{"observed_oversubscribed", flagged}, {"ranks", list}};
  return t;
}

// Trials that differ in a parameter sizing no pool the prediction knows (none stored here) are
// not each other's measure: the fastest of them beating the rest says nothing of their queues,
// so no verdict is scored (tests/tuner/judge/verdict_cost_test.cpp scores comparable ones).
TEST(FigureQuality, VerdictsWithoutAComparableTrialAreNotScored) {
  search::VectorStudyView v(search::Direction::maximize);
  auto& ts = v.mutable_trials();
  ts.push_back(judged(0, 1810, true, 2, false));
  ts.push_back(judged(1, 1700, false, 2));
  ts.push_back(judged(2, 1000, true, 2));
  ts.push_back(judged(3, 700, true, 2, false));
  ts.push_back(judged(4, 720, false, 2, false));
  ts.push_back(judged(5, 100, true, 1));
  const FigureQuality q = figure_quality(v);
  EXPECT_EQ(q.trials, 0);
  EXPECT_EQ(q.unscored, 6);
  EXPECT_EQ(q.false_negative, 0);
  EXPECT_TRUE(q.contradictions.empty());
  EXPECT_EQ(figure_quality_text(q),
            "verdicts against the job's own figure: none of 6 trials scored (no comparable "
            "trial, the same but for smaller pools)");
  EXPECT_EQ(figure_quality_json(q)["trials"], 0);
}

}  // namespace
}  // namespace tune::tuner
