// A job tune did not write, run exactly as the user runs it (issue "Tune a job you did not write"):
// a stand-in python3 first on PATH is the one every trial runs, under mpirun too, and the one
// the exported scripts run (or warn about); the programs a trial ran are stored and reported; a
// misspelt program stops the study after max_failures trials with exit 1; `tune best` on a study
// without a completed trial exits 1; an mpirun error keeps the line that names the fault.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/common/test_support.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/program_identity.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;
using test_support::read_file;

class OwnJobE2E : public test_support::TempDirTest {
 protected:
  OwnJobE2E() : TempDirTest("tune-ownjob-") {}

  // A stand-in for a virtualenv's python3: it says it ran, and answers --version as an
  // interpreter does. /usr/bin/python3 -c "print('value: 9')" would print 9.
  fs::path make_stand_in() {
    const fs::path bin = m_dir / "venv" / "bin";
    fs::create_directories(bin);
    const fs::path py = bin / "python3";
    test_support::write_file(py,
                             "#!/bin/sh\n"
                             "if [ \"$1\" = --version ]; then echo 'Python 3.99.0 (stand-in)'; "
                             "exit 0; fi\n"
                             "echo 'value: 2.5 from the stand-in'\n");
    ::chmod(py.c_str(), 0755);
    return py;
  }
  std::map<std::string, std::string> venv_path() const {
    return {{"PATH", (m_dir / "venv" / "bin").string() + ":" + std::getenv("PATH")}};
  }
  std::string study(const std::string& launch_and_command, const std::string& extra = "") {
    return test_support::write_file(m_dir / "study.yaml",
                                    "name: own\noutput: " + (m_dir / "out").string() + "\n" +
                                        launch_and_command +
                                        "objective: {regex: 'value: ([0-9.]+)'}\n"
                                        "sampler: {type: random, seed: 3}\n"
                                        "params:\n  x: [1, 2]\n" +
                                        extra);
  }
  test_support::CommandOutput tune(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv = {TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run_command(argv, m_dir, env, "tune");
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "own");
  }
};

constexpr const char* k_python_command = "command: [python3, -c, \"print('value: 9')\", '{x}']\n";

TEST_F(OwnJobE2E, UnderMpirunEveryTrialRunsThePython3FirstOnPath) {
  const fs::path stand_in = make_stand_in();
  const auto s = study(std::string("launch: {mpirun: {n: 1}}\n") + k_python_command);
  const auto o = tune({"--trials", "2", "--quiet", s}, venv_path());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) {
    ASSERT_EQ(t.state, TrialState::complete) << t.system_attrs.dump();
    EXPECT_DOUBLE_EQ(*t.value, 2.5) << "mpirun ran another python3 than the one first on PATH";
    const auto programs = programs_from_json(t.user_attrs.at(k_attr_programs));
    ASSERT_EQ(programs.size(), 2u) << t.user_attrs.dump();
    EXPECT_EQ(programs[0].role, "launcher");
    EXPECT_EQ(programs[0].name, "mpirun");
    EXPECT_FALSE(programs[0].path.empty());
    EXPECT_EQ(programs[1].role, "program");
    EXPECT_EQ(programs[1].path, stand_in.string());
    EXPECT_EQ(programs[1].version, "Python 3.99.0 (stand-in)");
  }
  // The report names what the best trial ran.
  const auto report = tune({"report", s}, venv_path());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("ran: mpirun = "), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("python3 = " + stand_in.string() + " (Python 3.99.0 (stand-in))"),
            std::string::npos)
      << report.out;
}

TEST_F(OwnJobE2E, ExportedBashAndSlurmScriptsRunThatPython3OrWarn) {
  const fs::path stand_in = make_stand_in();
  const auto s = study(std::string("launch: {mpirun: {n: 1}}\n") + k_python_command);
  ASSERT_EQ(tune({"--trials", "1", "--quiet", s}, venv_path()).exit_code, 0);
  for (const std::string format : {"bash", "slurm"}) {
    const fs::path script = m_dir / (format + ".sh");
    const auto e = tune({"export", s, "--format", format, "-o", script.string()}, venv_path());
    ASSERT_EQ(e.exit_code, 0) << e.err;
    const std::string text = read_file(script);
    EXPECT_NE(text.find("tune_check python3 " + shell_quote(stand_in.string()) +
                        " 'Python 3.99.0 (stand-in)'"),
              std::string::npos)
        << text;
    // On a node whose PATH finds the same python3: it runs, and nothing is said.
    const auto same = test_support::run_command(
        {"bash", script.string()}, m_dir,
        {{"PATH", venv_path().at("PATH")}, {"TUNE_OUT", (m_dir / ("run-" + format)).string()}},
        format + "-same");
    EXPECT_EQ(same.exit_code, 0) << same.err;
    EXPECT_NE(same.out.find("value: 2.5 from the stand-in"), std::string::npos) << same.out;
    EXPECT_EQ(same.err.find("warning:"), std::string::npos) << same.err;
    // On a node where another python3 comes first: a warning that names both.
    const auto other = test_support::run_command(
        {"bash", script.string()}, m_dir,
        {{"PATH", "/usr/bin:/bin"}, {"TUNE_OUT", (m_dir / ("other-" + format)).string()}},
        format + "-other");
    EXPECT_NE(other.err.find("warning: python3 is '/usr/bin/python3' here; the tuned trial ran " +
                             stand_in.string()),
              std::string::npos)
        << other.err;
  }
}

TEST_F(OwnJobE2E, AMisspeltProgramStopsTheStudyAfterMaxFailures) {
  const auto s = study("command: [pyhton3, train.py, '{x}']\n", "max_failures: 2\n");
  const auto o = tune({"--trials", "10", s});
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_EQ(trials().size(), 2u) << "the study went on after max_failures failures in a row";
  EXPECT_NE(o.err.find("tune: error: 2 trials in a row failed (2 of them: "), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("'pyhton3' was not found in PATH"), std::string::npos) << o.err;
  // No completed trial: no best one, and a script reading it is told so.
  const auto best = tune({"best", s});
  EXPECT_EQ(best.exit_code, 1) << best.out << best.err;
  EXPECT_NE(best.err.find("no completed trial"), std::string::npos) << best.err;
}

TEST_F(OwnJobE2E, UnderMpirunAMisspeltProgramStopsWithMpirunsReason) {
  const auto s = study("launch: {mpirun: {n: 1}}\ncommand: [pyhton3, train.py, '{x}']\n");
  const auto o = tune({"--trials", "10", "--quiet", s});
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 3u) << "max_failures defaults to 3";
  const std::string reason = ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_NE(reason.find("unable to find the specified executable"), std::string::npos) << reason;
  EXPECT_NE(reason.find("Executable: pyhton3"), std::string::npos) << reason;
}

TEST_F(OwnJobE2E, AnMpirunOptionErrorKeepsTheLineThatNamesIt) {
  const auto s =
      study("launch: {mpirun: {n: 1, bind_to: bogus}}\n" + std::string(k_python_command));
  const auto o = tune({"--trials", "1", "--quiet", s});
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 1u) << o.err;
  const std::string reason = ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_NE(reason.find("binding policy is not recognized"), std::string::npos) << reason;
  EXPECT_NE(reason.find("Policy: bogus"), std::string::npos) << reason;
}

TEST_F(OwnJobE2E, FailuresThatAreNotInARowDoNotStopTheStudy) {
  // x=1 fails, x=2 completes: never two failures in a row with these enqueued values.
  const auto s = study("command: [sh, -c, 'test {x} = 2 && echo value: 1']\n",
                       "max_failures: 2\nenqueue: [{x: 1}, {x: 2}, {x: 1}, {x: 2}, {x: 1}]\n");
  const auto o = tune({"--trials", "5", "--quiet", s});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(trials().size(), 5u);
}

}  // namespace
}  // namespace tune::tuner
