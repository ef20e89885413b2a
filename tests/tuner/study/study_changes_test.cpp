// Issue 37 point 3: which changes of a study file against its stored trials are refused and
// which go on with a note (tuner/study/study_changes.h), each named at its line and key. The
// real binary on a real database is tests/e2e/study_change_e2e_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tuner/base/trial_attrs.h"
#include "tuner/study/study_changes.h"

namespace tune::tuner {
namespace {

using search::Direction;
using search::FrozenTrial;

StudySpec spec_of(const std::string& yaml) {
  auto spec = parse_study_spec(yaml, "s.yaml");
  EXPECT_TRUE(spec) << spec.error();
  return spec ? *spec : StudySpec{};
}

// Trials run under `yaml`'s space, with these internal values of `name`.
std::vector<FrozenTrial> trials_of(const StudySpec& spec, const std::string& name,
                                   const std::vector<double>& values) {
  std::vector<FrozenTrial> out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    FrozenTrial t;
    t.number = static_cast<int>(i);
    for (const auto& [p, d] : spec.space) {
      t.distributions[p] = d;
      t.params[p] = p == name ? values[i] : 0.0;
    }
    out.push_back(t);
  }
  return out;
}

StudyChanges changes(const std::string& before, const std::string& after,
                     const std::vector<double>& x_values = {1, 4}) {
  const auto was = spec_of(before);
  const auto now = spec_of(after);
  const nlohmann::json attrs = {{k_attr_study_objectives, objectives_identity(was)}};
  return compare_with_stored(now,
                             stored_study_of(was.directions, trials_of(was, "x", x_values), attrs));
}

const std::string k_head = "name: s\ncommand: [p]\nparams:\n";  // params on line 4 on

TEST(StudyChanges, TheSameFileChangesNothing) {
  const auto f = k_head + "  x: {type: int, low: 1, high: 4}\n  c: [a, 2, null]\n";
  const auto c = changes(f, f);
  EXPECT_TRUE(c.errors.empty());
  EXPECT_TRUE(c.notes.empty());
}

TEST(StudyChanges, RangesStepsAndNewParamsAreNotes) {
  const auto x = k_head + "  x: {type: int, low: 1, high: 4}\n";
  auto c = changes(x, k_head + "  x: {type: int, low: 2, high: 3}\n", {1, 2, 4});
  ASSERT_TRUE(c.errors.empty()) << c.errors.front();
  EXPECT_EQ(c.notes, std::vector<std::string>{
                         "s.yaml:4: key 'params.x': int [1, 4] in the study's 3 trials, int [2, "
                         "3] in the file: 2 of them outside the new range stay in the study and "
                         "its report"});
  c = changes(x, k_head + "  x: {type: int, low: 1, high: 4, step: 3}\n  y: [a, b]\n");
  ASSERT_TRUE(c.errors.empty()) << c.errors.front();
  EXPECT_EQ(c.notes, (std::vector<std::string>{
                         "s.yaml:4: key 'params.x': int [1, 4] in the study's 2 trials, int [1, "
                         "4] step 3 in the file (step changed)",
                         "s.yaml:5: key 'params.y': new: the study's earlier trials ran without "
                         "it"}));
}

TEST(StudyChanges, LogTypeChoicesRemovalDirectionAndObjectiveAreErrors) {
  const auto f = k_head + "  x: {type: float, low: 0.1, high: 1}\n  c: [a, b]\n";
  auto first = [](const StudyChanges& c) { return c.errors.empty() ? "" : c.errors.front(); };
  EXPECT_NE(first(changes(f, k_head + "  x: {type: float, low: 0.1, high: 1, log: true}\n  c: "
                                      "[a, b]\n"))
                .find("s.yaml:4: key 'params.x': the study's 2 trials drew it as float [0.1, 1], "
                      "the file now on a log scale: Optuna refuses a changed 'log'"),
            std::string::npos);
  EXPECT_NE(first(changes(f, k_head + "  x: {type: float, low: 0.1, high: 1}\n  c: [b, a]\n"))
                .find("s.yaml:5: key 'params.c': "),
            std::string::npos);
  EXPECT_NE(
      first(changes(f, k_head + "  x: [0.1, 1]\n  c: [a, b]\n"))
          .find(
              "s.yaml:4: key 'params.x': the study's 2 trials drew it as float [0.1, 1], the file "
              "now as categorical ["),
      std::string::npos);
  EXPECT_NE(first(changes(f, k_head + "  c: [a, b]\n"))
                .find("s.yaml:3: key 'params.x': the study's 2 trials set it (float [0.1, 1]); "
                      "the file no longer has it"),
            std::string::npos);
  EXPECT_NE(first(changes(f, "direction: maximize\n" + f))
                .find("s.yaml:1: key 'direction': study 's' was created to minimize; the file "
                      "says maximize"),
            std::string::npos);
  // Another log key, in a list of objectives: named at its own line.
  const auto two = "directions: [minimize, maximize]\nobjective:\n  - {key: a}\n  - {key: b}\n";
  const auto moved = "directions: [minimize, maximize]\nobjective:\n  - {key: a}\n  - {key: c}\n";
  EXPECT_NE(first(changes(two + f, moved + f))
                .find("s.yaml:4: key 'objective[1].key': the study's trials measured "),
            std::string::npos)
      << first(changes(two + f, moved + f));
  // Where the log is may move: what is read from it is the same.
  EXPECT_TRUE(changes(f, "objective: {log: 'other/log'}\n" + f).errors.empty());
}

}  // namespace
}  // namespace tune::tuner
