// Which trial `tune export` writes (tuner/export/export_choice.h) on hand-made studies stored as
// tune stores them: a best within the noise of the baseline gives way to the baseline (the same
// verdict the report prints), a best beyond it is written as before, --trial N writes any
// completed trial and refuses the others; the value named is the setting's median of its runs,
// never one run's; and the header carries the why.
#include <gtest/gtest.h>

#include "tests/tuner/support/text_lines.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/export/export.h"
#include "tuner/export/export_choice.h"
#include "tuner/report/report_model.h"

namespace tune::tuner {
namespace {

using search::Direction;
using search::FrozenTrial;
using search::TrialState;

const search::FloatDistribution k_x{1.0, 20.0, false, std::nullopt};

// A completed trial of setting `x` whose own run measured `value` (the stored value, until
// re-runs replace it with their median: see remeasured()).
FrozenTrial trial(int number, double x, std::optional<double> value, bool baseline = false) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = number + 1;
  t.state = value ? TrialState::complete : TrialState::fail;
  t.value = value;
  t.distributions = {{"x", k_x}};
  t.params = {{"x", x}};
  t.system_attrs = nlohmann::json::object();
  if (baseline) t.system_attrs[k_attr_fixed_params] = {{"x", x}};
  return t;
}

// Trial `original` re-measured by `values` as tune stores it (tuner/judge/reruns.h): each re-run
// PRUNED with its value in a user attr, the original's value the re-runs' median and its own run
// kept in search_value. The re-runs are numbered from `next`.
void remeasured(search::VectorStudyView& v, int original, std::vector<double> values, int& next) {
  auto& ts = v.mutable_trials();
  const double x = ts.at(static_cast<std::size_t>(original)).params.at("x");
  for (double value : values) {
    auto t = trial(next++, x, std::nullopt);
    t.state = TrialState::pruned;
    t.system_attrs = {{k_attr_fixed_params, {{"x", x}}}, {k_attr_rerun_of, original}};
    t.user_attrs[k_attr_rerun_value] = value;
    ts.push_back(std::move(t));
  }
  auto& o = ts.at(static_cast<std::size_t>(original));
  o.user_attrs[k_attr_search_value] = *o.value;
  std::sort(values.begin(), values.end());
  o.value = values[values.size() / 2];
}

// The baseline #0 (x=10) and the best #2 (x=3) re-run three times each with overlapping values:
// the best's lead (1.01x) is within the noise. #1 (x=7) ran once, slower.
search::VectorStudyView within_the_noise() {
  search::VectorStudyView v(Direction::minimize);
  auto& ts = v.mutable_trials();
  ts.push_back(trial(0, 10, 10.2, true));
  ts.push_back(trial(1, 7, 10.6));
  ts.push_back(trial(2, 3, 9.1));  // a lucky search run: its re-runs measure 9.9
  int next = 3;
  remeasured(v, 0, {10.0, 10.4, 9.8}, next);
  remeasured(v, 2, {9.9, 10.3, 9.6}, next);
  return v;
}

// The same baseline, and a best #2 clearly faster: 8 s against 10 s, re-runs within 1%.
search::VectorStudyView beyond_the_noise() {
  search::VectorStudyView v(Direction::minimize);
  auto& ts = v.mutable_trials();
  ts.push_back(trial(0, 10, 10.2, true));
  ts.push_back(trial(1, 7, 10.6));
  ts.push_back(trial(2, 3, 7.5));
  int next = 3;
  remeasured(v, 0, {10.0, 10.1, 9.9}, next);
  remeasured(v, 2, {8.0, 8.05, 7.95}, next);
  return v;
}

TEST(ExportChoice, ABestWithinTheNoiseGivesWayToTheBaseline) {
  const auto v = within_the_noise();
  // The report's own verdict on this study, which the export must follow.
  const auto report = build_report(v, "s", {{"x", k_x}}, {.importance = false});
  ASSERT_TRUE(report.best && report.speedup);
  EXPECT_EQ(report.best->number, 2);
  EXPECT_EQ(report.speedup->verdict, NoiseVerdict::within);

  const auto c = choose_export_trial(v, "s", std::nullopt);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_NE(c->trial, nullptr);
  EXPECT_EQ(c->trial->number, 0);
  EXPECT_EQ(c->trial->params, v.trials()[0].params) << "the baseline's setting";
  EXPECT_EQ(c->warning,
            "the best (trial 2, 1.010x the baseline) is within the noise of the baseline: "
            "exporting the baseline (trial 0); pass --trial 2 to export the best anyway");
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_TRUE(c->notes[0].starts_with(
      "The baseline, not the best: the best, trial #2, against it: 1.010x, 95% CI [0."))
      << c->notes[0];
  EXPECT_TRUE(c->notes[0].contains("(bootstrap): within the noise, not shown to be better"))
      << c->notes[0];
  // The baseline's value: the median of its three re-runs, not its own run's 10.2.
  ASSERT_TRUE(c->value);
  EXPECT_DOUBLE_EQ(c->value->value, 10.0);
  EXPECT_EQ(c->value->runs, 3);
  EXPECT_EQ(measured_text(*c, "elapsed_time"), "elapsed_time = 10 (median of 3 runs: its re-runs)");
}

TEST(ExportChoice, ABestBeyondTheNoiseIsWrittenWithItsMedian) {
  const auto v = beyond_the_noise();
  const auto report = build_report(v, "s", {{"x", k_x}}, {.importance = false});
  ASSERT_TRUE(report.speedup);
  EXPECT_EQ(report.speedup->verdict, NoiseVerdict::beyond);

  const auto c = choose_export_trial(v, "s", std::nullopt);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->trial->number, 2);
  EXPECT_EQ(c->warning, "") << "nothing to warn about";
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_TRUE(c->notes[0].starts_with(
      "The best trial: against the baseline (trial #0) 1.250x, 95% CI [1."))
      << c->notes[0];
  EXPECT_TRUE(c->notes[0].ends_with("(bootstrap): beyond the noise.")) << c->notes[0];
  // 8, the median of its re-runs: never its search run's 7.5.
  EXPECT_EQ(measured_text(*c, "elapsed_time"), "elapsed_time = 8 (median of 3 runs: its re-runs)");
}

// A lucky single run of a setting that re-runs measured slower wins the ranking: it is written
// (it is the best, and beyond the noise), but the value named is the setting's median over
// every run of it, 8, not the one run's 7.
TEST(ExportChoice, TheValueIsTheSettingsMedianNeverOneLuckyRun) {
  auto v = beyond_the_noise();
  v.mutable_trials().push_back(trial(9, 3, 7.0));  // #2's setting again, once
  const auto c = choose_export_trial(v, "s", std::nullopt);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->trial->number, 9);
  ASSERT_TRUE(c->value);
  EXPECT_EQ(c->value->runs, 4);
  EXPECT_EQ(c->value->reruns, 3);
  EXPECT_EQ(c->value->trials, (std::vector<int>{2, 9}));
  EXPECT_DOUBLE_EQ(c->value->value, (7.95 + 8.0) / 2);
  EXPECT_EQ(measured_text(*c, "elapsed_time"),
            "elapsed_time = 7.975 (median of 4 runs of this setting, by trials #2, #9 (3 of them "
            "re-runs))");
}

TEST(ExportChoice, TrialNIsWrittenAndSaysWhenItIsNotShownToBeatTheBaseline) {
  const auto v = within_the_noise();
  auto c = choose_export_trial(v, "s", 2);  // the best, within the noise
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->trial->number, 2);
  EXPECT_EQ(c->warning,
            "trial 2 (1.010x the baseline) is within the noise of the baseline (trial 0): "
            "exporting it as asked");
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_TRUE(c->notes[0].starts_with(
      "Trial #2 (--trial), not shown to beat the baseline (trial #0): 1.010x, 95% CI ["))
      << c->notes[0];
  EXPECT_EQ(measured_text(*c, ""), "value = 9.9 (median of 3 runs: its re-runs)");

  c = choose_export_trial(v, "s", 1);  // slower than the baseline, one run
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->trial->number, 1);
  EXPECT_TRUE(c->warning.starts_with("trial 1 (0.943x the baseline) ")) << c->warning;
  EXPECT_EQ(measured_text(*c, "t"), "t = 10.6 (one run, not re-measured)");

  c = choose_export_trial(v, "s", 0);  // the baseline itself
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->warning, "");
  EXPECT_EQ(c->notes,
            std::vector<std::string>{
                "Trial #0 (--trial), the baseline: the setting the study started from."});

  c = choose_export_trial(beyond_the_noise(), "s", 2);  // shown better: no warning
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->warning, "");
  EXPECT_TRUE(c->notes[0].starts_with("Trial #2 (--trial): against the baseline (trial #0) 1.250x"))
      << c->notes[0];
}

TEST(ExportChoice, ATrialThatIsMissingUnfinishedOrAReRunIsBadInput) {
  auto v = within_the_noise();
  v.mutable_trials().push_back(trial(9, 5, std::nullopt));  // failed
  const auto bad = [&](int n) {
    const auto c = choose_export_trial(v, "s", n);
    EXPECT_FALSE(c) << n;
    if (c) return std::string();
    EXPECT_EQ(c.error().kind, ExportChoiceError::Kind::bad_input) << n;
    return c.error().message;
  };
  EXPECT_EQ(bad(99), "--trial 99: no such trial in study 's' (10 trials)");
  EXPECT_EQ(bad(9),
            "--trial 9: trial #9 did not complete (FAIL); pick a COMPLETE trial (`tune trials "
            "STUDY` lists them)");
  EXPECT_EQ(bad(3),
            "--trial 3: trial #3 is a re-run of trial #0 (its run counts toward #0's value); "
            "export --trial 0");

  const search::VectorStudyView empty(Direction::minimize);
  const auto none = choose_export_trial(empty, "s", std::nullopt);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ExportChoiceError::Kind::nothing_yet);
  EXPECT_EQ(none.error().message, "study 's' has no completed trial to export yet");
}

// Leads that could not be judged: the best is written, and stderr and the header say why.
TEST(ExportChoice, ABestNotComparedOrNotJudgedIsWrittenWithAWarning) {
  search::VectorStudyView single(Direction::minimize);  // single runs: the noise is unknown
  single.mutable_trials() = {trial(0, 10, 10.0, true), trial(1, 3, 8.0)};
  auto c = choose_export_trial(single, "s", std::nullopt);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->trial->number, 1);
  EXPECT_EQ(c->warning,
            "the best (trial 1, 1.250x the baseline) was not judged against the noise, which is "
            "unknown, so it is not shown to beat the baseline (trial 0): exporting it");
  EXPECT_EQ(c->notes, std::vector<std::string>{
                          "The best trial, not shown to beat the baseline (trial #0): 1.250x: not "
                          "judged against the noise, which is unknown. `tune confirm STUDY` "
                          "re-measures both."});

  search::VectorStudyView no_baseline(Direction::minimize);
  no_baseline.mutable_trials() = {trial(0, 10, 10.0), trial(1, 3, 8.0)};
  c = choose_export_trial(no_baseline, "s", std::nullopt);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->trial->number, 1);
  EXPECT_EQ(c->warning,
            "the best (trial 1) was not compared with a baseline: the study enqueued no baseline "
            "(add `enqueue:` with the defaults); exporting it");

  search::VectorStudyView failed_baseline(Direction::minimize);
  failed_baseline.mutable_trials() = {trial(0, 10, std::nullopt, true), trial(1, 3, 8.0)};
  c = choose_export_trial(failed_baseline, "s", std::nullopt);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->warning,
            "the best (trial 1) was not compared with a baseline: the baseline trial #0 did not "
            "complete (FAIL); the study's next `tune` run runs it again; exporting it");
}

// The notes open the header, after its first line, as comment lines of at most 96 characters.
TEST(ExportChoice, TheHeaderCarriesTheNotes) {
  const auto v = within_the_noise();
  const auto c = choose_export_trial(v, "s", std::nullopt);
  ASSERT_TRUE(c) << c.error().message;
  auto spec = parse_study_spec(
      "name: s\ncommand: [prog, '--x={x}']\nparams:\n  x: {type: float, low: 1, high: 20}\n",
      "/studies/s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  ExportOptions o;
  o.measured = measured_text(*c, "elapsed_time");
  o.notes = c->notes;
  for (const auto format : {ExportFormat::bash, ExportFormat::slurm, ExportFormat::env}) {
    const auto text = render_export(*spec, *c->trial, format, o);
    ASSERT_TRUE(text) << text.error();
    const auto lines = test_text::lines_of(*text);
    const auto first = std::find(lines.begin(), lines.end(),
                                 "# Exported by `tune export` from study 's', trial #0.");
    ASSERT_NE(first, lines.end()) << *text;
    ASSERT_LT(first + 3, lines.end());
    EXPECT_TRUE(first[1].starts_with("# The baseline, not the best: the best, trial #2,"))
        << *text;
    std::string note;
    auto it = first + 1;
    for (; it != lines.end() && !it->starts_with("# Measured: "); ++it) {
      EXPECT_LE(it->size(), 96u) << *it;
      note += it->substr(1);
    }
    EXPECT_EQ(note, " " + c->notes[0]);
    ASSERT_NE(it, lines.end());
    EXPECT_EQ(*it, "# Measured: elapsed_time = 10 (median of 3 runs: its re-runs)");
    EXPECT_TRUE(text->contains("--x=10")) << *text;
  }
}

}  // namespace
}  // namespace tune::tuner
