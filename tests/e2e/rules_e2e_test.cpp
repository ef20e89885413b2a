// Rule baselines end to end (issue 38 point 1): a study with `rules:` runs the rules' settings
// right after its own `enqueue:` entries, labelled, and `tune`, `tune best`, `tune confirm` and
// every `tune report` format state the best's speedup over the best rule with its interval. Each
// trial `cat`s a value the test wrote for its number, so the values are known: #0 the command
// as run (OMP_NUM_THREADS unset), #1 the study's own second entry (the best), #2 Lightning's
// PUs-per-rank threads (cores_per_rank gives the same here). The command is one process: torchrun
// sets OMP_NUM_THREADS only with more than one per node (issue 48), so its rule changes nothing
// and labels #0.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/common/test_support.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class RulesE2E : public test_support::TempDirTest {
 protected:
  RulesE2E() : TempDirTest("tune-rules-e2e-") {}

  std::string write_study(const fs::path& dir, const std::map<int, double>& values) {
    fs::create_directories(dir / "values");
    for (const auto& [n, v] : values)
      std::ofstream(dir / "values" / std::to_string(n)) << "v=" << v << '\n';
    return test_support::write_file(
        dir / "study.yaml", "name: rules\noutput: " + (dir / "out").string() +
                                "\ncommand: [/bin/cat, '{study_dir}/values/{trial_number}']\n"
                                "env: {OMP_NUM_THREADS: '{omp}', X: '{x}'}\n"
                                "direction: minimize\n"
                                "objective: {regex: 'v=([0-9.]+)'}\n"
                                "params:\n  omp: [null, 1, 2]\n  x: [a, b]\n"
                                "enqueue: [{omp: null, x: a}, {omp: 1, x: b}]\n"
                                "rules: [torchrun, lightning, cores_per_rank]\n");
  }
  test_support::CommandOutput tune(std::vector<std::string> args) {
    args.insert(args.begin(), TUNE_BIN);
    return test_support::run_command(args, m_dir, {}, "tune");
  }
  // The three enqueued trials, then `tune confirm --repeats 3 --top 1`: the re-runs #3..#11 go
  // round the baseline #0, the best rule #2 and the best #1, in that order.
  test_support::CommandOutput run_and_confirm(const std::string& study) {
    const auto run = tune({"--trials", "3", study});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const auto confirm = tune({"confirm", study, "--repeats", "3", "--top", "1", "--quiet"});
    EXPECT_EQ(confirm.exit_code, 0) << confirm.err;
    return run;
  }
};

TEST_F(RulesE2E, TheRulesRunFirstAndEveryOutputGivesTheSpeedupOverTheBestRule) {
  ASSERT_GE(std::thread::hardware_concurrency(), 2u)
      << "Lightning's threads reach 2 (omp=2) only with 2 PUs or more";
  const auto study = write_study(m_dir / "beyond", {{0, 15.0},
                                                    {1, 4.2},
                                                    {2, 11.0},
                                                    {3, 15.1},
                                                    {4, 11.1},
                                                    {5, 4.0},
                                                    {6, 14.9},
                                                    {7, 10.9},
                                                    {8, 4.1},
                                                    {9, 15.0},
                                                    {10, 11.0},
                                                    {11, 3.9}});
  const auto run = run_and_confirm(study);
  if (HasFailure()) return;
  // The rules' trials come right after the study's own, each said with what it sets.
  EXPECT_TRUE(run.out.contains(
      "rule baseline, trial 0: torchrun (OMP_NUM_THREADS=1 where unset with more than one process "
      "per node, no binding): changes nothing here: one process per node"))
      << run.out;
  EXPECT_TRUE(run.out.contains(
      "rule baseline, trial 2: lightning (torch threads = CPUs / local ranks = "))
      << run.out;
  EXPECT_TRUE(run.out.contains("rule baseline, trial 2: cores_per_rank (")) << run.out;

  auto json_out = tune({"report", study, "--format", "json"});
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  const auto j = nlohmann::json::parse(json_out.out);
  ASSERT_TRUE(j["best_rule"].is_object()) << j.dump();
  EXPECT_EQ(j["best_rule"]["number"], 2);
  EXPECT_EQ(j["best_rule"]["rules"], nlohmann::json({"lightning", "cores_per_rank"}));
  EXPECT_EQ(j["best"]["number"], 1);
  const auto& s = j["rule_speedup"];
  ASSERT_TRUE(s.is_object()) << j.dump();
  // Medians 11.0 against 4.0.
  EXPECT_NEAR(s["ratio"].get<double>(), 2.75, 0.01) << s.dump();
  ASSERT_TRUE(s["ci95"].is_array()) << s.dump();
  EXPECT_LT(s["ci95"][0].get<double>(), 2.75);
  EXPECT_GT(s["ci95"][1].get<double>(), 2.75);
  EXPECT_EQ(s["verdict"], "beyond") << s.dump();
  EXPECT_EQ(s["basis"], "medians of 3 + 3 re-runs");
  EXPECT_EQ(j["noise"]["over_best_rule"]["other"], 2);
  // Every trial of a rule says which; the baseline is the command as run, not a rule's.
  for (const auto& t : j["trials"]) {
    if (t["number"] == 2) {
      EXPECT_EQ(t["rules"], nlohmann::json({"lightning", "cores_per_rank"}));
    }
    if (t["number"] == 0) {
      EXPECT_EQ(t["baseline"], true);
      EXPECT_EQ(t["rules"], nlohmann::json({"torchrun"}));
    }
  }

  const auto text = tune({"report", study});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(text.out.contains("\nSpeedup over the best rule: 2.750x  95% CI [")) << text.out;
  EXPECT_TRUE(
      text.out.contains("(medians of 3 + 3 re-runs, bootstrap of the ratio of medians): "
                        "beyond the noise\n"))
      << text.out;
  // (", first guess" may follow: the guess from #0's verdict can be #2's setting.)
  EXPECT_TRUE(text.out.contains("[rule lightning, cores_per_rank")) << text.out;
  const auto md = tune({"report", study, "--format", "markdown"});
  EXPECT_TRUE(md.out.contains(
      "## Speedup over the best rule\n\nBest rule: #2 (rule lightning, cores_per_rank)"))
      << md.out;
  const auto html = tune({"report", study, "--format", "html"});
  EXPECT_TRUE(
      html.out.contains("<p id=\"rule-speedup\">Best rule: #2 (rule lightning, cores_per_rank)"))
      << html.out;
  const auto best = tune({"best", study});
  EXPECT_TRUE(
      best.out.contains("best #1 vs best rule #2 (lightning, cores_per_rank): 2.750x, 95% CI ["))
      << best.out;
}

TEST_F(RulesE2E, ABestWithinTheNoiseOfTheRuleIsSaidToBeNoBetter) {
  const auto study = write_study(m_dir / "within", {{0, 15.0},
                                                    {1, 10.2},
                                                    {2, 10.6},
                                                    {3, 15.1},
                                                    {4, 10.4},
                                                    {5, 10.3},
                                                    {6, 14.9},
                                                    {7, 9.9},
                                                    {8, 10.6},
                                                    {9, 15.0},
                                                    {10, 10.8},
                                                    {11, 10.0}});
  run_and_confirm(study);
  if (HasFailure()) return;
  const auto text = tune({"report", study});
  EXPECT_TRUE(
      text.out.contains("not shown to be faster than the best rule; the best rule: "
                        "lightning, cores_per_rank\n"))
      << text.out;
  const auto best = tune({"best", study});
  EXPECT_TRUE(best.out.contains("; not shown to beat rule lightning, cores_per_rank"))
      << best.out;
}

// `tune rules` (issue 48): what each rule sets for a study on this machine, or why it changes
// nothing, without running anything. One process: torchrun's condition (more than one process
// per node) does not hold.
TEST_F(RulesE2E, TuneRulesSaysWhatEachRuleSetsOrWhyItChangesNothing) {
  const auto study = write_study(m_dir / "print", {});
  const auto text = tune({"rules", study});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(text.out.contains(
      "torchrun (OMP_NUM_THREADS=1 where unset with more than one process per node, no binding): "
      "changes nothing here: one process per node"))
      << text.out;
  EXPECT_TRUE(text.out.contains("lightning (torch threads = CPUs / local ranks = ")) << text.out;
  const auto json = tune({"rules", study, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_TRUE(j["entries"].is_array()) << j.dump();
  bool torchrun_as_run = false;
  for (const auto& e : j["entries"])
    for (const auto& r : e["rules"])
      if (r == "torchrun") torchrun_as_run = e["command_as_run"].get<bool>();
  EXPECT_TRUE(torchrun_as_run) << j.dump();
  // Nothing was run or stored.
  EXPECT_FALSE(fs::exists(m_dir / "print" / "out" / "study.db"));
  const auto bad = tune({"rules", (m_dir / "missing.yaml").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
}

}  // namespace
}  // namespace tune::tuner
