// `tune guess` (issue 39 point 1; bench/ replays recorded grids through it): the guess from a
// recorded verdict file as one JSON object, and each kind of bad input named, with exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "probes/topology.h"
#include "tests/common/test_support.h"
#include "tuner/judge/first_guess.h"
#include "tuner/launch/rule_machine.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class GuessE2E : public test_support::TempDirTest {
 protected:
  GuessE2E() : TempDirTest("tune-guess-e2e-") {}

  std::string study(const std::string& baseline) {
    return test_support::write_file(
        m_dir / "s.yaml",
        "name: g\ndirection: maximize\noutput: " + (m_dir / "out").string() +
            "\nlaunch: {mpirun: {n: 2, bind_to: '{bind_to}'}}\n"
            "command: [/usr/bin/python3, train.py, '--threads={threads}', '--workers={workers}']\n"
            "knobs:\n  threads: {knob: torch_intra_op_threads}\n"
            "  workers: {knob: torch_dataloader_workers}\n"
            "objective: {regex: 'img/s: ([0-9.]+)'}\n"
            "params:\n  threads: [1, 2]\n  workers: [0, 1, 2]\n  bind_to: [null, none]\n"
            "enqueue: [" +
            baseline + "]\n");
  }
  static std::string data(const std::string& name) {
    return std::string(TUNE_SOURCE_DIR) + "/tests/tuner/judge/data/" + name;
  }
  test_support::CommandOutput tune(std::vector<std::string> args) {
    args.insert(args.begin(), TUNE_BIN);
    return test_support::run_command(args, m_dir, {}, "tune");
  }
};

TEST_F(GuessE2E, JsonFromAVerdictFileIsTheModelsGuess) {
  const auto s = study("{threads: 2, workers: 2, bind_to: null}");
  const auto verdict = data("pytorch_opencv_contended_verdict.json");
  const auto r = tune({"guess", s, "--verdict", verdict, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // This machine's cores decide the budget: the same model in-process gives the same object.
  const auto spec = *load_study_spec(s);
  const auto topo = probes::read_cpu_topology();
  const auto want = first_guess(spec, rule_machine(spec, topo ? &*topo : nullptr),
                                nlohmann::json::parse(test_support::read_file(verdict)),
                                *baseline_params(spec), std::nullopt);
  ASSERT_TRUE(want) << want.error();
  EXPECT_EQ(j, first_guess_json(*want));
  EXPECT_EQ(j["predicted"], nlohmann::json()) << "no stored baseline value";
  EXPECT_EQ(j.size(), 4u);
  // Without --json: readable lines.
  const auto text = tune({"guess", s, "--verdict", verdict});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(text.out.starts_with("first guess: ")) << text.out;
  EXPECT_TRUE(text.out.contains("  contention: the ranks' threads waited 61%")) << text.out;
}

TEST_F(GuessE2E, AnUncontendedVerdictChangesNothing) {
  const auto s = study("{threads: 1, workers: 0, bind_to: null}");
  const auto r =
      tune({"guess", s, "--verdict", data("pytorch_opencv_uncontended_verdict.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["change"], false);
  EXPECT_EQ(j["params"], nlohmann::json({{"threads", 1}, {"workers", 0}, {"bind_to", nullptr}}));
}

TEST_F(GuessE2E, BadInputIsNamedWithExitTwo) {
  const auto s = study("{threads: 2, workers: 2, bind_to: null}");
  const auto missing = tune({"guess", s, "--verdict", (m_dir / "nope.json").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "tune: error: --verdict " + (m_dir / "nope.json").string() +
                             ": cannot read the file\n");
  const auto bad = test_support::write_file(m_dir / "bad.json", "{not json");
  const auto not_json = tune({"guess", s, "--verdict", bad});
  EXPECT_EQ(not_json.exit_code, 2);
  EXPECT_EQ(not_json.err,
            "tune: error: --verdict " + bad + ": not JSON (expected a probe_verdict object)\n");
  const auto empty = test_support::write_file(m_dir / "empty.json", "{}");
  const auto no_duty = tune({"guess", s, "--verdict", empty});
  EXPECT_EQ(no_duty.exit_code, 2);
  EXPECT_TRUE(no_duty.err.contains("probe_verdict: no `duty_cycles`")) << no_duty.err;
  // No database yet: no baseline trial to read.
  const auto no_study = tune({"guess", s});
  EXPECT_EQ(no_study.exit_code, 2) << no_study.err;
  const auto no_file = tune({"guess", (m_dir / "missing.yaml").string()});
  EXPECT_EQ(no_file.exit_code, 2) << no_file.err;
}

TEST_F(GuessE2E, AStoredBaselineWithoutAVerdictIsNamed) {
  // /bin/echo as the program: the baseline runs without probes (no verdict is stored).
  const auto s = test_support::write_file(
      m_dir / "e.yaml",
      "name: e\noutput: " + (m_dir / "eout").string() +
          "\ncommand: [/bin/echo, 'v=1', '{x}']\nobjective: {regex: 'v=([0-9])'}\n"
          "params:\n  x: [a, b]\nenqueue: [{x: a}]\nprobes: {enabled: false}\n"
          "load: off\n");
  ASSERT_EQ(tune({"--trials", "1", "--quiet", s}).exit_code, 0);
  const auto r = tune({"guess", s});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "tune: error: trial 0 (the baseline) of study 'e' has no probe_verdict: it has not run "
            "with the probes; give --verdict FILE\n");
}

}  // namespace
}  // namespace tune::tuner
