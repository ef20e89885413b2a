// Two objectives end to end: a small study (a trivial command printing two numbers, read by a
// list of regex objectives, searched by the default multi-objective sampler) run by the real
// `tune`, then python3-optuna on the same SQLite file: its directions and best_trials must be
// ours (search::best_trials over what we stored, `tune report`'s pareto_front, `tune best`), and
// `tune export` takes a trial of the front with --trial and refuses to guess without it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "search/pareto.h"
#include "tests/common/test_support.h"
#include "tuner/judge/ranking.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class MultiObjectiveE2E : public test_support::TempDirTest {
 protected:
  MultiObjectiveE2E() : TempDirTest("tune-mo-e2e-") {}

  test_support::CommandOutput run(const std::vector<std::string>& argv) {
    return test_support::run_command(argv, m_dir, {}, "cmd");
  }
  test_support::CommandOutput tune(std::vector<std::string> args) {
    args.insert(args.begin(), TUNE_BIN);
    return run(args);
  }
};

// A cost and a gain that pull against each other (more of y costs more and gains more), with x
// adding cost alone: the front is y's trade-off at small x. Values go through argv, no shell.
std::string study_text(const fs::path& out) {
  return "name: mo\n"
         "output: " +
         out.string() +
         "\n"
         "directions: [minimize, maximize]\n"
         "objective:\n"
         "  - {regex: 'cost=([-0-9.e]+)'}\n"
         "  - {regex: 'gain=([-0-9.e]+)'}\n"
         "command: [/usr/bin/python3, -c, \"import sys; x, y = map(float, sys.argv[1:]); "
         "print('cost=%r gain=%r' % (x * x + y, y ** 0.5 - 0.3 * x))\", '{x}', '{y}']\n"
         "params:\n"
         "  x: {type: float, low: 0, high: 2}\n"
         "  y: {type: float, low: 0, high: 4, step: 0.5}\n"
         "sampler: {type: tpe, seed: 4, n_startup_trials: 6}\n"
         "probes: {enabled: false}\n";
}

std::vector<int> numbers_of(const nlohmann::json& trials) {
  std::vector<int> out;
  for (const auto& t : trials) out.push_back(t["number"].get<int>());
  return out;
}

TEST_F(MultiObjectiveE2E, OptunaReadsTheSameParetoFront) {
  if (system("/usr/bin/python3 -c 'import optuna' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-optuna is not installed (scripts/install-deps.sh installs it)";
  }
  const auto study = test_support::write_file(m_dir / "mo.yaml", study_text(m_dir / "out"));
  const auto ran = tune({"--trials", "24", "--quiet", study});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const auto db = m_dir / "out" / "study.db";

  search::VectorStudyView ours({search::Direction::minimize, search::Direction::maximize});
  ours.mutable_trials() = test_support::stored_trials(db, "mo");
  ASSERT_EQ(ours.trials().size(), 24u);
  std::vector<int> front;
  for (const auto* t : search::best_trials(ours)) front.push_back(t->number);
  ASSERT_GE(front.size(), 2u) << "a trade-off has more than one best trial";

  const auto script = test_support::write_file(
      m_dir / "front.py",
      "import json, optuna, sys\n"
      "s = optuna.load_study(study_name='mo', storage='sqlite:///' + sys.argv[1])\n"
      "print(json.dumps({'directions': [d.name for d in s.directions],\n"
      "  'front': sorted(t.number for t in s.best_trials),\n"
      "  'values': {t.number: t.values for t in s.trials}}))\n");
  const auto py = run({"/usr/bin/python3", script, db.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto optuna = nlohmann::json::parse(py.out);
  EXPECT_EQ(optuna["directions"], nlohmann::json({"MINIMIZE", "MAXIMIZE"}));
  EXPECT_EQ(optuna["front"].get<std::vector<int>>(), front);
  for (const auto& t : ours.trials()) {
    EXPECT_EQ(optuna["values"][std::to_string(t.number)].get<std::vector<double>>(), t.values)
        << "trial " << t.number;
  }

  const auto report = tune({"report", "-f", "json", study});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto j = nlohmann::json::parse(report.out);
  EXPECT_EQ(numbers_of(j["pareto_front"]), front);
  EXPECT_EQ(j["directions"], nlohmann::json({"minimize", "maximize"}));

  const auto best = tune({"best", study});
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(best.out.find(fmt::format("Pareto front (minimize objective 0, maximize objective "
                                      "1): {} trials",
                                      front.size())),
            std::string::npos)
      << best.out;

  const auto guess = tune({"export", study});
  EXPECT_EQ(guess.exit_code, 2);
  EXPECT_NE(guess.err.find(fmt::format("pick one of its Pareto front with --trial N (front: {}",
                                       front.front())),
            std::string::npos)
      << guess.err;
  const auto picked = tune({"export", study, "--trial", std::to_string(front.back())});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_NE(picked.out.find(fmt::format("trial #{}.", front.back())), std::string::npos)
      << picked.out;
  EXPECT_NE(picked.out.find("# Measured: objective 0 = "), std::string::npos) << picked.out;
}

// The ready study (studies/speed-vs-accuracy.yaml): the bundled trainer's time against its
// validation accuracy over the gradient dtype and thread knobs. Running it takes minutes of
// trainer runs; loading it takes nothing.
TEST(ShippedStudies, SpeedVsAccuracyStudyLoads) {
  auto spec = load_study_spec(TUNE_SOURCE_DIR "/studies/speed-vs-accuracy.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->directions,
            (std::vector{search::Direction::minimize, search::Direction::maximize}));
  EXPECT_EQ(objective_names(*spec),
            (std::vector<std::string>{"elapsed_time", "validation/main/accuracy"}));
  EXPECT_TRUE(std::ranges::find(spec->command, "--benchmark") == spec->command.end())
      << "the last log entry must hold the validation accuracy";
  const auto dtype =
      std::ranges::find_if(spec->space, [](const auto& p) { return p.first == "grad_dtype"; });
  ASSERT_NE(dtype, spec->space.end());
  EXPECT_EQ(std::get<search::CategoricalDistribution>(dtype->second).choices.size(), 3u);
  EXPECT_EQ(spec->enqueue.size(), 1u) << "the fp32 framework-defaults baseline";
}

}  // namespace
}  // namespace tune::tuner
