// `tune confirm`'s plan and parameters on hand-made studies: the baseline first, then the best
// search trials (re-runs never count as candidates), interleaved round-robin; notes and
// errors when there is no baseline, an unfinished one, or nothing to confirm; and the fixed
// params of a re-run, external values that the study file's space must still accept.
#include <gtest/gtest.h>

#include "tuner/base/trial_attrs.h"
#include "tuner/cli/confirm.h"
#include "tuner/report/report_model.h"

namespace tune::tuner {
namespace {

using search::Direction;
using search::FrozenTrial;
using search::TrialState;

const search::SearchSpace k_space = {
    {"threads", search::IntDistribution{1, 8, false, 1}},
    {"lr", search::FloatDistribution{1e-3, 1.0, true, std::nullopt}},
    {"algo", search::CategoricalDistribution{{std::string("ring"), std::monostate{}}}},
};

FrozenTrial trial(int number, TrialState state, std::optional<double> value,
                  nlohmann::json system = nlohmann::json::object()) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = number;
  t.state = state;
  t.value = value;
  for (const auto& [name, dist] : k_space) t.distributions[name] = dist;
  t.params = {{"threads", 1.0 + number % 8}, {"lr", 0.01}, {"algo", number % 2}};
  t.system_attrs = std::move(system);
  return t;
}

const nlohmann::json k_enqueued = {{k_attr_fixed_params, nlohmann::json::object()}};

// #0 the baseline (10), then #1..#4 with 4, 2, 3, 5, a failed #5 and a re-run of #4 that
// measured 5.5: the re-run is no candidate of its own (maximizing, it would be the best), and #4
// is ranked by it (5.5: a re-measured trial by the median of its re-runs, tuner/judge/ranking.h).
search::VectorStudyView study(Direction direction = Direction::minimize) {
  search::VectorStudyView v(direction);
  auto& ts = v.mutable_trials();
  ts.push_back(trial(0, TrialState::complete, 10.0, k_enqueued));
  for (const double value : {4.0, 2.0, 3.0, 5.0})
    ts.push_back(trial(static_cast<int>(ts.size()), TrialState::complete, value));
  ts.push_back(trial(5, TrialState::fail, std::nullopt));
  ts.push_back(trial(6, TrialState::complete, 5.5,
                     {{k_attr_fixed_params, nlohmann::json::object()}, {k_attr_rerun_of, 4}}));
  return v;
}

TEST(ConfirmPlan, BaselineThenTheBestInterleaved) {
  const auto plan = plan_confirm(study(), 2, 3);
  ASSERT_TRUE(plan.has_value()) << plan.error();
  EXPECT_EQ(plan->originals, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(plan->order, (std::vector<int>{0, 2, 3, 0, 2, 3, 0, 2, 3}));
  EXPECT_EQ(plan->note, "");
}

TEST(ConfirmPlan, MaximizeTakesTheLargestValues) {
  const auto plan = plan_confirm(study(Direction::maximize), 2, 1);
  ASSERT_TRUE(plan.has_value()) << plan.error();
  // #0 (10) is the best but already in as the baseline: the next two are #4 (5.5) and #1 (4).
  EXPECT_EQ(plan->originals, (std::vector<int>{0, 4, 1}));
}

TEST(ConfirmPlan, TopZeroReRunsOnlyTheBaseline) {
  const auto plan = plan_confirm(study(), 0, 2);
  ASSERT_TRUE(plan.has_value()) << plan.error();
  EXPECT_EQ(plan->order, (std::vector<int>{0, 0}));
}

TEST(ConfirmPlan, WithoutABaselineOnlyTheTopWithANote) {
  auto v = study();
  v.mutable_trials()[0].system_attrs = nlohmann::json::object();
  const auto plan = plan_confirm(v, 2, 1);
  ASSERT_TRUE(plan.has_value()) << plan.error();
  EXPECT_EQ(plan->originals, (std::vector<int>{2, 3}));
  EXPECT_NE(plan->note.find("no baseline"), std::string::npos) << plan->note;
}

TEST(ConfirmPlan, AnUnfinishedBaselineIsLeftOutWithANote) {
  auto v = study();
  v.mutable_trials()[0].state = TrialState::waiting;
  v.mutable_trials()[0].value.reset();
  const auto plan = plan_confirm(v, 1, 1);
  ASSERT_TRUE(plan.has_value()) << plan.error();
  EXPECT_EQ(plan->originals, (std::vector<int>{2}));
  EXPECT_EQ(plan->note, "the baseline trial #0 has not run yet; it is left out");
}

std::string plan_error(const search::StudyView& v, int top, int repeats) {
  const auto plan = plan_confirm(v, top, repeats);
  return plan ? std::string("(planned)") : plan.error();
}

TEST(ConfirmPlan, Errors) {
  EXPECT_EQ(plan_error(study(), 2, 0), "--repeats: must be at least 1");
  EXPECT_EQ(plan_error(study(), -1, 1), "--top: must be 0 or more");
  search::VectorStudyView failed(Direction::minimize);
  failed.mutable_trials().push_back(trial(0, TrialState::fail, std::nullopt));
  EXPECT_EQ(plan_error(failed, 3, 5),
            "nothing to confirm: the study has no completed trial and no baseline");
}

TEST(ConfirmFixedParams, ExternalValuesOfEveryParameter) {
  auto t = trial(3, TrialState::complete, 1.0);
  t.params["algo"] = 1;  // the null choice
  const auto fixed = fixed_params_of(t, k_space);
  ASSERT_TRUE(fixed.has_value()) << fixed.error();
  EXPECT_EQ(*fixed, (nlohmann::json{{"threads", 4}, {"lr", 0.01}, {"algo", nullptr}}));
  EXPECT_TRUE((*fixed)["threads"].is_number_integer());
}

TEST(ConfirmFixedParams, AMissingParameterNamesTrialAndParameter) {
  auto t = trial(3, TrialState::complete, 1.0);
  t.params.erase("lr");
  const auto fixed = fixed_params_of(t, k_space);
  ASSERT_FALSE(fixed.has_value());
  EXPECT_NE(fixed.error().find("trial #3 has no value for parameter 'lr'"), std::string::npos)
      << fixed.error();
}

TEST(ConfirmFixedParams, AValueTheChangedStudyFileRejectsIsAnError) {
  // The trial ran with threads = 4; the study file now allows 5..8 only.
  auto space = k_space;
  space[0].second = search::IntDistribution{5, 8, false, 1};
  const auto fixed = fixed_params_of(trial(3, TrialState::complete, 1.0), space);
  ASSERT_FALSE(fixed.has_value());
  EXPECT_NE(fixed.error().find("trial #3: parameter 'threads'"), std::string::npos)
      << fixed.error();
  EXPECT_NE(fixed.error().find("the study file changed"), std::string::npos) << fixed.error();
}

}  // namespace
}  // namespace tune::tuner
