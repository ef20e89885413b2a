// Objective parsing: Chainer logs, regexes, constraints and every failure reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/test_support.h"
#include "tuner/measure/objective.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class ObjectiveTest : public test_support::TempDirTest {
 protected:
  ObjectiveTest() : TempDirTest("tune-objective-") {}
  std::string write(const std::string& name, const std::string& text) {
    return test_support::write_file(m_dir / name, text);
  }
  std::string path(const std::string& name) { return (m_dir / name).string(); }
};

TEST_F(ObjectiveTest, LastEntryOfChainerLog) {
  const auto log = write("log",
                         R"([{"iteration": 10, "elapsed_time": 1.5, "main/loss": 2.0},
                             {"iteration": 20, "elapsed_time": 2.75, "main/loss": 1.0}])");
  ObjectiveSpec spec;
  auto r = read_objective(spec, {}, log, "", "");
  ASSERT_TRUE(r) << r.error();
  EXPECT_DOUBLE_EQ(r->value, 2.75);
  EXPECT_EQ(r->entry["iteration"], 20);
}

TEST_F(ObjectiveTest, SeveralObjectivesFromOneLogAndAStream) {
  const auto log = write("log", R"([{"elapsed_time": 3.5, "acc": 0.8, "val/acc": 0.75},
                                    {"elapsed_time": 4.25, "acc": 0.9, "val/acc": 0.86}])");
  const auto out = write("stdout", "gain=1.5\ngain=2.5\n");
  std::vector<ObjectiveSpec> specs(3);
  specs[1].key = "val/acc";
  specs[2].use_regex = true;
  specs[2].regex = "gain=([0-9.]+)";
  ConstraintSpec c;
  c.key = "acc";
  c.min = 0.95;
  auto r = read_objectives(specs, {c}, log, out, "");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->values, (std::vector{4.25, 0.86, 2.5}));
  EXPECT_EQ(r->value, 4.25);
  ASSERT_EQ(r->constraints.size(), 1u);
  EXPECT_NEAR(r->constraints[0], 0.05, 1e-12) << "read from the first objective's entry";

  specs[1].key = "missing";
  auto bad = read_objectives(specs, {}, log, out, "");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().rfind("objective[1]: ", 0), 0u) << bad.error();
  auto one = read_objectives({ObjectiveSpec{}}, {}, log, out, "");
  ASSERT_TRUE(one) << one.error();
  EXPECT_TRUE(one->values.empty()) << "one objective: the single-objective reading";
}

TEST_F(ObjectiveTest, MinAndMaxEntries) {
  const auto log = write("log", R"([{"sps": 5}, {"sps": 9}, {"sps": 7}])");
  ObjectiveSpec spec;
  spec.key = "sps";
  spec.entry = "max";
  EXPECT_DOUBLE_EQ(read_objective(spec, {}, log, "", "")->value, 9);
  spec.entry = "min";
  EXPECT_DOUBLE_EQ(read_objective(spec, {}, log, "", "")->value, 5);
  spec.entry = "first";
  EXPECT_DOUBLE_EQ(read_objective(spec, {}, log, "", "")->value, 5);
}

TEST_F(ObjectiveTest, FailureReasons) {
  ObjectiveSpec spec;
  auto missing = read_objective(spec, {}, path("nope"), "", "");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("was not written"), std::string::npos);

  auto bad = read_objective(spec, {}, write("bad", "[{\"elapsed_time\": "), "", "");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("not valid JSON"), std::string::npos);

  auto notarray = read_objective(spec, {}, write("obj", "{\"elapsed_time\": 1}"), "", "");
  ASSERT_FALSE(notarray);
  EXPECT_NE(notarray.error().find("not a JSON array"), std::string::npos);

  auto empty = read_objective(spec, {}, write("empty", "[]"), "", "");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().find("no entries"), std::string::npos);

  auto nokey = read_objective(spec, {}, write("nokey", "[{\"loss\": 1}]"), "", "");
  ASSERT_FALSE(nokey);
  EXPECT_NE(nokey.error().find("no key 'elapsed_time'"), std::string::npos);

  auto text = read_objective(spec, {}, write("text", "[{\"elapsed_time\": \"fast\"}]"), "", "");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().find("not a number"), std::string::npos);

  // Python's json writes NaN / Infinity (not JSON): a non-finite value, not a broken file.
  auto nan =
      read_objective(spec, {}, write("nan", "[{\"elapsed_time\": NaN, \"s\": \"NaN\"}]"), "", "");
  ASSERT_FALSE(nan);
  EXPECT_NE(nan.error().find("'elapsed_time' is not finite (NaN)"), std::string::npos)
      << nan.error();
  auto inf = read_objective(spec, {}, write("inf", "[{\"elapsed_time\": -Infinity}]"), "", "");
  ASSERT_FALSE(inf);
  EXPECT_NE(inf.error().find("not finite (-Infinity)"), std::string::npos) << inf.error();
  auto quoted = read_objective(
      spec, {}, write("q", "[{\"elapsed_time\": 2, \"note\": \"NaN here\"}]"), "", "");
  ASSERT_TRUE(quoted) << quoted.error();
}

TEST_F(ObjectiveTest, RegexOverStdout) {
  const auto out = write("stdout", "step 1 time: 3.5\nstep 2 time: 2.25\ndone\n");
  ObjectiveSpec spec;
  spec.use_regex = true;
  spec.regex = R"(time: ([0-9.]+))";
  auto r = read_objective(spec, {}, "", out, "");
  ASSERT_TRUE(r) << r.error();
  EXPECT_DOUBLE_EQ(r->value, 2.25);
  spec.regex = "nothing here";
  auto none = read_objective(spec, {}, "", out, "");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("matched nothing"), std::string::npos);
}

TEST_F(ObjectiveTest, ConstraintsFromTheSameEntry) {
  const auto log = write("log", R"([{"elapsed_time": 2, "acc": 0.75, "loss": 0.3}])");
  ObjectiveSpec spec;
  ConstraintSpec min_acc{"acc", 0.8, std::nullopt, 1, std::nullopt};
  ConstraintSpec max_loss{"loss", std::nullopt, 0.5, 2, std::nullopt};
  auto r = read_objective(spec, {min_acc, max_loss}, log, "", "");
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->constraints.size(), 2u);
  EXPECT_NEAR(r->constraints[0], 0.05, 1e-12);  // 0.8 - 0.75 > 0: infeasible
  EXPECT_NEAR(r->constraints[1], -0.2, 1e-12);  // 0.3 - 0.5 <= 0: feasible
}

TEST_F(ObjectiveTest, WallTimeIsTheValueAndTheLogOnlyFeedsConstraints) {
  ObjectiveSpec spec;
  spec.wall_time = true;
  // No log, no stdout: the measured wall time alone is the value.
  auto r = read_objective(spec, {}, path("nope"), "", "", 2.5);
  ASSERT_TRUE(r) << r.error();
  EXPECT_DOUBLE_EQ(r->value, 2.5);
  EXPECT_FALSE(read_objective(spec, {}, "", "", "", 0));  // nothing measured
  const auto log = write("log", R"([{"elapsed_time": 9, "acc": 0.9}])");
  ConstraintSpec min_acc{"acc", 0.8, std::nullopt, 1, std::nullopt};
  auto c = read_objective(spec, {min_acc}, log, "", "", 1.25);
  ASSERT_TRUE(c) << c.error();
  EXPECT_DOUBLE_EQ(c->value, 1.25);  // not the log's elapsed_time
  ASSERT_EQ(c->constraints.size(), 1u);
  EXPECT_NEAR(c->constraints[0], -0.1, 1e-12);
}

TEST(IntermediatePoints, StepAndValuePerEntry) {
  ObjectiveSpec spec;
  auto entries = nlohmann::json::parse(
      R"([{"iteration": 5, "elapsed_time": 0.5}, {"iteration": 10}, {"iteration": 15, "elapsed_time": 1.4}])");
  auto pts = intermediate_points(spec, entries);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].first, 5);
  EXPECT_DOUBLE_EQ(pts[1].second, 1.4);
}

}  // namespace
}  // namespace tune::tuner
