// Issue 39 point 1: the runner enqueues the first guess (tuner/judge/first_guess.h) once, right
// after the baseline ran, from the verdict the probe hooks stored with it. The hooks here hand
// back a recorded verdict (tests/tuner/judge/data: a contended PyTorch DDP run), so the trial
// itself is /bin/echo printing its value.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "probes/topology.h"
#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/first_guess.h"
#include "tuner/launch/rule_machine.h"
#include "tuner/run/runner.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class FirstGuessRun : public test_support::TempDirTest {
 protected:
  FirstGuessRun() : TempDirTest("tune-first-guess-run-") {}

  std::string write_study(const std::string& extra = "") {
    return test_support::write_file(
        m_dir / "s.yaml",
        "name: g\ndirection: maximize\noutput: " + (m_dir / "out").string() +
            "\ncommand: [/bin/echo, 'v=1250', '--threads={threads}', '--workers={workers}']\n"
            "knobs:\n  threads: {knob: torch_intra_op_threads}\n"
            "  workers: {knob: torch_dataloader_workers}\n"
            "objective: {regex: 'v=([0-9.]+)'}\n"
            "params:\n  threads: {type: int, low: 1, high: 64}\n"
            "  workers: {type: int, low: 0, high: 64}\n"
            "enqueue: [{threads: 2, workers: 2}]\nload: off\n" +
            extra);
  }
  // Runs `trials` trials; every trial's verdict is the recorded contended one.
  std::string run(const std::string& study, int trials) {
    auto spec = load_study_spec(study);
    EXPECT_TRUE(spec) << spec.error();
    if (!spec) return {};
    RunOptions options;
    options.trials = trials;
    auto runner = StudyRunner::open(*spec, options);
    EXPECT_TRUE(runner) << runner.error();
    if (!runner) return {};
    TrialHooks hooks;
    hooks.on_end = [this] { return nlohmann::json{{k_attr_probe_verdict, m_verdict}}; };
    (*runner)->set_hooks(std::move(hooks));
    std::ostringstream out;
    auto totals = (*runner)->run(out);
    EXPECT_TRUE(totals) << totals.error();
    return out.str();
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "g");
  }

  nlohmann::json m_verdict = nlohmann::json::parse(
      test_support::read_file(std::string(TUNE_SOURCE_DIR) +
                              "/tests/tuner/judge/data/pytorch_opencv_contended_verdict.json"));
};

TEST_F(FirstGuessRun, TheGuessIsEnqueuedOnceRightAfterTheBaseline) {
  const auto study = write_study();
  const auto out = run(study, 2);
  auto stored = trials();
  ASSERT_EQ(stored.size(), 2u) << out;
  EXPECT_FALSE(stored[0].system_attrs.contains(k_attr_first_guess));
  const auto& guess = stored[1];
  EXPECT_EQ(guess.system_attrs.value(k_attr_first_guess, false), true);
  EXPECT_EQ(guess.state, search::TrialState::complete);
  // What the model gives on this machine (its cores; one rank, no launcher), with the value.
  const auto spec = *load_study_spec(study);
  const auto topo = probes::read_cpu_topology();
  const auto want = first_guess(spec, rule_machine(spec, topo ? &*topo : nullptr), m_verdict,
                                *baseline_params(spec), 1250.0);
  ASSERT_TRUE(want) << want.error();
  ASSERT_TRUE(want->change);
  EXPECT_EQ(trial_params(guess), want->params);
  EXPECT_EQ(guess.system_attrs[k_attr_guess_reasoning], nlohmann::json(want->reasoning));
  EXPECT_NEAR(guess.system_attrs[k_attr_guess_predicted].get<double>(), *want->predicted, 1e-9);
  EXPECT_TRUE(out.contains(
      "first guess, trial 1: " + first_guess_line(*want, *baseline_params(spec)) + "\n"))
      << out;
  // Later runs on the study (the guess's own verdict is contended too) enqueue no other.
  run(study, 2);
  stored = trials();
  int guesses = 0;
  for (const auto& t : stored) guesses += t.system_attrs.value(k_attr_first_guess, false) ? 1 : 0;
  EXPECT_EQ(guesses, 1);
  auto storage = SqliteStorage::open((m_dir / "out" / "study.db").string());
  ASSERT_TRUE(storage) << storage.error();
  const auto study_info = (*storage)->get_study("g");
  ASSERT_TRUE(study_info);
  const auto attrs = (*storage)->get_study_user_attrs(study_info->study_id);
  ASSERT_TRUE(attrs);
  EXPECT_EQ((*attrs)[k_attr_study_first_guess], nlohmann::json({{"from_trial", 0},
                                                                {"change", true},
                                                                {"trial", 1},
                                                                {"reasoning", want->reasoning},
                                                                {"predicted", *want->predicted}}));
}

// A guess that is one of the study's own enqueued settings runs once, as that trial, which
// carries the guess's prediction and reasoning (the report's First guess section reads them).
TEST_F(FirstGuessRun, AGuessAlreadyEnqueuedMarksThatTrial) {
  const auto spec = *load_study_spec(write_study());
  const auto topo = probes::read_cpu_topology();
  const auto want = first_guess(spec, rule_machine(spec, topo ? &*topo : nullptr), m_verdict,
                                *baseline_params(spec), 1250.0);
  ASSERT_TRUE(want) << want.error();
  ASSERT_TRUE(want->change);
  std::string entry;
  for (const auto& [name, v] : want->params)
    entry += fmt::format("{}{}: {}", entry.empty() ? "" : ", ", name,
                         search::param_value_to_json(v).dump());
  std::string text = test_support::read_file(m_dir / "s.yaml");
  const std::string enqueue = "enqueue: [{threads: 2, workers: 2}]";
  text.replace(text.find(enqueue), enqueue.size(),
               "enqueue: [{threads: 2, workers: 2}, {" + entry + "}]");
  const auto study = test_support::write_file(m_dir / "s.yaml", text);
  const auto out = run(study, 3);
  const auto stored = trials();
  ASSERT_EQ(stored.size(), 3u) << out;
  EXPECT_TRUE(out.contains("(trial 1, already enqueued)")) << out;
  const auto& guess = stored[1];
  EXPECT_EQ(trial_params(guess), want->params);
  EXPECT_EQ(guess.system_attrs.value(k_attr_first_guess, false), true);
  EXPECT_EQ(guess.system_attrs[k_attr_guess_reasoning], nlohmann::json(want->reasoning));
  EXPECT_NEAR(guess.system_attrs[k_attr_guess_predicted].get<double>(), *want->predicted, 1e-9);
  EXPECT_FALSE(stored[2].system_attrs.contains(k_attr_first_guess));
  auto storage = SqliteStorage::open((m_dir / "out" / "study.db").string());
  ASSERT_TRUE(storage) << storage.error();
  const auto attrs = (*storage)->get_study_user_attrs((*storage)->get_study("g")->study_id);
  ASSERT_TRUE(attrs);
  EXPECT_EQ((*attrs)[k_attr_study_first_guess]["trial"], 1);
  EXPECT_EQ((*attrs)[k_attr_study_first_guess]["note"],
            "the guess is trial 1's setting, already enqueued");
}

TEST_F(FirstGuessRun, FirstGuessFalseEnqueuesNone) {
  const auto study = write_study("first_guess: false\n");
  run(study, 2);
  for (const auto& t : trials()) EXPECT_FALSE(t.system_attrs.contains(k_attr_first_guess));
}

}  // namespace
}  // namespace tune::tuner
