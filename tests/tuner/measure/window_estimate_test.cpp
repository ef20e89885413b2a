// The window objective's parts that run nothing: the rate estimator and its interval
// (tuner/measure/rate_window.h), Student's t, the progress reader over untrusted output
// (tuner/measure/progress.h), and the study file's `objective.window` keys, each bad one a
// file:line:key error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "tests/common/test_support.h"
#include "tuner/base/stats.h"
#include "tuner/measure/progress.h"
#include "tuner/measure/rate_window.h"
#include "tuner/measure/window_follower.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

TEST(StudentT, QuantilesMatchTheTables) {
  // Two-sided 95% (p = 0.975) and 90% (p = 0.95) critical values.
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3027, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 5), 2.5706, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 9), 2.2622, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.95, 9), 1.8331, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0423, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.6041, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.025, 9), -2.2622, 1e-4);
}

WindowSettings counter(double warmup_s = 0, double min_s = 0) {
  WindowSettings s;
  s.warmup_s = warmup_s;
  s.min_s = min_s;
  return s;
}

TEST(RateWindow, AnExactCounterGivesItsRateWithATightInterval) {
  RateWindow w(counter());
  for (int i = 0; i <= 100; ++i) ASSERT_TRUE(w.add(0.1 * i, 250.0 * 0.1 * i));
  const auto e = w.estimate();
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(e.value, 250, 1e-9);
  EXPECT_EQ(e.batches, 10);
  ASSERT_TRUE(e.low && e.high);
  EXPECT_NEAR(*e.low, 250, 1e-6);
  EXPECT_NEAR(*e.high, 250, 1e-6);
  EXPECT_TRUE(w.target_met(e));
}

TEST(RateWindow, TheWarmUpIsLeftOutOfTheWindow) {
  // 2 s at 10 steps/s (start-up), then 100 steps/s: the warm-up of 2 s leaves the slow part out.
  WindowSettings s = counter(/*warmup_s=*/2);
  RateWindow w(s);
  double c = 0;
  for (int i = 0; i <= 80; ++i) {
    const double t = 0.05 * i;
    ASSERT_TRUE(w.add(t, c));
    c += t < 2 ? 0.5 : 5;
  }
  const auto e = w.estimate();
  EXPECT_TRUE(e.warmed_up);
  EXPECT_NEAR(e.origin_t - e.first_t, 2, 1e-9);
  EXPECT_NEAR(e.value, 100, 1e-6);
  EXPECT_NEAR(e.warmup_steps, 20, 1e-9);
  // Over every point, warm-up included, it is slower.
  EXPECT_LT(w.estimate(/*from_first=*/true).value, 80);
}

TEST(RateWindow, WarmUpStepsMustPassToo) {
  WindowSettings s = counter(/*warmup_s=*/0);
  s.warmup_steps = 50;
  RateWindow w(s);
  ASSERT_TRUE(w.add(0, 0));
  ASSERT_TRUE(w.add(1, 40));
  EXPECT_FALSE(w.warmed_up());
  ASSERT_TRUE(w.add(2, 60));
  EXPECT_TRUE(w.warmed_up());
}

TEST(RateWindow, RefusesWhatIsNoProgress) {
  RateWindow w(counter());
  EXPECT_TRUE(w.add(1, 10));
  EXPECT_FALSE(w.add(NAN, 11));
  EXPECT_FALSE(w.add(2, INFINITY));
  EXPECT_FALSE(w.add(0.5, 12));  // time went back
  EXPECT_FALSE(w.add(2, 5));     // the counter went back
  EXPECT_TRUE(w.add(1, 12));     // read with the point before: it stands for both
  EXPECT_TRUE(w.add(2, 20));
  const auto e = w.estimate();
  EXPECT_EQ(e.points, 2);
  EXPECT_NEAR(e.value, 8, 1e-12);
  EXPECT_FALSE(e.low.has_value());  // one batch: no interval
}

TEST(RateWindow, NoTargetStopBeforeMinAndEnoughBatches) {
  RateWindow w(counter(0, /*min_s=*/3));
  for (int i = 0; i <= 20; ++i) w.add(0.1 * i, 10.0 * i);  // 2 s of an exact rate
  auto e = w.estimate();
  EXPECT_FALSE(w.target_met(e));  // 2 s < min 3 s
  for (int i = 21; i <= 40; ++i) w.add(0.1 * i, 10.0 * i);
  EXPECT_TRUE(w.target_met(w.estimate()));
  RateWindow few(counter());
  for (int i = 0; i <= 4; ++i) few.add(i, 10.0 * i);  // 4 batches < k_min_stop_batches
  EXPECT_FALSE(few.target_met(few.estimate()));
}

TEST(RateWindow, PrintedRatesAreAveragedByBatches) {
  WindowSettings s = counter();
  s.measure = WindowMeasure::rate;
  s.scale = 2;
  RateWindow w(s);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(w.add(0.1 * i, i % 2 ? 110 : 90));
  const auto e = w.estimate();
  EXPECT_NEAR(e.value, 200, 1e-9);
  EXPECT_EQ(e.batches, 10);
  ASSERT_TRUE(e.low && e.high);
  EXPECT_NEAR(*e.high - *e.low, 0, 1e-9);  // every batch of 10 alternating values means 100
}

// The interval's coverage on a simulated job: steps whose durations vary (gamma noise) and drift
// in slow waves (an AR(1) slowdown that lasts many steps, as a busy neighbour does), read every
// 50 ms. Batch means must keep near the nominal 95%; a naive interval over single increments
// would not. Seeded, so the count is the same on every run.
TEST(RateWindow, TheIntervalCoversTheTrueRateAsOftenAsItSays) {
  std::mt19937_64 rng(7);
  std::gamma_distribution<double> step_time(25.0, 0.004 / 25.0);  // mean 4 ms, 20% CV
  // Slowdowns that last ~50 steps (0.2 s): stationary sd 0.1, correlation 0.98 a step.
  std::normal_distribution<double> shock(0, 0.1 * std::sqrt(1 - 0.98 * 0.98));
  constexpr int k_runs = 400;
  int covered = 0, naive_covered = 0;
  for (int run = 0; run < k_runs; ++run) {
    RateWindow w(counter());
    double t = 0, slow = 0, next_read = 0.05;
    long steps = 0;
    // The true long-run rate: 1 / (mean step time x mean slowdown) = 250 steps/s (slow has mean 0).
    std::vector<std::pair<double, double>> reads = {{0, 0}};
    w.add(0, 0);
    while (t < 6.0) {
      slow = 0.98 * slow + shock(rng);
      t += step_time(rng) * (1 + std::clamp(slow, -0.5, 0.5));
      ++steps;
      if (t >= next_read) {
        w.add(next_read, static_cast<double>(steps));
        reads.emplace_back(next_read, static_cast<double>(steps));
        next_read += 0.05;
      }
    }
    const auto e = w.estimate();
    ASSERT_TRUE(e.low && e.high);
    if (*e.low <= 250 && 250 <= *e.high) ++covered;
    // Naive: every read's increment as an independent sample.
    std::vector<double> r;
    for (std::size_t i = 1; i < reads.size(); ++i)
      r.push_back((reads[i].second - reads[i - 1].second) / (reads[i].first - reads[i - 1].first));
    double mean = 0, ss = 0;
    for (double x : r) mean += x;
    mean /= static_cast<double>(r.size());
    for (double x : r) ss += (x - mean) * (x - mean);
    const double half = 1.96 * std::sqrt(ss / static_cast<double>(r.size() - 1) / r.size());
    if (mean - half <= 250 && 250 <= mean + half) ++naive_covered;
  }
  const double coverage = static_cast<double>(covered) / k_runs;
  std::cout << "batch-means interval held the true rate in " << covered << " of " << k_runs
            << " windows; an interval over single increments in " << naive_covered << "\n";
  EXPECT_GE(coverage, 0.88) << "naive coverage " << naive_covered;
  EXPECT_LE(coverage, 0.995);
  EXPECT_LT(naive_covered, covered) << "the slow drift must defeat the naive interval";
}

class ProgressReaderTest : public test_support::TempDirTest {
 protected:
  ProgressReaderTest() : TempDirTest("tune-progress-") {}
  void append(const std::string& text) {
    std::ofstream(m_dir / "out", std::ios::app | std::ios::binary) << text;
  }
  WindowSpec spec(const std::string& regex) {
    WindowSpec s;
    s.regex = regex;
    return s;
  }
};

TEST_F(ProgressReaderTest, ReadsOnlyWhatWasAddedAndJoinsCutLines) {
  ProgressReader r(spec("step ([0-9]+)"), (m_dir / "out").string());
  EXPECT_TRUE(r.poll(0.1).empty());  // not written yet
  append("starting\nstep 1 loss 2\nstep 2 lo");
  auto p = r.poll(0.2);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].value, 1);
  EXPECT_EQ(p[0].t, 0.2);
  append("ss 1.9\nstep 3\n");
  p = r.poll(0.3);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].value, 2);
  EXPECT_EQ(p[1].value, 3);
  EXPECT_EQ(r.counts().lines, 4u);
  EXPECT_TRUE(r.poll(0.4).empty());
}

TEST_F(ProgressReaderTest, GarbageIsRefusedOrSkippedNeverTaken) {
  ProgressReader r(spec("step ([-+0-9.eEnaif]+)"), (m_dir / "out").string());
  append("step nan\nstep inf\nstep 1e999\nstep -1e-999x\n\x01\x02\xff step\n");
  append(std::string(100000, 'y') + " step 7\n");  // a huge line: skipped whole
  append("step 12\n");
  const auto p = r.poll(1);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].value, 12);
  EXPECT_EQ(r.counts().refused, 4u);
  EXPECT_EQ(r.counts().long_lines, 1u);
  // A line that never ends is skipped as it grows, and what follows its end is read.
  append(std::string(70000, 'z'));
  EXPECT_TRUE(r.poll(2).empty());
  append(std::string(70000, 'z') + " step 999\nstep 13\n");
  const auto q = r.poll(3);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].value, 13);
  EXPECT_EQ(r.counts().long_lines, 2u);
}

TEST_F(ProgressReaderTest, AFloodIsSkippedToItsLastMegabytes) {
  ProgressReader r(spec("step ([0-9]+)"), (m_dir / "out").string());
  std::string flood;
  for (int i = 0; i < 600000; ++i) flood += "step " + std::to_string(i) + "\n";
  append(flood);  // about 6.5 MB at once
  const auto p = r.poll(1);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.back().value, 599999);
  EXPECT_GT(r.counts().skipped_bytes, 0u);
  EXPECT_LT(p.size(), 600000u);
}

// A job that floods its stdout past what a trial's file gets while it runs (here 4 KiB; 8 MiB in
// a study) shows no progress after that until it ends: the window's failure names the cap
// (issue 37), in the warm-up and after it.
TEST_F(ProgressReaderTest, AFloodPastTheCapIsNamedInTheWindowsFailure) {
  WindowSpec s = spec("step ([0-9]+)");
  s.settings.warmup_s = 1;
  s.max_s = 1;
  const auto path = (m_dir / "out").string();
  WindowFollower quiet(s, path, std::nullopt, 1 << 20);
  WindowFollower flooded(s, path, std::nullopt, 4096);
  append("step 1\n" + std::string(5000, 'x') + "\n");
  EXPECT_EQ(quiet.tick(0.1), "");
  EXPECT_EQ(flooded.tick(0.1), "");
  const auto said = flooded.tick(5);
  EXPECT_TRUE(said.contains("did not end in 2 s")) << said;
  EXPECT_TRUE(said.contains("; stdout reached the 4 KiB a trial's file gets while it runs"))
      << said;
  EXPECT_FALSE(quiet.tick(5).contains("a trial's file gets")) << "no cap reached, none named";
}

TEST_F(ProgressReaderTest, ATimeGroupIsTheJobsClock) {
  ProgressReader r(spec("step ([0-9]+) .*time (?P<time>[0-9.]+)"), (m_dir / "out").string());
  append("step 10 loss 1 time 1.5\nstep 20 loss 1 time 2.5\nstep 30 loss 1 time bad\n");
  const auto p = r.poll(99);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].t, 1.5);
  EXPECT_EQ(p[1].value, 20);
  EXPECT_TRUE(r.counts().job_clock);
}

TEST_F(ProgressReaderTest, LinesCountsEveryMatchingLine) {
  WindowSpec s = spec("^batch done");
  s.settings.measure = WindowMeasure::lines;
  ProgressReader r(s, (m_dir / "out").string());
  append("batch done\nother\nbatch done\nbatch done\n");
  const auto p = r.poll(1);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p.back().value, 3);
}

TEST_F(ProgressReaderTest, ALogsNewEntriesWithTheirOwnTime) {
  WindowSpec s;
  s.source = WindowSpec::Source::log;
  const auto log = (m_dir / "log").string();
  ProgressReader r(s, log);
  test_support::write_file(log, R"([{"iteration": 10, "elapsed_time": 1.0}])");
  auto p = r.poll(5);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].t, 1.0);
  test_support::write_file(log, R"([{"iteration": 10, "elapsed_time": 1.0},
    {"iteration": 20, "elapsed_time": 2.0}, {"iteration": NaN, "elapsed_time": 3.0},
    "junk", {"iteration": 40, "elapsed_time": 4.0}])");
  p = r.poll(6);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].value, 20);
  EXPECT_EQ(p[1].value, 40);
  EXPECT_EQ(r.counts().refused, 2u);
}

// `samples 12,345` read by `samples ([0-9]+)` would be the counter 12: the line is refused, kept
// quoted, and the window fails the trial with it at once, whatever came before; with number:
// grouped and a regex that takes the ',', the same lines read whole.
TEST_F(ProgressReaderTest, APartOfANumberIsNeverAPoint) {
  const auto path = (m_dir / "out").string();
  WindowSpec s = spec("samples ([0-9]+)");
  s.settings.warmup_s = 0;
  ProgressReader r(s, path);
  append("step 1 samples 999\nstep 2 samples 1,998\nstep 3 samples 2997.5\nstep 4 samples 3000\n");
  const auto p = r.poll(1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].value, 999);
  EXPECT_EQ(p[1].value, 3000);
  EXPECT_EQ(r.counts().refused, 2u);
  EXPECT_EQ(r.counts().partial, 2u);
  EXPECT_EQ(r.partial_number(),
            "the window's regex 'samples ([0-9]+)' on stdout matched '1', only part of the number "
            "'1,998' in 'step 2 samples 1,998': the regex must match the whole number (with "
            "number: grouped for 12,345.6, number: decimal_comma for 1,75)");

  WindowFollower f(s, path, std::nullopt);
  const auto said = f.tick(0.5);
  EXPECT_EQ(said, r.partial_number() + " (2 progress line(s) refused so, of 4 read)");
  ASSERT_TRUE(f.decision());
  EXPECT_EQ(f.decision()->state, search::TrialState::fail);
  EXPECT_FALSE(f.decision()->value);
  EXPECT_EQ(f.attrs()["status"], "partial_number");
  EXPECT_EQ(f.attrs()["lines"]["refused"], 2);
  // A job that ended before a tick saw the line fails the same way, not scored on the rest.
  WindowFollower ended(s, path, std::nullopt);
  ended.finish(2);
  const auto v = ended.ended_value();
  ASSERT_FALSE(v);
  EXPECT_TRUE(v.error().contains("only part of the number '1,998'")) << v.error();
  EXPECT_EQ(ended.attrs()["status"], "partial_number");

  // The job's clock too: `time 1` of `time 1.5` is no time.
  ProgressReader timed(spec("step ([0-9]+) time (?P<time>[0-9]+)"), path);
  append("step 5 time 1.5\n");
  (void)timed.poll(3);
  EXPECT_TRUE(
      timed.partial_number().contains("group 'time' matched '1', only part of the "
                                      "number '1.5' in 'step 5 time 1.5'"))
      << timed.partial_number();
}

TEST_F(ProgressReaderTest, NumberStylesReadProgressWhole) {
  WindowSpec s = spec("samples ([0-9,.]+)");
  ProgressReader plain(s, (m_dir / "out").string());
  s.number = NumberStyle::grouped;
  ProgressReader grouped(s, (m_dir / "out").string());
  s.regex = "rate ([0-9,]+)";
  s.number = NumberStyle::decimal_comma;
  ProgressReader comma(s, (m_dir / "out").string());
  append("samples 999 rate 1,75\nsamples 12,345 rate 2\nsamples 1,234,567.5 rate 3,5\n");
  // Plain refuses a ',' between digits, and the window's no_progress says why.
  EXPECT_TRUE(plain.poll(1).size() == 1);
  EXPECT_EQ(plain.counts().refused, 2u);
  EXPECT_EQ(plain.counts().partial, 0u);
  EXPECT_TRUE(
      plain.last_refused().contains("matched '1,234,567.5', which is not a finite "
                                    "number: it has a ',' between digits"))
      << plain.last_refused();
  const auto g = grouped.poll(1);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[1].value, 12345);
  EXPECT_EQ(g[2].value, 1234567.5);
  const auto c = comma.poll(1);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].value, 1.75);
  EXPECT_EQ(c[2].value, 3.5);
  // Grouped refuses what is no grouping ("12,34"), it does not guess.
  append("samples 12,34 rate 1\n");
  EXPECT_TRUE(grouped.poll(2).empty());
  EXPECT_EQ(grouped.counts().refused, 1u);
}

// --- the study file ----------------------------------------------------------------------

bool error_contains(const std::string& yaml, const std::string& what) {
  auto spec = parse_study_spec(yaml, "s.yaml");
  if (spec) {
    ADD_FAILURE() << "expected an error for:\n" << yaml;
    return false;
  }
  if (!spec.error().contains(what)) {
    ADD_FAILURE() << "got: " << spec.error();
    return false;
  }
  return true;
}

std::string window_error(const std::string& window, const std::string& extra = "") {
  const std::string yaml = "name: w\ndirection: maximize\ncommand: [p]\n" + extra +
                           "objective:\n  window: " + window + "\n";
  auto spec = parse_study_spec(yaml, "s.yaml");
  EXPECT_FALSE(spec.has_value()) << "expected an error for:\n" << yaml;
  return spec ? std::string() : spec.error();
}

TEST(WindowSpec, ParsesEveryKey) {
  auto spec = parse_study_spec(R"(name: w
direction: maximize
command: [p]
timeout: 10m
objective:
  window:
    regex: 'step (\d+)'
    stream: stderr
    measure: counter
    scale: 256
    unit: samples/s
    warmup: 5s
    warmup_steps: 20
    target: 1.5%
    confidence: 90%
    min: 4s
    max: 2m
    startup: 90s
    prune: false
)",
                               "s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_TRUE(spec->objective.window);
  const auto& w = *spec->objective.window;
  EXPECT_EQ(w.source, WindowSpec::Source::stream);
  EXPECT_EQ(w.stream, "stderr");
  EXPECT_EQ(w.settings.scale, 256);
  EXPECT_EQ(w.settings.warmup_s, 5);
  EXPECT_EQ(w.settings.warmup_steps, 20);
  EXPECT_DOUBLE_EQ(w.settings.target, 0.015);
  EXPECT_DOUBLE_EQ(w.settings.confidence, 0.9);
  EXPECT_EQ(w.settings.min_s, 4);
  EXPECT_EQ(w.max_s, 120);
  EXPECT_EQ(w.startup_s, 90);
  EXPECT_FALSE(w.prune);
  EXPECT_EQ(objective_names(*spec), std::vector<std::string>{"samples/s"});
  EXPECT_EQ(w.number, NumberStyle::plain);
  auto grouped = parse_study_spec(
      "name: w\ndirection: maximize\ncommand: [p]\nobjective: {window: {regex: 's ([0-9,]+)', "
      "number: grouped}}\n",
      "s.yaml");
  ASSERT_TRUE(grouped) << grouped.error();
  EXPECT_EQ(grouped->objective.window->number, NumberStyle::grouped);

  auto log = parse_study_spec(
      "name: w\ndirection: maximize\ncommand: [p]\nobjective: {window: {log: '{trial_dir}/log', "
      "key: iteration, time_key: '', warmup: 0, target: 0.03}}\n",
      "s.yaml");
  ASSERT_TRUE(log) << log.error();
  EXPECT_EQ(log->objective.window->source, WindowSpec::Source::log);
  EXPECT_EQ(log->objective.window->time_key, "");
  EXPECT_EQ(log->objective.window->settings.warmup_s, 0);
  EXPECT_DOUBLE_EQ(log->objective.window->settings.target, 0.03);
}

TEST(WindowSpec, EveryBadKeyIsAFileLineKeyError) {
  struct Case {
    std::string window, extra, error;
  };
  const Case cases[] = {
      {"{regex: 'x', colour: red}", "", "s.yaml:5: key 'objective.window.colour': unknown key"},
      {"[1, 2]", "", "s.yaml:5: key 'objective.window': expected a mapping"},
      {"{stream: stdout}", "", "s.yaml:5: key 'objective.window.regex': missing"},
      {"{regex: '(unclosed'}", "", "s.yaml:5: key 'objective.window.regex': invalid regular"},
      {"{regex: ''}", "", "s.yaml:5: key 'objective.window.regex': must not be empty"},
      {"{regex: x, stream: stdin}", "", "key 'objective.window.stream': expected stdout or stderr"},
      {"{regex: x, file: f.txt, stream: stderr}", "", "key 'objective.window.stream': give either"},
      {"{regex: x, log: l}", "", "key 'objective.window.regex': give either 'log'"},
      {"{regex: x, key: iteration}", "", "key 'objective.window.key': goes with 'log'"},
      {"{log: l, key: ''}", "", "key 'objective.window.key': must not be empty"},
      {"{log: '{nope}/log'}", "", "key 'objective.window.log': placeholder '{nope}'"},
      {"{regex: x, measure: speed}", "", "key 'objective.window.measure': expected counter"},
      {"{log: l, measure: lines}", "", "key 'objective.window.measure': lines counts"},
      {"{regex: x, scale: 0}", "", "key 'objective.window.scale': must be positive"},
      {"{regex: x, scale: many}", "", "key 'objective.window.scale': expected a finite number"},
      {"{regex: x, warmup: soon}", "", "key 'objective.window.warmup': 'soon' is not a duration"},
      {"{regex: x, warmup_steps: -1}", "", "key 'objective.window.warmup_steps': must be 0"},
      {"{regex: x, target: 80%}", "", "key 'objective.window.target': 80% is outside"},
      {"{regex: x, target: two}", "", "key 'objective.window.target': 'two' is not a fraction"},
      {"{regex: x, confidence: 1.5}", "", "key 'objective.window.confidence': 1.5 is outside"},
      {"{regex: x, min: 10s, max: 5s}", "", "key 'objective.window.min': the window's min"},
      {"{regex: x, max: -3s}", "", "key 'objective.window.max': '-3s' must be positive"},
      {"{regex: x, startup: 0}", "", "key 'objective.window.startup': '0' must be positive"},
      {"{regex: x, prune: maybe}", "", "key 'objective.window.prune': expected true or false"},
      {"{regex: x, unit: \"a\\x01b\"}", "", "key 'objective.window.unit': expected a short name"},
      {"{regex: x, number: commas}", "",
       "s.yaml:5: key 'objective.window.number': 'commas' is not"},
      {"{log: l, number: grouped}", "", "s.yaml:5: key 'objective.window.number': makes no sense"},
      {"{regex: x}", "timeout: 30s\n", "s.yaml:4: key 'timeout': 30 s is not longer than"},
      {"{regex: x}", "pruner: {type: median}\n", "s.yaml:4: key 'pruner': the window prunes"},
  };
  for (const auto& c : cases) {
    const auto error = window_error(c.window, c.extra);
    EXPECT_TRUE(error.contains(c.error)) << "window: " << c.window << "\n got: " << error;
  }
  // Next to the window, the other ways of reading a value are contradictions.
  EXPECT_TRUE(
      error_contains("name: w\ndirection: maximize\ncommand: [p]\nobjective: {window: "
                     "{regex: x}, key: samples}\n",
                     "s.yaml:4: key 'objective.key': makes no sense next to 'window'"));
  EXPECT_TRUE(error_contains(
      "name: w\ncommand: [p]\nobjective: {window: {regex: x}}\n",
      "s.yaml:3: key 'objective.window': a window measures a rate: use direction: maximize"));
  EXPECT_TRUE(
      error_contains("name: w\ndirection: minimize\ncommand: [p]\nobjective: {window: "
                     "{regex: x}}\n",
                     "s.yaml:2: key 'direction': a window measures a rate"));
  EXPECT_TRUE(error_contains(
      "name: w\ndirections: [maximize, minimize]\ncommand: [p]\nobjective: [{window: {regex: "
      "x}}, {wall_time: true}]\n",
      "key 'objective[0].window': a window measures one rate"));
}

}  // namespace
}  // namespace tune::tuner
