// The report owns up to noise (issue 26): every format's noise section, the speedup with its
// interval and verdict, and the importance shares with theirs, on the issue's own case (six
// single runs within 6% of each other), once with the noise unknown (no setting measured twice)
// and once measured (the same setting 20% apart), and on a study whose settings the re-runs tell
// apart. Reporter output is checked line by line.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/tuner/support/text_lines.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/summary.h"
#include "tuner/report/report.h"

namespace tune::tuner {
namespace {

using search::Direction;
using search::FrozenTrial;
using search::TrialState;
using test_text::lines_of;

const search::SearchSpace k_space = {
    {"bind_to", search::CategoricalDistribution{{std::string("none"), std::string("core")}}},
    {"threads",
     search::CategoricalDistribution{{std::int64_t{1}, std::int64_t{2}, std::int64_t{4}}}},
};

FrozenTrial trial(int number, double value, int bind, int threads,
                  nlohmann::json system = nlohmann::json::object()) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = number + 1;
  t.state = TrialState::complete;
  t.value = value;
  for (const auto& [name, dist] : k_space) t.distributions[name] = dist;
  t.params = {{"bind_to", bind}, {"threads", threads}};
  t.system_attrs = std::move(system);
  t.user_attrs = {{k_attr_wall_time, value}};
  return t;
}

FrozenTrial rerun(int number, int of, double value, int bind, int threads) {
  auto t = trial(number, value, bind, threads,
                 {{k_attr_fixed_params, nlohmann::json::object()}, {k_attr_rerun_of, of}});
  t.state = TrialState::pruned;
  t.value.reset();
  t.user_attrs[k_attr_rerun_value] = value;
  return t;
}

// The six single runs of wall time, all within 6%: baseline #0 8 s, best #3 7.715 s.
search::VectorStudyView six_single_runs() {
  search::VectorStudyView v(Direction::minimize);
  v.mutable_trials() = {trial(0, 8.0, 0, 2, {{k_attr_fixed_params, {{"bind_to", "none"}}}}),
                        trial(1, 7.80, 1, 0),
                        trial(2, 7.95, 0, 1),
                        trial(3, 7.715, 1, 1),
                        trial(4, 8.10, 0, 0),
                        trial(5, 8.17, 1, 2)};
  return v;
}

// The same, with #3's setting measured again 20% slower (7.69 s and 9.25 s in the issue).
search::VectorStudyView six_settings_measured() {
  auto v = six_single_runs();
  v.mutable_trials().push_back(trial(6, 9.25, 1, 1));
  return v;
}

// Settings re-run 3 times each and far apart: told apart.
search::VectorStudyView told_apart() {
  search::VectorStudyView v(Direction::minimize);
  auto& ts = v.mutable_trials();
  ts = {trial(0, 10.0, 0, 2, {{k_attr_fixed_params, {{"bind_to", "none"}}}}), trial(1, 5.0, 1, 0),
        trial(2, 3.0, 1, 1), trial(3, 6.0, 0, 0)};
  int number = 4;
  for (const auto& [of, values] : std::vector<std::pair<int, std::vector<double>>>{
           {0, {10.0, 10.4, 9.7}}, {1, {5.0, 5.1, 4.9}}, {2, {3.0, 3.05, 2.95}}})
    for (double value : values) {
      const auto& original = ts[static_cast<std::size_t>(of)];
      ts.push_back(rerun(number++, of, value, static_cast<int>(original.params.at("bind_to")),
                         static_cast<int>(original.params.at("threads"))));
    }
  return v;
}

ReportData report_of(const search::StudyView& v) {
  auto d = build_report(v, "issue26", k_space);
  d.objective = "wall_time";
  return d;
}

std::string render(const std::string& format, const ReportData& data) {
  auto reporter = format == "html" ? make_html_reporter("/* chart.js */") : *make_reporter(format);
  std::ostringstream out;
  reporter->write(out, data);
  return out.str();
}

// The lines after `heading` up to the next blank line.
std::vector<std::string> section(const std::vector<std::string>& lines,
                                 const std::string& heading) {
  auto it = std::find(lines.begin(), lines.end(), heading);
  EXPECT_NE(it, lines.end()) << heading;
  std::vector<std::string> out;
  if (it == lines.end()) return out;
  for (++it; it != lines.end() && !it->empty(); ++it) out.push_back(*it);
  return out;
}

const std::string k_unknown =
    "one run's noise is unknown: no setting was measured twice and no "
    "trial carries its own interval";
const std::string k_measure =
    "measure the noise: `tune confirm STUDY --repeats 5` re-runs the baseline and the top 3 "
    "trials 5 times each, or `incumbent_repeats: 3` in the study file re-runs each new best "
    "during the search";

// No setting measured twice: the report says the noise is unknown and how to measure it; the
// speedup is not announced bare, and the importance shares come with the caveat first.
TEST(ReportNoise, SixSingleRunsSayTheNoiseIsUnknownInText) {
  const auto d = report_of(six_single_runs());
  const auto lines = lines_of(render("text", d));
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "Speedup over baseline: 1.037x (single runs); not judged against the noise, "
                      "which is unknown: measure it with `tune confirm STUDY --repeats 5`"),
            lines.end());
  EXPECT_EQ(std::find(lines.begin(), lines.end(), "Speedup over baseline: 1.037x (single runs)"),
            lines.end());
  EXPECT_EQ(section(lines, "Noise"),
            (std::vector<std::string>{
                "  " + k_unknown,
                "  best #3 vs baseline #0: 1.037x: not judged against the noise, which is unknown",
                "  best #3 vs runner-up #1: 1.011x: not judged against the noise, which is unknown",
                "  " + k_measure}));
  const auto importance = section(
      lines,
      "Parameter importance (fANOVA over 6 completed trials; 90% intervals over 20 forests fit "
      "to bootstrap resamples)");
  ASSERT_EQ(importance.size(), 3u);
  EXPECT_EQ(importance[0],
            "  the noise is unknown (see Noise): these shares may rank parameters by noise");
  for (int i = 1; i <= 2; ++i) {
    EXPECT_TRUE(importance[static_cast<std::size_t>(i)].find(" [") != std::string::npos)
        << "a share without its interval: " << importance[static_cast<std::size_t>(i)];
  }
  EXPECT_EQ(d.importance_verdict, NoiseVerdict::unknown);
  ASSERT_TRUE(d.speedup);
  EXPECT_FALSE(d.speedup->ci_low);
  EXPECT_EQ(d.speedup->verdict, NoiseVerdict::unknown);
}

// The same setting measured twice, 20% apart: the six settings are within the noise. Every
// format says so; none announces the speedup as one or ranks the parameters.
TEST(ReportNoise, SettingsWithinTheNoiseInText) {
  const auto d = report_of(six_settings_measured());
  const auto lines = lines_of(render("text", d));
  const auto speedup = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.starts_with("Speedup over baseline: ");
  });
  ASSERT_NE(speedup, lines.end());
  EXPECT_TRUE(speedup->starts_with("Speedup over baseline: 1.037x  95% CI [0.")) << *speedup;
  EXPECT_TRUE(speedup->ends_with(
      " (single runs, from the noise of one run); within the noise: not shown to be faster than "
      "the baseline"))
      << *speedup;
  const auto noise = section(lines, "Noise");
  ASSERT_EQ(noise.size(), 4u);
  EXPECT_EQ(noise[0],
            "  one run varies by 12.8% (the standard deviation of 1 setting measured 2 times each, "
            "1 degree of freedom)");
  EXPECT_TRUE(noise[1].starts_with("  best #3 vs baseline #0: 1.037x, 95% CI [0.")) << noise[1];
  EXPECT_TRUE(noise[1].ends_with(" (noise model): within the noise, not shown to be better"));
  EXPECT_TRUE(noise[2].starts_with("  best #3 vs runner-up #1: 1.011x, 95% CI [0.")) << noise[2];
  EXPECT_TRUE(
      noise[3].starts_with("  the study cannot tell its 6 settings apart: they differ no "
                           "more than the noise of one run makes them (p = "))
      << noise[3];
  // The importance heading, the caveat, and no share after it.
  EXPECT_EQ(section(lines,
                    "Parameter importance (fANOVA over 7 completed trials; 90% intervals over 20 "
                    "forests fit to bootstrap resamples)"),
            (std::vector<std::string>{"  no ranking: the study cannot tell its settings apart (see "
                                      "Noise), so the shares would only split noise between the "
                                      "parameters"}));
  EXPECT_EQ(d.importance_verdict, NoiseVerdict::within);
  EXPECT_FALSE(d.importance.empty()) << "computed, kept in JSON, not ranked";
  // The best trial and the top table say the order is by value only.
  const std::string caveat =
      "  first by value only: the settings are within the noise of each other (see Noise)";
  const auto chosen = std::find(lines.begin(), lines.end(), "  chosen by: best single run");
  ASSERT_NE(chosen, lines.end());
  EXPECT_EQ(*(chosen + 1), caveat);
  const auto top = std::find(lines.begin(), lines.end(), "Top 7 trials");
  ASSERT_NE(top, lines.end());
  EXPECT_EQ(*(top + 1), caveat);
  EXPECT_TRUE((top + 2)->starts_with("  rank  trial")) << *(top + 2);
}

TEST(ReportNoise, SettingsWithinTheNoiseInMarkdown) {
  const auto d = report_of(six_settings_measured());
  const auto lines = lines_of(render("markdown", d));
  const auto noise = section(lines, "## Noise");
  EXPECT_TRUE(noise.empty()) << "a blank line after the heading";
  const auto heading = std::find(lines.begin(), lines.end(), "## Noise");
  ASSERT_NE(heading, lines.end());
  const auto bullets = section(std::vector<std::string>(heading + 1, lines.end()), "");
  ASSERT_EQ(bullets.size(), 4u);
  EXPECT_EQ(bullets[0],
            "- one run varies by 12.8% (the standard deviation of 1 setting measured 2 times each, "
            "1 degree of freedom)");
  EXPECT_TRUE(bullets[1].starts_with("- best #3 vs baseline #0: 1.037x, 95% CI [0."));
  EXPECT_TRUE(bullets[3].starts_with("- the study cannot tell its 6 settings apart"));
  EXPECT_TRUE(bullets[3].ends_with("`tune confirm STUDY --top 3 --repeats 5`"));
  const auto speedup = std::find_if(lines.begin(), lines.end(),
                                    [](const std::string& l) { return l.starts_with("**1.037x"); });
  ASSERT_NE(speedup, lines.end());
  EXPECT_NE(speedup->find("within the noise: not shown to be faster"), std::string::npos);
  const auto imp = std::find(lines.begin(), lines.end(), "## Parameter importance");
  ASSERT_NE(imp, lines.end());
  EXPECT_EQ(*(imp + 4),
            "**no ranking: the study cannot tell its settings apart (see Noise), so the shares "
            "would only split noise between the parameters**");
  EXPECT_EQ(std::find(lines.begin(), lines.end(), "| param | share | interval |"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "**first by value only: the settings are within the noise of each other (see "
                      "Noise)**"),
            lines.end());
}

TEST(ReportNoise, SettingsWithinTheNoiseInHtmlAndJson) {
  const auto d = report_of(six_settings_measured());
  const auto html = render("html", d);
  const auto open = html.find("<h2>Noise</h2>\n<ul id=\"noise\">\n");
  ASSERT_NE(open, std::string::npos);
  const auto close = html.find("</ul>", open);
  const auto items = lines_of(html.substr(open, close - open));
  ASSERT_EQ(items.size(), 6u);  // heading, list, four items
  EXPECT_EQ(items[2],
            "<li>one run varies by 12.8% (the standard deviation of 1 setting measured 2 times "
            "each, 1 degree of freedom)</li>");
  EXPECT_TRUE(items[5].starts_with("<li>the study cannot tell its 6 settings apart"));
  EXPECT_NE(html.find("<p id=\"importance-caveat\"><b>no ranking: the study cannot tell its "
                      "settings apart"),
            std::string::npos);
  EXPECT_EQ(html.find("<canvas id=\"chart-importance\""), std::string::npos)
      << "no chart ranks the parameters";
  EXPECT_NE(html.find("within the noise: not shown to be faster than the baseline</b>"),
            std::string::npos);
  EXPECT_NE(html.find("<p id=\"best-caveat\"><b>first by value only: the settings are within the "
                      "noise of each other (see Noise)</b></p>"),
            std::string::npos);

  const auto j = nlohmann::json::parse(render("json", d));
  EXPECT_EQ(j["schema_version"], 3);
  const auto& n = j["noise"];
  EXPECT_TRUE(n["assessed"].get<bool>());
  EXPECT_TRUE(n["known"].get<bool>());
  EXPECT_EQ(n["scale"], "relative");
  EXPECT_NEAR(n["sigma"].get<double>(), 0.1283, 1e-4);
  EXPECT_EQ(n["df"], 1);
  EXPECT_EQ(n["repeated_settings"], 1);
  EXPECT_EQ(n["settings"], 6);
  EXPECT_EQ(n["settings_verdict"], "within");
  EXPECT_EQ(n["settings_test"]["df1"], 5.0);
  EXPECT_EQ(n["settings_test"]["df2"], 1.0);
  EXPECT_EQ(n["over_baseline"]["best"], 3);
  EXPECT_EQ(n["over_baseline"]["other"], 0);
  EXPECT_EQ(n["over_baseline"]["verdict"], "within");
  EXPECT_EQ(n["over_baseline"]["method"], "noise model");
  EXPECT_EQ(n["over_baseline"]["ci95"].size(), 2u);
  EXPECT_EQ(n["over_runner_up"]["other"], 1);
  EXPECT_EQ(n["lines"].size(), 4u);
  // The same sentences as the text report's noise section.
  std::vector<std::string> text;
  for (const auto& l : section(lines_of(render("text", d)), "Noise")) text.push_back(l.substr(2));
  EXPECT_EQ(n["lines"].get<std::vector<std::string>>(), text);
  EXPECT_EQ(j["speedup"]["verdict"], "within");
  EXPECT_EQ(j["speedup"]["ci_method"], "noise model");
  EXPECT_EQ(j["speedup"]["ci95"].size(), 2u);
  EXPECT_EQ(j["importance_verdict"], "within");
  EXPECT_TRUE(j["importance_caveat"].get<std::string>().starts_with("no ranking:"));
  ASSERT_EQ(j["importance"].size(), 2u);
  for (const auto& s : j["importance"]) {
    EXPECT_LE(s["low"].get<double>(), s["share"].get<double>());
    EXPECT_GE(s["high"].get<double>(), s["share"].get<double>());
  }
}

// No repeat: the JSON says the noise is unknown, with no figure made up.
TEST(ReportNoise, UnknownNoiseInJsonMarkdownAndHtml) {
  const auto d = report_of(six_single_runs());
  const auto j = nlohmann::json::parse(render("json", d));
  EXPECT_FALSE(j["noise"]["known"].get<bool>());
  EXPECT_TRUE(j["noise"]["sigma"].is_null());
  EXPECT_TRUE(j["noise"]["settings_test"].is_null());
  EXPECT_EQ(j["noise"]["settings_verdict"], "unknown");
  EXPECT_EQ(j["noise"]["over_baseline"]["verdict"], "unknown");
  EXPECT_TRUE(j["noise"]["over_baseline"]["ci95"].is_null());
  EXPECT_TRUE(j["speedup"]["ci95"].is_null());
  EXPECT_EQ(j["speedup"]["verdict"], "unknown");
  EXPECT_EQ(j["importance_verdict"], "unknown");
  EXPECT_EQ(j["noise"]["lines"][0], k_unknown);
  EXPECT_EQ(j["noise"]["lines"][3], k_measure);

  const auto md = lines_of(render("markdown", d));
  EXPECT_NE(std::find(md.begin(), md.end(), "- " + k_unknown), md.end());
  EXPECT_NE(std::find(md.begin(), md.end(), "- " + k_measure), md.end());
  EXPECT_NE(std::find(md.begin(), md.end(), "| param | share | interval |"), md.end());
  EXPECT_NE(std::find(md.begin(), md.end(),
                      "**the noise is unknown (see Noise): these shares may rank parameters by "
                      "noise**"),
            md.end());

  const auto html = render("html", d);
  EXPECT_NE(html.find("<li>one run&#39;s noise is unknown: no setting was measured twice and no "
                      "trial carries its own interval</li>"),
            std::string::npos);
  EXPECT_NE(html.find("<canvas id=\"chart-importance\""), std::string::npos);
  EXPECT_NE(html.find("<p id=\"importance-caveat\"><b>the noise is unknown"), std::string::npos);
}

// Re-runs that tell the settings apart: the leads are beyond the noise, the parameters ranked
// with their intervals and no caveat.
TEST(ReportNoise, SettingsToldApartAreRanked) {
  const auto d = report_of(told_apart());
  ASSERT_TRUE(d.speedup);
  EXPECT_EQ(d.speedup->verdict, NoiseVerdict::beyond);
  EXPECT_EQ(d.speedup->ci_method, "bootstrap");
  EXPECT_EQ(d.importance_verdict, NoiseVerdict::beyond);
  EXPECT_TRUE(d.importance_caveat.empty());
  const auto lines = lines_of(render("text", d));
  const auto speed = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.starts_with("Speedup over baseline: 3.333x  95% CI [");
  });
  ASSERT_NE(speed, lines.end());
  EXPECT_TRUE(
      speed->ends_with("(medians of 3 + 3 re-runs, bootstrap of the ratio of medians): beyond the "
                       "noise"))
      << *speed;
  const auto noise = section(lines, "Noise");
  ASSERT_EQ(noise.size(), 4u);
  EXPECT_TRUE(noise[0].starts_with(
      "  one run varies by 2.5% (the standard deviation of 3 settings measured 3 times each, 6 "
      "degrees of freedom)"))
      << noise[0];
  EXPECT_TRUE(noise[1].ends_with("(bootstrap): beyond the noise")) << noise[1];
  EXPECT_TRUE(noise[2].starts_with("  best #2 vs runner-up #1: 1.667x, 95% CI [")) << noise[2];
  EXPECT_EQ(noise[3], "  the 4 settings differ beyond the noise (p < 0.001, F test)");
  const auto html = render("html", d);
  EXPECT_NE(html.find("<canvas id=\"chart-importance\""), std::string::npos);
  EXPECT_EQ(html.find("importance-caveat"), std::string::npos);
}

// The summary at the end of `tune` (and `tune best`) says the same, in lines of 120 columns.
TEST(ReportNoise, TheRunSummaryDoesNotCrownAWinnerUnsaid) {
  std::ostringstream out;
  print_summary(out, "issue26", six_single_runs(), {"wall_time"}, SummaryDigits::live);
  const auto lines = lines_of(out.str());
  for (const auto& l : lines) EXPECT_LE(l.size(), k_live_width) << l;
  const auto noise = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.starts_with("noise: "); });
  ASSERT_NE(noise, lines.end()) << out.str();
  EXPECT_EQ(*noise,
            "noise: one run's noise is unknown: no setting was measured twice and no trial carries "
            "its own interval");
  EXPECT_EQ(*(noise + 1),
            "  best #3 vs baseline #0: 1.037x: not judged against the noise, which is unknown");
  EXPECT_EQ(
      *(noise + 3),
      "  measure the noise: `tune confirm STUDY --repeats 5` re-runs the baseline and the top "
      "3 trials 5 times each, or");
  EXPECT_EQ(*(noise + 4),
            "    `incumbent_repeats: 3` in the study file re-runs each new best during the search");

  std::ostringstream within;
  print_summary(within, "issue26", six_settings_measured(), {"wall_time"}, SummaryDigits::live);
  EXPECT_NE(within.str().find("\n  the study cannot tell its 6 settings apart: they differ no more "
                              "than the noise of one run makes them"),
            std::string::npos)
      << within.str();
}

}  // namespace
}  // namespace tune::tuner
