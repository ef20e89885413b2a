// The plain summaries: which trial is "best" for `tune best`, the end-of-run block and the
// progress line.
#include <gtest/gtest.h>

#include <sstream>

#include "tuner/run/ranking.h"
#include "tuner/run/summary.h"
#include "tuner/base/trial_attrs.h"

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
  EXPECT_EQ(counts.reruns, 1);
  EXPECT_EQ(counts.fail, 1);
}

TEST(Summary, MaximizeAndEmptyStudies) {
  search::VectorStudyView study(Direction::maximize);
  EXPECT_EQ(best_trial(study), nullptr);
  std::ostringstream out;
  print_best(out, study);
  EXPECT_EQ(out.str(), "best: no completed trial yet\n");
  study.mutable_trials().push_back(complete(0, 5.0));
  study.mutable_trials().push_back(complete(1, 7.0));
  EXPECT_EQ(best_trial(study)->number, 1);
}

}  // namespace
}  // namespace tune::tuner
