// The prediction's precision and recall of "oversubscribed" against the observed verdicts, as
// `tune report` (every format) and the end of a `tune` run show them.
#include <gtest/gtest.h>

#include <sstream>

#include "tuner/base/trial_attrs.h"
#include "tuner/report/report.h"
#include "tuner/run/prediction_quality.h"

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
            "predicted vs observed oversubscription, 10 trials: precision 75% (3 of 4), recall "
            "60% (3 of 5)");
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
  EXPECT_NE(summary.str().find("probes: predicted vs observed"), std::string::npos)
      << summary.str();
}

}  // namespace
}  // namespace tune::tuner
