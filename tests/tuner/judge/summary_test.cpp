// The plain summaries: which trial is "best" for `tune best`, the end-of-run block and the
// progress line (live output: at most k_live_width columns, 4 significant digits, units).
#include <gtest/gtest.h>

#include <sstream>

#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/summary.h"

namespace tune::tuner {
namespace {

using search::Direction;
using search::FrozenTrial;
using search::TrialState;

FrozenTrial complete(int number, double value) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = number + 1;
  t.state = TrialState::complete;
  t.value = value;
  return t;
}

TEST(Summary, BestSkipsConfirmReRunsAndPrefersFeasibleTrials) {
  search::VectorStudyView study(Direction::minimize);
  auto& ts = study.mutable_trials();
  ts.push_back(complete(0, 5.0));
  ts.push_back(complete(1, 1.0));
  ts.back().constraints = {0.5};  // infeasible, however fast
  ts.push_back(complete(2, 3.0));
  ts.push_back(complete(3, 2.0));
  ts.back().system_attrs[k_attr_rerun_of] = 2;  // a lucky repeat of #2
  FrozenTrial failed;
  failed.number = 4;
  failed.state = TrialState::fail;
  ts.push_back(failed);
  const FrozenTrial* best = best_trial(study);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->number, 2);

  // The re-run is counted apart, as every report counts re-runs (summary.h StateCounts).
  const auto counts = count_states(study);
  EXPECT_EQ(counts.complete, 3);
  EXPECT_EQ(counts.reruns, 1) << "a re-run is counted as a re-run, whatever its stored state";
  EXPECT_EQ(counts.fail, 1);
}

TEST(Summary, MaximizeAndEmptyStudies) {
  search::VectorStudyView study(Direction::maximize);
  EXPECT_EQ(best_trial(study), nullptr);
  std::ostringstream out;
  print_best(out, study);
  EXPECT_EQ(out.str(), "best: no completed trial yet\n");
  // Completed, but measured under load (ranking.h), and no trial on a quiet machine (issue 48):
  // the best of those, marked.
  study.mutable_trials().push_back(complete(0, 5.0));
  study.mutable_trials().back().user_attrs[k_attr_measured_under_load] = {{"external_cpus", 1.9}};
  out.str("");
  print_best(out, study);
  EXPECT_TRUE(out.str().starts_with(
      "best trial: #0  value: 5\n  measured under load: no trial ran on a quiet machine"))
      << out.str();
  // A trial measured on a quiet machine, even a worse one, is the best then.
  study.mutable_trials().push_back(complete(1, 3.0));
  EXPECT_EQ(best_trial(study)->number, 1);
  study.mutable_trials().front().user_attrs.erase(k_attr_measured_under_load);
  study.mutable_trials().push_back(complete(2, 7.0));
  EXPECT_EQ(best_trial(study)->number, 2);
}

// A trial with more parameters than a line holds: two floats, one of them at full double
// precision, and nine categorical or integer knobs.
FrozenTrial many_params_trial(int number) {
  FrozenTrial t = complete(number, 1.23456789);
  const search::CategoricalDistribution maybe{{std::monostate{}, std::int64_t{1}, std::int64_t{2}}};
  const search::CategoricalDistribution dtype{{std::string("fp32"), std::string("fp16")}};
  const std::pair<const char*, search::Distribution> space[] = {
      {"bucket_mb", search::FloatDistribution{0.5, 32.0, true, std::nullopt}},
      {"grad_dtype", dtype},
      {"iterator_workers", search::IntDistribution{0, 8, false, 1}},
      {"learning_rate", search::FloatDistribution{1e-5, 1.0, true, std::nullopt}},
      {"omp_threads", maybe},
      {"opencv_threads", maybe},
      {"prefetch_batches", search::IntDistribution{1, 64, false, 1}},
      {"torch_interop_threads", maybe},
      {"torch_intraop_threads", maybe},
      {"weight_dtype", dtype},
      {"zero_stage", search::IntDistribution{0, 3, false, 1}},
  };
  for (const auto& [name, dist] : space) {
    t.distributions[name] = dist;
    t.params[name] = 1;
  }
  t.params["bucket_mb"] = 0.8845535403584667;
  t.params["learning_rate"] = 0.000123456789;
  return t;
}

TrialProgress progress_of(const FrozenTrial& t) {
  TrialProgress p;
  p.done = 3;
  p.total = 12;
  p.value = t.value;
  p.wall_s = 4.5612;
  p.eta_s = 62;
  p.objectives = {"elapsed_time"};
  return p;
}

TEST(ProgressLine, ManyParametersStayWithinTheLiveWidthAtFourSignificantDigits) {
  search::VectorStudyView study(Direction::minimize);
  study.mutable_trials().push_back(complete(0, 1.0));
  study.mutable_trials().push_back(many_params_trial(1));
  const auto& t = study.trials().back();
  const std::string line = progress_line(t, study, progress_of(t));
  EXPECT_LE(line.size(), k_live_width) << line;
  EXPECT_TRUE(
      line.starts_with("[3/12] #1 COMPLETE elapsed_time 1.235 s (wall 4.561 s) | best #0 "
                       "1 s | eta 1m02s | bucket_mb=0.8846 grad_dtype=fp16 "))
      << line;
  EXPECT_TRUE(line.ends_with(" ...")) << "the parameters that do not fit are cut: " << line;
  // No number on the line has more than 4 significant digits.
  EXPECT_EQ(line.find("0.88455"), std::string::npos) << line;
  EXPECT_EQ(line.find("1.2345"), std::string::npos) << line;
  EXPECT_EQ(line.find("4.5612"), std::string::npos) << line;
  // The whole list, unfitted, keeps every parameter (`tune trials`).
  const auto all = format_params(t);
  EXPECT_NE(all.find(" learning_rate=0.0001235 omp_threads=1 "), std::string::npos) << all;
  EXPECT_TRUE(all.ends_with(" zero_stage=1")) << all;
  // The best trial so far says so in fewer words, which leaves room for one parameter more.
  study.mutable_trials()[0].value = 5.0;
  const std::string best = progress_line(t, study, progress_of(t));
  EXPECT_NE(best.find(" | new best | eta 1m02s | "), std::string::npos) << best;
  EXPECT_LE(best.size(), k_live_width) << best;
}

TEST(ProgressLine, ALongFailReasonIsCutAndTheParametersKeepSomeRoom) {
  search::VectorStudyView study(Direction::minimize);
  study.mutable_trials().push_back(many_params_trial(0));
  auto& failed = study.mutable_trials().back();
  failed.state = TrialState::fail;
  failed.value.reset();
  TrialProgress p = progress_of(failed);
  p.state = TrialState::fail;
  p.value.reset();
  p.eta_s.reset();  // the last trial: no eta
  p.reason = "exit code 1: " + std::string(300, 'x');
  const std::string line = progress_line(failed, study, p);
  EXPECT_LE(line.size(), k_live_width) << line;
  EXPECT_TRUE(line.starts_with("[3/12] #0 FAIL (wall 4.561 s): exit code 1: xxx")) << line;
  EXPECT_NE(line.find("x... | bucket_mb=0.8846 "), std::string::npos) << line;
  EXPECT_GE(line.find("x... | ") - line.find(": exit code"), 40u) << "the reason first: " << line;
  EXPECT_EQ(line.find("eta"), std::string::npos) << line;
  EXPECT_EQ(line.find("best"), std::string::npos) << "no trial completed: " << line;
}

TEST(ProgressLine, TheProbesOversubscribedFlagIsShown) {
  search::VectorStudyView study(Direction::minimize);
  auto observed = many_params_trial(0);
  observed.system_attrs[k_attr_probe_verdict] = {
      {"observed_oversubscribed", true},
      {"sustained",
       {{"loads",
         {{{"median_runnable", 5.0}, {"pu_count", 2}},
          {{"median_runnable", 1.0}, {"pu_count", 1}}}}}}};
  observed.system_attrs[k_attr_probe_prediction] = {{"oversubscribed", false}};
  auto predicted = many_params_trial(1);
  predicted.system_attrs[k_attr_probe_prediction] = {
      {"oversubscribed", true}, {"cpusets", {{{"load", 4.2}, {"pu_count", 2}}}}};
  auto fine = many_params_trial(2);
  fine.system_attrs[k_attr_probe_verdict] = {{"observed_oversubscribed", false}};
  study.mutable_trials() = {observed, predicted, fine};
  const auto line = [&](const FrozenTrial& t) { return progress_line(t, study, progress_of(t)); };
  EXPECT_NE(line(observed).find("(wall 4.561 s) OVERSUB 2.5x | new best |"), std::string::npos)
      << line(observed);
  EXPECT_NE(line(predicted).find("(wall 4.561 s) predicted OVERSUB 2.1x | best"), std::string::npos)
      << line(predicted);
  EXPECT_EQ(line(fine).find("OVERSUB"), std::string::npos) << line(fine);
  EXPECT_LE(line(predicted).size(), k_live_width);
}

TEST(ProgressLine, AWallTimeObjectiveIsNotPrintedTwiceAndFrontsAreCapped) {
  search::VectorStudyView study(Direction::minimize);
  study.mutable_trials().push_back(complete(0, 1.0));
  study.mutable_trials().push_back(complete(1, 3.25));
  TrialProgress p;
  p.done = p.total = 2;
  p.value = 3.25;
  p.wall_s = 3.25;
  p.objectives = {"wall_time"};
  const auto& t = study.trials()[1];
  EXPECT_EQ(progress_line(t, study, p), "[2/2] #1 COMPLETE wall_time 3.25 s | best #0 1 s");
  p.objectives.clear();  // a regex objective: no name, no unit
  EXPECT_EQ(progress_line(t, study, p), "[2/2] #1 COMPLETE value 3.25 (wall 3.25 s) | best #0 1");

  search::VectorStudyView front({Direction::minimize, Direction::maximize});
  for (int i = 0; i < 9; ++i) {
    auto t = complete(i, i);
    t.values = {static_cast<double>(i), static_cast<double>(i)};  // each trades one for the other
    front.mutable_trials().push_back(t);
  }
  EXPECT_EQ(best_so_far(front), "front #0 #1 #2 #3 #4 #5 +3");
}

// Issue 48: parameters are printed with the digits a person reads everywhere (exported scripts
// keep them exact); `tune best` prints the objective values exactly.
TEST(Summary, LiveDigitsForTheRunAndExactValuesForTuneBest) {
  search::VectorStudyView study(Direction::minimize);
  study.mutable_trials().push_back(many_params_trial(0));
  std::ostringstream live, exact;
  print_best(live, study, {"elapsed_time"}, SummaryDigits::live);
  print_best(exact, study, {}, SummaryDigits::exact);
  EXPECT_TRUE(live.str().starts_with("best trial: #0  elapsed_time: 1.235 s\nbest params:\n"))
      << live.str();
  EXPECT_NE(live.str().find("\n  bucket_mb = 0.8846\n"), std::string::npos) << live.str();
  EXPECT_TRUE(exact.str().starts_with("best trial: #0  value: 1.23457\n")) << exact.str();
  EXPECT_NE(exact.str().find("\n  bucket_mb = 0.8846\n"), std::string::npos) << exact.str();
}

TEST(Summary, NumbersAndUnits) {
  EXPECT_EQ(format_short(0.8845535403584667), "0.8846");
  EXPECT_EQ(format_short(1234.5678), "1235");
  EXPECT_EQ(format_short(4), "4");
  EXPECT_EQ(format_measure("elapsed_time", 1.23456), "elapsed_time 1.235 s");
  EXPECT_EQ(format_measure("samples_per_sec", 5123.4), "samples_per_sec 5123 samples/s");
  EXPECT_EQ(format_measure("main/accuracy", 0.851234), "main/accuracy 0.8512");
  EXPECT_EQ(fit_width("abcdef", 6), "abcdef");
  EXPECT_EQ(fit_width("abcdefg", 6), "abc...");
  EXPECT_EQ(fit_width("ab\xC3\xA9"
                      "cdefg",
                      6),
            "ab...")
      << "never half of the two-byte e-acute";
}

}  // namespace
}  // namespace tune::tuner
