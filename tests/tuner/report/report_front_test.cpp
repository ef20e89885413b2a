// A multi-objective study in the report and the summaries: the Pareto front (feasible trials,
// re-runs left out) replaces best trial, top table and speedup in every format; the HTML
// draws it as an inline SVG scatter; `tune best` and the progress line name the front.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "tuner/base/trial_attrs.h"
#include "tuner/judge/summary.h"
#include "tuner/report/report.h"

namespace tune::tuner {
namespace {

using search::Direction;
using search::FrozenTrial;
using search::TrialState;

const search::SearchSpace k_space = {
    {"dtype", search::CategoricalDistribution{{std::string("fp32"), std::string("1bit")}}}};

FrozenTrial make(int number, TrialState state, std::vector<double> values, int dtype,
                 nlohmann::json system = nlohmann::json::object()) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = number + 1;
  t.state = state;
  if (!values.empty()) t.value = values.front();
  t.values = std::move(values);
  t.distributions["dtype"] = k_space[0].second;
  t.params["dtype"] = dtype;
  t.system_attrs = std::move(system);
  return t;
}

// Seconds (minimize) against accuracy (maximize): #0 slow and accurate, #1 fast and less so,
// #2 beaten by #0, #3 fastest and best but infeasible, #4 a lucky re-run of #1, #5 failed.
search::VectorStudyView study() {
  search::VectorStudyView v({Direction::minimize, Direction::maximize});
  auto& ts = v.mutable_trials();
  ts.push_back(make(0, TrialState::complete, {10.0, 0.86}, 0));
  ts.push_back(make(1, TrialState::complete, {6.0, 0.81}, 1));
  ts.push_back(make(2, TrialState::complete, {12.0, 0.85}, 0));
  ts.push_back(make(3, TrialState::complete, {1.0, 0.99}, 1, {{k_attr_constraints, {2.0}}}));
  ts.back().constraints = {2.0};
  ts.push_back(make(4, TrialState::complete, {0.5, 0.99}, 1, {{k_attr_rerun_of, 1}}));
  ts.push_back(make(5, TrialState::fail, {}, 0));
  return v;
}

std::string write(const std::string& format, const ReportData& data) {
  auto reporter = format == "html" ? make_html_reporter("/* chart.js */") : *make_reporter(format);
  std::ostringstream out;
  reporter->write(out, data);
  return out.str();
}

TEST(ReportFront, TheFrontReplacesTheBestTrial) {
  const auto v = study();
  ReportOptions options;
  options.importance = false;
  auto data = build_report(v, "mo", k_space, options);
  EXPECT_TRUE(data.multi_objective());
  std::vector<int> front;
  for (const auto& r : data.front) front.push_back(r.number);
  EXPECT_EQ(front, (std::vector{0, 1})) << "no infeasible trial, no re-run, nothing dominated";
  EXPECT_EQ(data.front[1].values, (std::vector{6.0, 0.81}));
  EXPECT_FALSE(data.best);
  EXPECT_TRUE(data.top.empty());
  EXPECT_FALSE(data.speedup);
  EXPECT_EQ(data.objectives, (std::vector<std::string>{"objective 0", "objective 1"}));
  EXPECT_EQ(data.direction, "minimize objective 0, maximize objective 1");

  const auto text = write("text", data);
  EXPECT_NE(text.find("Pareto front (minimize objective 0, maximize objective 1): 2 trials"),
            std::string::npos)
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n +#1 +6 +0\.81 +- +dtype=1bit\n)"))) << text;
  EXPECT_EQ(text.find("Best trial"), std::string::npos);
  EXPECT_EQ(text.find("Top "), std::string::npos);
  // The noise model compares one objective's values: every format says it did not assess them.
  const std::string k_not_assessed =
      "not assessed: the noise model compares the values of one objective";
  EXPECT_NE(text.find("\nNoise\n  " + k_not_assessed + "\n"), std::string::npos) << text;

  const auto md = write("markdown", data);
  EXPECT_NE(md.find("## Pareto front"), std::string::npos);
  EXPECT_NE(md.find("| #0 | 10 | 0.86 | - | dtype=fp32 |"), std::string::npos) << md;
  EXPECT_NE(md.find("\n## Noise\n\n- " + k_not_assessed + "\n"), std::string::npos) << md;

  const auto j = nlohmann::json::parse(write("json", data));
  EXPECT_EQ(j["pareto_front"].size(), 2u);
  EXPECT_EQ(j["pareto_front"][1]["values"], nlohmann::json({6.0, 0.81}));
  EXPECT_EQ(j["directions"], nlohmann::json({"minimize", "maximize"}));
  EXPECT_EQ(j["trials"][3]["values"], nlohmann::json({1.0, 0.99}));
  EXPECT_FALSE(j["noise"]["assessed"].get<bool>());
  EXPECT_EQ(j["noise"]["lines"], nlohmann::json({k_not_assessed}));

  const auto html = write("html", data);
  EXPECT_NE(html.find("<svg id=\"pareto-scatter\""), std::string::npos);
  EXPECT_NE(html.find("<table id=\"front\">"), std::string::npos);
  EXPECT_NE(html.find("<ul id=\"noise\">\n<li>" + k_not_assessed + "</li>"), std::string::npos);
  std::size_t circles = 0, on_front = 0;
  for (auto at = html.find("<circle"); at != std::string::npos; at = html.find("<circle", at + 1))
    ++circles;
  for (auto at = html.find("class=\"front\""); at != std::string::npos;
       at = html.find("class=\"front\"", at + 1))
    ++on_front;
  EXPECT_EQ(circles, 4u) << "the completed search trials; the re-run and the failure are not";
  EXPECT_EQ(on_front, 2u);
  EXPECT_EQ(html.find("<h2>Best trial</h2>"), std::string::npos);
}

// Each objective has its own drivers: here time depends on `threads` only and accuracy on
// `dtype` only. One importance over the first objective would tell the user nothing of accuracy.
TEST(ReportFront, ImportanceIsGivenPerObjective) {
  const search::SearchSpace space = {
      {"threads", search::IntDistribution{1, 8}},
      {"dtype", search::CategoricalDistribution{{std::string("fp32"), std::string("1bit")}}}};
  search::VectorStudyView v({Direction::minimize, Direction::maximize});
  for (int i = 0; i < 32; ++i) {
    const int threads = 1 + i % 8;
    const int dtype = (i / 8) % 2;
    FrozenTrial t = make(i, TrialState::complete,
                         {10.0 / threads, dtype == 0 ? 0.86 : 0.80 + 0.001 * (i % 3)}, dtype);
    t.distributions["threads"] = space[0].second;
    t.params["threads"] = threads;
    v.mutable_trials().push_back(std::move(t));
  }
  auto data = build_report(v, "mo", space, {});
  data.objectives = {"elapsed_time", "accuracy"};
  ASSERT_EQ(data.importance_by_objective.size(), 2u);
  ASSERT_FALSE(data.importance_by_objective[0].shares.empty())
      << data.importance_by_objective[0].note;
  EXPECT_EQ(data.importance_by_objective[0].shares.front().name, "threads");
  EXPECT_EQ(data.importance_by_objective[1].shares.front().name, "dtype");
  EXPECT_GT(data.importance_by_objective[1].shares.front().share, 0.9);

  const auto text = write("text", data);
  EXPECT_NE(text.find("Parameter importance for elapsed_time (fANOVA over 32 completed trials; "
                      "90% intervals over 20 forests fit to bootstrap resamples)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Parameter importance for accuracy ("), std::string::npos) << text;
  const auto md = write("markdown", data);
  EXPECT_NE(md.find("## Parameter importance for accuracy"), std::string::npos) << md;
  const auto j = nlohmann::json::parse(write("json", data));
  ASSERT_EQ(j["importance_by_objective"].size(), 2u);
  EXPECT_EQ(j["importance_by_objective"][1]["objective"], "accuracy");
  EXPECT_EQ(j["importance_by_objective"][1]["importance"][0]["param"], "dtype");
  const auto html = write("html", data);
  EXPECT_NE(html.find("<table id=\"importance-by-objective\">\n<tr><th>param</th><th>"
                      "elapsed_<wbr>time</th><th>accuracy</th></tr>"),
            std::string::npos)
      << html;
}

TEST(ReportFront, BestAndProgressNameTheFront) {
  const auto v = study();
  std::ostringstream best;
  print_best(best, v);
  EXPECT_EQ(best.str(),
            "Pareto front (minimize objective 0, maximize objective 1): 2 trials\n"
            "  #0  values: 10, 0.86  dtype=fp32\n"
            "  #1  values: 6, 0.81  dtype=1bit\n");
  EXPECT_EQ(best_so_far(v), "front #0 #1");
  std::ostringstream trials;
  print_trials(trials, v);
  EXPECT_NE(trials.str().find("6, 0.81"), std::string::npos) << trials.str();
}

}  // namespace
}  // namespace tune::tuner
