// Inputs and outputs as files (issue 24): a job that reads input.txt and a rendered config from
// its working directory and writes result.json / result.csv / v.log, run by `tune` with `files:`
// staging its inputs and json/csv/regex objectives reading its outputs; the exported script,
// run with bash in a fresh folder, stages the same files and computes the same result.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;
using test_support::read_file;
using test_support::write_file;

// The job: input.txt (copied) times the first line of conf.txt (rendered from {x}), checked
// against data.txt (linked); its result in three files the objectives read.
constexpr const char* k_job =
    "set -e\n"
    "read a < input.txt\n"
    "read nb < conf.txt\n"
    "read check < data.txt\n"
    "v=$((a * nb + check))\n"
    "printf '{\"runs\": [{\"v\": %s}]}\\n' \"$v\" > result.json\n"
    "printf 'step,v\\n1,0\\n2,%s\\n' \"$v\" > result.csv\n"
    "echo \"V=$v\" > v.log\n";

class FilesE2E : public test_support::TempDirTest {
 protected:
  FilesE2E() : TempDirTest("tune-files-e2e-") {}

  std::string study(const std::string& extra = "") {
    write_file(m_dir / "job.sh", k_job);
    write_file(m_dir / "input.txt", "7\n");
    write_file(m_dir / "data.txt", "1\n");
    write_file(m_dir / "conf.txt.in", "{x}\n# {{not a placeholder}} in trial {trial_number}\n");
    return write_file(m_dir / "study.yaml",
                      "name: files\noutput: " + (m_dir / "out").string() +
                          "\n"
                          "command: [sh, job.sh]\n"
                          "files:\n"
                          "  - {copy: job.sh}\n"
                          "  - {copy: input.txt}\n"
                          "  - {link: data.txt}\n"
                          "  - {template: conf.txt.in, dest: conf.txt}\n"
                          "directions: [maximize, maximize, maximize]\n"
                          "objective:\n"
                          "  - {file: result.json, json: 'runs[0].v'}\n"
                          "  - {file: result.csv, csv: v}\n"
                          "  - {file: v.log, regex: 'V=([0-9]+)'}\n"
                          "constraints:\n"
                          "  - {file: result.csv, csv: {column: v, row: max}, max: 20}\n"
                          "sampler: {type: random, seed: 3}\n"
                          "params:\n  x: [2, 3]\n"
                          "enqueue: [{x: 2}, {x: 3}]\n" +
                          extra);
  }
  test_support::CommandOutput tune(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run_command(argv, m_dir, {}, "tune");
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "files");
  }
};

TEST_F(FilesE2E, StagedInputsReachTheJobAndFileObjectivesScoreIt) {
  const auto s = study();
  const auto o = tune({"--trials", "2", "--quiet", s});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) {
    ASSERT_EQ(t.state, TrialState::complete) << t.system_attrs.dump();
    const double x = t.number == 0 ? 2 : 3;
    const double v = 7 * x + 1;
    EXPECT_EQ(t.values, (std::vector<double>{v, v, v})) << t.number;
    EXPECT_EQ(t.system_attrs.at(k_attr_constraints), nlohmann::json::array({v - 20}));
    const fs::path dir = t.user_attrs.at(k_attr_trial_dir).get<std::string>();
    EXPECT_EQ(t.user_attrs.at(k_attr_workdir), dir.string());
    EXPECT_EQ(read_file(dir / "conf.txt"), fmt::format("{}\n# {{not a placeholder}} in trial {}\n",
                                                       static_cast<int>(x), t.number));
    EXPECT_TRUE(fs::is_symlink(dir / "data.txt"));
    const auto& files = t.user_attrs.at(k_attr_files);
    ASSERT_EQ(files.size(), 4u) << files.dump();
    EXPECT_EQ(files[3], (nlohmann::json{{"dest", "conf.txt"},
                                        {"src", (m_dir / "conf.txt.in").string()},
                                        {"mode", "template"}}));
    EXPECT_EQ(files[2]["mode"], "link");
  }
}

TEST_F(FilesE2E, TheExportedScriptStagesTheSameFilesAndGetsTheSameResult) {
  const auto s = study();
  ASSERT_EQ(tune({"--trials", "2", "--quiet", s}).exit_code, 0);
  for (const std::string format : {"bash", "slurm", "pbs"}) {
    const fs::path script = m_dir / (format + ".sh");
    const auto e = tune({"export", s, "--trial", "1", "--format", format, "-o", script.string()});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    const fs::path fresh = m_dir / ("fresh-" + format);
    fs::create_directories(fresh);
    const auto run = test_support::run_command({"bash", script.string()}, fresh,
                                               {{"TUNE_OUT", (fresh / "out").string()}}, format);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err << read_file(script);
    EXPECT_EQ(read_file(fresh / "out" / "conf.txt"), "3\n# {not a placeholder} in trial 1\n")
        << read_file(script);
    EXPECT_TRUE(fs::is_symlink(fresh / "out" / "data.txt"));
    EXPECT_EQ(read_file(fresh / "out" / "result.json"), "{\"runs\": [{\"v\": 22}]}\n");
    EXPECT_EQ(read_file(fresh / "out" / "v.log"), "V=22\n");
  }
}

// A stored value is the database's, so untrusted (issue 37): one rewritten to "../../escape"
// cannot move an exported script's working folder out of the study's; the script says why and
// exits 1 before it makes anything.
TEST_F(FilesE2E, AnExportedWorkdirStaysInsideWhateverTheDatabaseSays) {
  const auto s = study("workdir: 'runs/{x}'\n");
  ASSERT_EQ(tune({"--trials", "1", "--quiet", s}).exit_code, 0);
  const auto db = (m_dir / "out" / "study.db").string();
  const auto edit = test_support::run_command(
      {"sqlite3", db,
       "UPDATE trial_params SET param_value = 1, distribution_json = "
       "'{\"name\": \"CategoricalDistribution\", \"attributes\": {\"choices\": [2, "
       "\"../../escape\"]}}' WHERE param_name = 'x'"},
      m_dir, {}, "sqlite3");
  ASSERT_EQ(edit.exit_code, 0) << edit.err;
  const fs::path script = m_dir / "tampered.sh";
  const auto e = tune({"export", s, "--trial", "0", "--format", "bash", "-o", script.string()});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_TRUE(read_file(script).contains("\n# workdir: ")) << read_file(script);
  const fs::path fresh = m_dir / "fresh" / "a" / "b";
  fs::create_directories(fresh);
  const auto run = test_support::run_command({"bash", script.string()}, fresh,
                                             {{"TUNE_OUT", (fresh / "out").string()}}, "bash");
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  // runs/{x} is taken from the study's folder: "../../escape" would be beside that folder.
  EXPECT_FALSE(fs::exists(m_dir.parent_path() / "escape"));
  EXPECT_FALSE(fs::exists(m_dir / "escape"));
}

TEST_F(FilesE2E, AMissingInputIsAStudyFileErrorAndAStagingFailureIsAFail) {
  const auto s = study("max_failures: 0\n");
  fs::remove(m_dir / "input.txt");
  const auto bad = tune({"--trials", "1", "--quiet", s});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("study.yaml:6: key 'files[1].copy': " + (m_dir / "input.txt").string() +
                         " does not exist"),
            std::string::npos)
      << bad.err;
  // A folder where the job's input must go: staging fails, the trial FAILs and says why.
  write_file(m_dir / "input.txt", "7\n");
  const auto s2 = study("max_failures: 0\nworkdir: 'run'\n");
  fs::create_directories(m_dir / "run" / "conf.txt" / "x");
  const auto o = tune({"--trials", "1", "--quiet", s2});
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 2u);  // the failed trial and the second enqueued one, still waiting
  EXPECT_EQ(ts[0].state, TrialState::fail);
  const std::string reason = ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_EQ(ts[0].user_attrs.at(k_attr_workdir), (m_dir / "run").string());
  EXPECT_NE(reason.find("staging files[3]: cannot write " + (m_dir / "run" / "conf.txt").string() +
                        ": a folder is there (staging replaces files, never folders)"),
            std::string::npos)
      << reason;
}

}  // namespace
}  // namespace tune::tuner
