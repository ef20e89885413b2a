// BestTracker (tuner/judge/ranking.h) keeps best_trial() from a study's change log: trial after
// trial, on a recorded history with re-runs, infeasible trials, ties, failures and values that
// are replaced, it names the same best trial as best_trial() over the whole study, and the same
// re-runs as a pass over them.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;
using search::TrialState;

// Trial `number` of a recorded study, as it ends: most COMPLETE with a value from a coarse grid
// (ties), some FAIL, some infeasible (constraints), some re-runs of an earlier trial (PRUNED with
// their measured value in rerun_value, as tune stores them, or COMPLETE as older studies did).
FrozenTrial ended(int number, std::mt19937& rng) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = 100 + number;
  const int pick = static_cast<int>(rng() % 10);
  t.state = pick == 0 ? TrialState::fail : TrialState::complete;
  if (t.state == TrialState::complete) t.value = static_cast<double>(rng() % 40) / 4.0;
  if (pick == 1) t.constraints = {0.5};
  if (pick == 2) t.constraints = {-0.1};
  // Some runs were measured under load (tuner/run/load_check.h): not trusted.
  if (pick == 5 || pick == 6) t.user_attrs[k_attr_measured_under_load] = {{"external_cpus", 1.9}};
  if ((pick == 3 || pick == 4 || pick == 6) && number > 0) {
    t.system_attrs[k_attr_rerun_of] = static_cast<int>(rng() % static_cast<unsigned>(number));
    if (pick == 3) {
      t.state = TrialState::pruned;
      t.user_attrs[k_attr_rerun_value] = *t.value;
      t.value.reset();
    }
  }
  return t;
}

void expect_agrees(BestTracker& tracker, const search::StudyView& study) {
  const FrozenTrial* expected = best_trial(study);
  const FrozenTrial* kept = tracker.best(study);
  ASSERT_EQ(expected == nullptr, kept == nullptr);
  if (expected) {
    EXPECT_EQ(kept->number, expected->number);
  }
  std::set<int> originals;
  for (const auto& r : study.trials())
    if (const auto of = rerun_of(r)) originals.insert(*of);
  for (const auto& t : study.trials()) {
    EXPECT_EQ(tracker.has_reruns(study, t.number), originals.contains(t.number))
        << "trial " << t.number;
  }
}

TEST(BestTracker, ThroughTheChangeLogAgreesWithAPassOverTheStudy) {
  for (const auto direction : {search::Direction::minimize, search::Direction::maximize}) {
    std::mt19937 rng(direction == search::Direction::minimize ? 3 : 4);
    search::VectorStudyView view(direction);
    BestTracker tracker;
    std::vector<FrozenTrial> final;
    for (int n = 0; n < 400; ++n) {
      // Each trial appears RUNNING (or WAITING), then ends; now and then an earlier COMPLETE
      // trial's value is replaced (a re-measured trial's believed value).
      FrozenTrial running;
      running.number = n;
      running.trial_id = 100 + n;
      running.state = rng() % 5 == 0 ? TrialState::waiting : TrialState::running;
      const FrozenTrial end = ended(n, rng);
      if (end.system_attrs.contains(k_attr_rerun_of)) running.system_attrs = end.system_attrs;
      view.add(running);
      expect_agrees(tracker, view);
      view.replace(static_cast<std::size_t>(n), end);
      if (n > 10 && rng() % 8 == 0) {
        const auto k = static_cast<std::size_t>(rng() % static_cast<unsigned>(n));
        FrozenTrial t = view.trials()[k];
        if (t.state == TrialState::complete && t.value) {
          t.value = *t.value + 0.25;
          view.replace(k, t);
        }
      }
      if (n % 5 == 0) expect_agrees(tracker, view);
    }
    expect_agrees(tracker, view);
    // A view without a log (changed in place) is read whole, to the same answer.
    view.mutable_trials()[0].value = -1000.0;
    expect_agrees(tracker, view);
  }
}

FrozenTrial run(int number, double value, bool under_load = false) {
  FrozenTrial t;
  t.number = number;
  t.trial_id = 100 + number;
  t.state = TrialState::complete;
  t.value = value;
  if (under_load) t.user_attrs[k_attr_measured_under_load] = {{"external_cpus", 1.9}};
  return t;
}
FrozenTrial rerun(int number, int of, double value, bool under_load = false) {
  FrozenTrial t = run(number, 0, under_load);
  t.state = TrialState::pruned;
  t.value.reset();
  t.system_attrs[k_attr_rerun_of] = of;
  t.user_attrs[k_attr_rerun_value] = value;
  return t;
}

// Issue 36: a setting measured while other work shared the machine won. Maximising a rate: #1 was
// measured under load and is not ranked; a re-run of it under load does not count either; once
// a quiet re-run stands for it, it is ranked by that.
TEST(Ranking, ATrialMeasuredUnderLoadCountsOnlyThroughAQuietReRun) {
  search::VectorStudyView view(search::Direction::maximize);
  view.add(run(0, 100, /*under_load=*/true));  // the baseline, measured under load
  view.add(run(1, 150));
  view.add(run(2, 300, /*under_load=*/true));
  EXPECT_TRUE(measured_under_load(view.trials()[0]));
  EXPECT_FALSE(measured_under_load(view.trials()[1]));
  BestTracker tracker;
  ASSERT_NE(best_trial(view), nullptr);
  EXPECT_EQ(best_trial(view)->number, 1);
  EXPECT_EQ(tracker.best(view)->number, 1);
  auto ranked = ranked_trials(view);
  ASSERT_EQ(ranked.size(), 1u);  // kept and listed elsewhere, never ranked on their own runs
  view.add(rerun(3, 2, 90, /*under_load=*/true));
  EXPECT_EQ(best_trial(view)->number, 1);
  EXPECT_EQ(tracker.best(view)->number, 1);
  EXPECT_TRUE(rerun_values_of(view, 2).empty());
  // Measured quietly, #2's setting is 120: ranked by that, below #1.
  view.add(rerun(4, 2, 120));
  EXPECT_EQ(rerun_values_of(view, 2), std::vector<double>{120});
  ranked = ranked_trials(view);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0]->number, 1);
  EXPECT_EQ(ranked[1]->number, 2);
  EXPECT_EQ(tracker.best(view)->number, 1);
  // A quiet re-run of the baseline makes it count too.
  view.add(rerun(5, 0, 200));
  EXPECT_EQ(best_trial(view)->number, 0);
  EXPECT_EQ(tracker.best(view)->number, 0);
}

}  // namespace
}  // namespace tune::tuner
