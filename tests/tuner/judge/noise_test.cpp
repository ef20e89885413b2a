// The noise model (tuner/judge/noise.h) on hand-made studies: one run's noise from repeated
// settings, re-runs and trials' own intervals, or unknown; the best's leads and the settings'
// spread against it; the words every output prints; and the distributions it tests with
// (tuner/base/stats.h) against textbook values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/noise.h"

namespace tune::tuner {
namespace {

using search::Direction;
using search::FrozenTrial;
using search::TrialState;

const search::CategoricalDistribution k_bind{{std::string("none"), std::string("core")}};
const search::CategoricalDistribution k_threads{
    {std::int64_t{1}, std::int64_t{2}, std::int64_t{4}}};

// A trial of the study: bind_to (0 none, 1 core) and threads (index: 1, 2, 4).
FrozenTrial trial(int number, std::optional<double> value, int bind, int threads,
                  nlohmann::json system = nlohmann::json::object()) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = number + 1;
  t.state = value ? TrialState::complete : TrialState::fail;
  t.value = value;
  t.distributions = {{"bind_to", k_bind}, {"threads", k_threads}};
  t.params = {{"bind_to", bind}, {"threads", threads}};
  t.system_attrs = std::move(system);
  return t;
}

nlohmann::json enqueued() { return {{k_attr_fixed_params, nlohmann::json::object()}}; }

// A completed re-run of trial `of`, stored as tune stores one (PRUNED, its value in a user attr).
FrozenTrial rerun(int number, int of, double value, int bind, int threads) {
  auto t = trial(number, std::nullopt, bind, threads,
                 {{k_attr_fixed_params, nlohmann::json::object()}, {k_attr_rerun_of, of}});
  t.state = TrialState::pruned;
  t.user_attrs[k_attr_rerun_value] = value;
  return t;
}

// The six single runs, all within 6% of each other: the baseline #0 at 8 s, the best #3
// at 7.715 s (1.037x), every setting different.
search::VectorStudyView six_single_runs() {
  search::VectorStudyView v(Direction::minimize);
  auto& ts = v.mutable_trials();
  ts.push_back(trial(0, 8.0, 0, 2, enqueued()));
  ts.push_back(trial(1, 7.80, 1, 0));
  ts.push_back(trial(2, 7.95, 0, 1));
  ts.push_back(trial(3, 7.715, 1, 1));
  ts.push_back(trial(4, 8.10, 0, 0));
  ts.push_back(trial(5, 8.17, 1, 2));
  return v;
}

TEST(Stats, DistributionsMatchTextbookValues) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3027, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 5), 2.5706, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0423, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, std::numeric_limits<double>::infinity()), 1.95996, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.025, 5), -2.5706, 1e-4);
  EXPECT_NEAR(incomplete_beta(2, 3, 0.4), 0.5248, 1e-12);  // a binomial sum for whole a, b
  EXPECT_NEAR(incomplete_beta(1, 1, 0.3), 0.3, 1e-12);
  EXPECT_NEAR(f_upper_tail(4.1028, 2, 10), 0.05, 1e-4);  // F(2, 10)'s 95% point
  EXPECT_NEAR(f_upper_tail(4.1203, 4, 7), 0.05, 1e-4);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(f_upper_tail(3.8415, 1, inf), 0.05, 1e-4);  // chi-square(1)'s 95% point
  EXPECT_NEAR(f_upper_tail(11.0705 / 5, 5, inf), 0.05, 1e-4);
  EXPECT_DOUBLE_EQ(f_upper_tail(0, 3, 10), 1.0);
  EXPECT_DOUBLE_EQ(f_upper_tail(inf, 3, 10), 0.0);
  // Boost.Math's (issue 49), against qt/pf/pchisq (mpmath, 30 digits) to 1e-6: the tails the noise
  // model reads.
  EXPECT_NEAR(student_t_quantile(0.995, 3), 5.840909, 1e-6);   // qt(0.995, 3)
  EXPECT_NEAR(student_t_quantile(0.9, 12), 1.356217, 1e-6);    // qt(0.9, 12)
  EXPECT_NEAR(f_upper_tail(2.5, 3, 20), 0.0888438, 1e-6);      // 1 - pf(2.5, 3, 20)
  EXPECT_NEAR(f_upper_tail(9.21034 / 2, 2, inf), 0.01, 1e-6);  // 1 - pchisq(9.21034, 2)
  // Outside the domain: NaN, never an exception out of a pure statistic.
  EXPECT_TRUE(std::isnan(student_t_quantile(0.975, 0)));
  EXPECT_TRUE(std::isnan(f_upper_tail(2.0, 0, 10)));
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2, 5}, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(quantile({1, 2}, 0.25), 1.25);
}

// Six single runs, no setting measured twice, no interval: nothing to measure the noise by. Every
// lead is "unknown", and the words say how to measure it instead of making up a figure.
TEST(Noise, SingleRunsLeaveTheNoiseUnknown) {
  const auto n = assess_noise(six_single_runs());
  ASSERT_TRUE(n.assessed);
  EXPECT_FALSE(n.noise.known());
  EXPECT_EQ(n.settings, 6);
  ASSERT_TRUE(n.over_baseline);
  EXPECT_EQ(n.over_baseline->best, 3);
  EXPECT_EQ(n.over_baseline->other, 0);
  EXPECT_NEAR(*n.over_baseline->ratio, 8.0 / 7.715, 1e-12);
  EXPECT_FALSE(n.over_baseline->low);
  EXPECT_EQ(n.over_baseline->verdict, NoiseVerdict::unknown);
  ASSERT_TRUE(n.over_runner_up);
  EXPECT_EQ(n.over_runner_up->other, 1);
  EXPECT_FALSE(n.test);
  EXPECT_EQ(n.settings_verdict, NoiseVerdict::unknown);
  EXPECT_EQ(noise_lines(n), (std::vector<std::string>{
                                "one run's noise is unknown: no setting was measured twice and no "
                                "trial carries its own interval",
                                "best #3 vs baseline #0: 1.037x: not judged against the noise, "
                                "which is unknown",
                                "best #3 vs runner-up #1: 1.011x: not judged against the noise, "
                                "which is unknown",
                                "measure the noise: `tune confirm STUDY --repeats 5` re-runs the "
                                "baseline and the top 3 trials 5 times each, or "
                                "`incumbent_repeats: 3` in the study file re-runs each new best "
                                "during the search"}));
}

// The study with the same setting measured twice, 7.715 s and 9.25 s (as it was: 20%
// apart): one run varies by ~13%, which the six settings' 6% spread is well within.
TEST(Noise, SixSettingsWithinTheNoiseAreNotToldApart) {
  auto v = six_single_runs();
  v.mutable_trials().push_back(trial(6, 9.25, 1, 1));  // #3's setting again
  const auto n = assess_noise(v);
  ASSERT_TRUE(n.noise.sigma);
  const double sigma = std::abs(std::log(9.25) - std::log(7.715)) / std::sqrt(2.0);
  EXPECT_NEAR(*n.noise.sigma, sigma, 1e-12);
  EXPECT_EQ(n.noise.df, 1);
  EXPECT_EQ(n.noise.repeated_settings, 1);
  EXPECT_EQ(n.noise.repeated_runs, 2);
  EXPECT_EQ(n.settings, 6);
  ASSERT_TRUE(n.over_baseline && n.over_baseline->low);
  EXPECT_EQ(n.over_baseline->method, "noise model");
  // Student's t with 1 degree of freedom on the log ratio, each side one run.
  const double half = 12.7062 * sigma * std::sqrt(2.0);
  EXPECT_NEAR(*n.over_baseline->low, std::exp(std::log(8.0 / 7.715) - half), 1e-3);
  EXPECT_NEAR(*n.over_baseline->high, std::exp(std::log(8.0 / 7.715) + half), 1e-2);
  EXPECT_EQ(n.over_baseline->verdict, NoiseVerdict::within);
  EXPECT_EQ(n.over_runner_up->verdict, NoiseVerdict::within);
  ASSERT_TRUE(n.test);
  EXPECT_EQ(n.test->settings, 6);
  EXPECT_DOUBLE_EQ(n.test->df1, 5);
  EXPECT_DOUBLE_EQ(n.test->df2, 1);
  EXPECT_GT(n.test->p, 0.5);
  EXPECT_EQ(n.settings_verdict, NoiseVerdict::within);
  const auto lines = noise_lines(n);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "one run varies by 12.8% (the standard deviation of 1 setting measured 2 times each, "
            "1 degree of freedom)");
  EXPECT_TRUE(lines[1].starts_with("best #3 vs baseline #0: 1.037x, 95% CI [0."));
  EXPECT_TRUE(lines[1].ends_with("(noise model): within the noise, not shown to be better"));
  EXPECT_TRUE(lines[3].starts_with(
      "the study cannot tell its 6 settings apart: they differ no more than the noise of one run "
      "makes them (p = "));
  EXPECT_TRUE(lines[3].ends_with(
      ", F test); no setting is shown to beat another, so no winner and no parameter ranking; "
      "re-measure the best: `tune confirm STUDY --top 3 --repeats 5`"));
}

// Re-runs measure the noise; clear differences between settings are beyond it, the leads of the
// best over settings re-run 3 times each come from the bootstrap, and a runner-up with the
// best's own parameters is skipped.
TEST(Noise, ReRunsToldApartAndTheRunnerUpHasOtherParameters) {
  search::VectorStudyView v(Direction::minimize);
  auto& ts = v.mutable_trials();
  ts.push_back(trial(0, 10.0, 0, 0, enqueued()));
  ts.push_back(trial(1, 5.0, 1, 2));
  ts.push_back(trial(2, 3.0, 1, 1));
  ts.push_back(trial(3, 3.05, 1, 1));  // #2's setting again: not the runner-up
  int number = 4;
  for (const auto& [of, values, bind, threads] :
       std::vector<std::tuple<int, std::vector<double>, int, int>>{
           {0, {10.0, 10.5, 9.6}, 0, 0}, {1, {5.0, 5.2, 4.9}, 1, 2}, {2, {3.0, 3.1, 2.95}, 1, 1}})
    for (double value : values) ts.push_back(rerun(number++, of, value, bind, threads));
  const auto n = assess_noise(v);
  ASSERT_TRUE(n.noise.sigma);
  // #2 stands on its re-runs; #3's one run joins them: settings with 3, 3 and 4 runs.
  EXPECT_EQ(n.noise.repeated_settings, 3);
  EXPECT_EQ(n.noise.repeated_runs, 10);
  EXPECT_EQ(n.noise.df, 7);
  EXPECT_EQ(n.noise.fewest_runs, 3);
  EXPECT_EQ(n.noise.most_runs, 4);
  EXPECT_LT(*n.noise.sigma, 0.05);
  ASSERT_TRUE(n.over_baseline);
  EXPECT_EQ(n.over_baseline->best, 2);
  EXPECT_EQ(n.over_baseline->method, "bootstrap");
  EXPECT_EQ(n.over_baseline->n_best, 3);
  EXPECT_NEAR(*n.over_baseline->ratio, 10.0 / 3.0, 1e-12);
  EXPECT_GE(*n.over_baseline->low, 9.6 / 3.1 - 1e-12);
  EXPECT_EQ(n.over_baseline->verdict, NoiseVerdict::beyond);
  ASSERT_TRUE(n.over_runner_up);
  EXPECT_EQ(n.over_runner_up->other, 1) << "#3 ran the best's own setting";
  EXPECT_EQ(n.over_runner_up->verdict, NoiseVerdict::beyond);
  ASSERT_TRUE(n.test);
  EXPECT_LT(n.test->p, 0.001);
  EXPECT_EQ(n.settings_verdict, NoiseVerdict::beyond);
  const auto lines = noise_lines(n);
  EXPECT_EQ(lines.back(), "the 3 settings differ beyond the noise (p < 0.001, F test)");
  EXPECT_TRUE(lines[1].starts_with("best #2 vs baseline #0: 3.333x, 95% CI [3.")) << lines[1];
  EXPECT_TRUE(lines[1].ends_with(" (bootstrap): beyond the noise")) << lines[1];
}

// Trials that carry their own 95% interval (an objective measured over a window): the noise of
// each run is its interval's, and the noise between runs is said not to be measured.
TEST(Noise, TrialsOwnIntervalsAreTheirNoise) {
  const auto windowed = [](int number, double value, double half, int bind, int threads,
                           nlohmann::json system = nlohmann::json::object()) {
    auto t = trial(number, value, bind, threads, std::move(system));
    t.user_attrs[k_attr_window] = {{"value", value},
                                   {"low", value - half},
                                   {"high", value + half},
                                   {"confidence", 0.95},
                                   {"batches", 10}};
    return t;
  };
  search::VectorStudyView tight(Direction::maximize);  // samples/s: narrow intervals
  tight.mutable_trials() = {windowed(0, 100.0, 1.0, 0, 0, enqueued()),
                            windowed(1, 120.0, 1.0, 1, 1), windowed(2, 110.0, 1.0, 0, 1)};
  auto n = assess_noise(tight);
  EXPECT_FALSE(n.noise.sigma);
  ASSERT_TRUE(n.noise.window_sigma);
  EXPECT_EQ(n.noise.window_runs, 3);
  const double q = student_t_quantile(0.975, 9);  // each interval's: 10 batches at 95%
  EXPECT_NEAR(*n.noise.window_sigma, (std::log(111.0) - std::log(109.0)) / (2 * q), 1e-6);
  ASSERT_TRUE(n.over_baseline && n.over_baseline->low);
  EXPECT_EQ(n.over_baseline->best, 1);
  EXPECT_NEAR(*n.over_baseline->ratio, 1.2, 1e-12);
  // The normal law (the intervals' noise is taken as known), each side its own standard error.
  const double se_best = (std::log(121.0) - std::log(119.0)) / (2 * q);
  const double se_base = (std::log(101.0) - std::log(99.0)) / (2 * q);
  EXPECT_NEAR(*n.over_baseline->low,
              std::exp(std::log(1.2) - 1.959964 * std::hypot(se_best, se_base)), 1e-6);
  EXPECT_EQ(n.over_baseline->verdict, NoiseVerdict::beyond);
  ASSERT_TRUE(n.test);
  EXPECT_TRUE(std::isinf(n.test->df2));
  EXPECT_EQ(n.settings_verdict, NoiseVerdict::beyond);
  EXPECT_TRUE(
      noise_text(n.noise).starts_with("one run varies by 0.4% (the median standard error "
                                      "of 3 runs' own intervals; no setting was run "
                                      "twice"))
      << noise_text(n.noise);

  search::VectorStudyView wide(Direction::maximize);  // the same rates, intervals of +-30
  wide.mutable_trials() = {windowed(0, 100.0, 30.0, 0, 0, enqueued()),
                           windowed(1, 120.0, 30.0, 1, 1), windowed(2, 110.0, 30.0, 0, 1)};
  n = assess_noise(wide);
  EXPECT_EQ(n.over_baseline->verdict, NoiseVerdict::within);
  EXPECT_EQ(n.settings_verdict, NoiseVerdict::within);

  // One trial without an interval and no repeat: its noise is unknown, so is the comparison.
  search::VectorStudyView mixed(Direction::maximize);
  mixed.mutable_trials() = {trial(0, 100.0, 0, 0, enqueued()), windowed(1, 120.0, 1.0, 1, 1)};
  n = assess_noise(mixed);
  EXPECT_TRUE(n.noise.known());
  EXPECT_EQ(n.over_baseline->verdict, NoiseVerdict::unknown);
  EXPECT_FALSE(n.test);
  EXPECT_TRUE(noise_verdict_text(n).starts_with("the 2 settings cannot be compared"));

  // A window's statistics are the job's output: one batch, a bound that is not a number, or a
  // confidence out of range gives no interval rather than a wrong one.
  search::VectorStudyView broken(Direction::maximize);
  broken.mutable_trials() = {windowed(0, 100.0, 1.0, 0, 0, enqueued()),
                             windowed(1, 120.0, 1.0, 1, 1), windowed(2, 110.0, 1.0, 0, 1)};
  broken.mutable_trials()[0].user_attrs[k_attr_window]["batches"] = 1;
  broken.mutable_trials()[1].user_attrs[k_attr_window]["low"] = "119";
  broken.mutable_trials()[2].user_attrs[k_attr_window]["confidence"] = 95;
  n = assess_noise(broken);
  EXPECT_FALSE(n.noise.known());
  EXPECT_FALSE(n.noise.window_sigma);
}

// Repeats and intervals together: a run counts with the larger of the noise between runs and its
// own interval's.
TEST(Noise, ARunCountsWithTheLargerOfBothNoises) {
  search::VectorStudyView v(Direction::minimize);
  auto& ts = v.mutable_trials();
  ts.push_back(trial(0, 10.0, 0, 0, enqueued()));
  ts.push_back(trial(1, 10.2, 0, 0));  // the baseline's setting: sigma ~1.4%
  ts.push_back(trial(2, 9.0, 1, 1));
  // A wide interval of its own, at 90% over 5 batches.
  ts.back().user_attrs[k_attr_window] = {
      {"low", 6.0}, {"high", 12.0}, {"confidence", 0.9}, {"batches", 5}};
  const auto n = assess_noise(v);
  ASSERT_TRUE(n.noise.sigma && n.noise.window_sigma);
  const double own = (std::log(12.0) - std::log(6.0)) / (2 * student_t_quantile(0.95, 4));
  ASSERT_GT(own, *n.noise.sigma);
  const double half = student_t_quantile(0.975, 1) * std::hypot(own, *n.noise.sigma);
  EXPECT_NEAR(*n.over_baseline->high, std::exp(std::log(10.0 / 9.0) + half), 1e-6);
  EXPECT_EQ(n.over_baseline->verdict, NoiseVerdict::within);
  EXPECT_TRUE(noise_text(n.noise).ends_with("; 1 run carries its own interval (median 16.3%)"))
      << noise_text(n.noise);
}

// A value at or below zero: the noise is absolute (in the objective's unit), leads are
// differences.
TEST(Noise, NonPositiveValuesUseTheAbsoluteScale) {
  search::VectorStudyView v(Direction::maximize);
  auto& ts = v.mutable_trials();
  ts.push_back(trial(0, -1.0, 0, 0, enqueued()));
  ts.push_back(trial(1, -0.8, 0, 0));
  ts.push_back(trial(2, 2.0, 1, 1));
  const auto n = assess_noise(v);
  EXPECT_EQ(n.noise.scale, NoiseScale::absolute);
  EXPECT_NEAR(*n.noise.sigma, 0.2 / std::sqrt(2.0), 1e-12);
  ASSERT_TRUE(n.over_baseline);
  EXPECT_FALSE(n.over_baseline->ratio);
  EXPECT_DOUBLE_EQ(n.over_baseline->difference, 3.0);
  EXPECT_TRUE(lead_text(*n.over_baseline).starts_with("better by 3, 95% CI ["))
      << lead_text(*n.over_baseline);
}

// The baseline second by value is also the runner-up: one line says both.
TEST(Noise, TheBaselineAsRunnerUpIsOneLine) {
  search::VectorStudyView v(Direction::minimize);
  v.mutable_trials() = {trial(0, 8.0, 0, 2, enqueued()), trial(1, 7.0, 1, 0), trial(2, 9.0, 0, 1)};
  const auto n = assess_noise(v);
  ASSERT_TRUE(n.over_baseline && n.over_runner_up);
  EXPECT_EQ(n.over_runner_up->other, 0);
  const auto lines = noise_lines(n);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1],
            "best #1 vs baseline #0 (also the runner-up): 1.143x: not judged against the noise, "
            "which is unknown");
}

TEST(Noise, NotAssessedWithoutOneObjectiveOrACompletedTrial) {
  search::VectorStudyView mo({Direction::minimize, Direction::maximize});
  mo.mutable_trials().push_back(trial(0, 1.0, 0, 0));
  EXPECT_FALSE(assess_noise(mo).assessed);
  search::VectorStudyView failed(Direction::minimize);
  failed.mutable_trials().push_back(trial(0, std::nullopt, 0, 0));
  EXPECT_FALSE(assess_noise(failed).assessed);
  search::VectorStudyView one(Direction::minimize);
  one.mutable_trials() = {trial(0, 1.0, 0, 0, enqueued()), trial(1, 1.1, 0, 0)};
  const auto n = assess_noise(one);
  EXPECT_TRUE(n.noise.known());
  EXPECT_FALSE(n.over_baseline) << "the baseline is the best";
  EXPECT_FALSE(n.over_runner_up) << "no other setting";
  EXPECT_EQ(noise_verdict_text(n), "only one setting completed: there is nothing to tell apart");
}

}  // namespace
}  // namespace tune::tuner
