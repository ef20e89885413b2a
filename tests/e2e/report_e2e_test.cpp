// `tune report`, `tune confirm` and `tune export` end to end on one small study run through
// mpirun: every report format from the CLI, the HTML report rendered by headless Chromium, the
// exported bash script run for real (it must leave the trial program's log), the exported mpirun
// line compared with the command the runner really launched, and the exported Slurm script
// submitted with `sbatch --wait` to a single-node Slurm that the test starts and stops.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/cluster/run_command.h"
#include "tests/cluster/slurm_fixture.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/report/report_model.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

using test_support::on_path;
using test_support::Ran;
using test_support::read_file;
using test_support::run;
using test_support::slurp;

Ran tune(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), TUNE_BIN);
  return run(dir, std::move(args));
}

// One study shared by every test: 5 trials (the first is the enqueued baseline), then
// `tune confirm --repeats 3 --top 1`: 6 re-runs.
class ReportE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_dir = fs::temp_directory_path() / ("tune-report-e2e-" + std::to_string(getpid()));
    fs::remove_all(s_dir);
    fs::create_directories(s_dir);
    s_study = (s_dir / "study.yaml").string();
    std::ofstream(s_study) << "name: rpt\n"
                              "output: "
                           << (s_dir / "out").string()
                           << "\n"
                              "launch:\n  mpirun: {n: 1, oversubscribe: true, bind_to: none}\n"
                              "command: ['" FAKE_TRIAL
                              "', --out, '{trial_dir}', --value, '{x}', --steps, '{steps}']\n"
                              "env:\n  OMP_NUM_THREADS: '{omp}'\n  TUNE_TEST_NOTE: \"it's {x}\"\n"
                              "sampler: {type: random, seed: 5}\n"
                              "params:\n"
                              "  x: {type: float, low: 1, high: 9}\n"
                              "  steps: {type: int, low: 1, high: 3}\n"
                              "  omp: [null, 1, 2]\n"
                              "enqueue: [{x: 8.5, steps: 2, omp: null}]\n";
    s_setup = tune(s_dir, {"--trials", "5", s_study});
    if (s_setup.exit_code != 0) return;
    s_setup = tune(s_dir, {"confirm", s_study, "--repeats", "3", "--top", "1"});
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(s_dir);
  }
  void SetUp() override {
    ASSERT_EQ(s_setup.exit_code, 0) << "study setup failed:\n" << s_setup.out << s_setup.err;
  }

  static nlohmann::json report_json() {
    const auto r = tune(s_dir, {"report", s_study, "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  static inline fs::path s_dir;
  static inline std::string s_study;
  static inline Ran s_setup;
};

TEST_F(ReportE2E, ConfirmPrintsMediansAndTheReportUsesThem) {
  EXPECT_NE(s_setup.out.find("confirm 'rpt': 3 re-runs each of #0 (baseline), #"),
            std::string::npos)
      << s_setup.out;
  const auto j = report_json();
  EXPECT_EQ(j["schema_version"], k_report_schema_version);
  EXPECT_EQ(j["counts"]["complete"], 5);
  EXPECT_EQ(j["counts"]["reruns"], 6);
  ASSERT_TRUE(j["best"].is_object());
  EXPECT_EQ(j["best"]["rerun_values"].size(), 3u);
  EXPECT_EQ(j["baseline"]["number"], 0);
  EXPECT_EQ(j["baseline"]["rerun_values"].size(), 3u);
  // fake_trial logs exactly its --value: the repeats equal the original value, so the CI is
  // the degenerate interval at the ratio.
  const double base = j["baseline"]["params"]["x"], best = j["best"]["params"]["x"];
  EXPECT_NEAR(j["speedup"]["ratio"].get<double>(), base / best, 1e-4);
  ASSERT_EQ(j["speedup"]["ci95"].size(), 2u);
  EXPECT_NEAR(j["speedup"]["ci95"][0].get<double>(), base / best, 1e-4);
  // Interleaved round robin: baseline, top, baseline, top, ...
  std::vector<int> order;
  for (const auto& t : j["trials"])
    if (!t["rerun_of"].is_null()) order.push_back(t["rerun_of"]);
  const int top = j["best"]["number"];
  EXPECT_EQ(order, (std::vector<int>{0, top, 0, top, 0, top}));
}

TEST_F(ReportE2E, TextAndMarkdownFromTheCli) {
  auto r = tune(s_dir, {"report", s_study});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("study 'rpt' (minimize elapsed_time)\nstorage: ")) << r.out;
  EXPECT_NE(r.out.find("\ntrials: 5 complete, 0 failed, 0 pruned; 6 re-runs\n"), std::string::npos);
  EXPECT_NE(r.out.find("\nSpeedup over baseline: "), std::string::npos);
  EXPECT_NE(r.out.find("95% CI ["), std::string::npos);
  EXPECT_NE(r.out.find("\nTop 5 trials\n  rank  trial"), std::string::npos);
  EXPECT_NE(r.out.find("\nParameter importance ("), std::string::npos);
  // fake_trial logs exactly its --value: re-runs of one setting agree, so the noise is measured
  // (as none) and the leads over the baseline are beyond it.
  EXPECT_NE(r.out.find("\nNoise\n  one run varies by 0% ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": beyond the noise\n"), std::string::npos) << r.out;
  r = tune(s_dir, {"report", (s_dir / "out" / "study.db").string(), "--format", "markdown", "-o",
                   (s_dir / "r.md").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto md = read_file(s_dir / "r.md");
  EXPECT_TRUE(md.starts_with("# Study report: rpt\n")) << md;
  EXPECT_NE(md.find("\n| rank | trial | value | confirmed | wall_s | probe | x | steps | omp |\n"),
            std::string::npos);
}

TEST_F(ReportE2E, HtmlChartsRenderInHeadlessChromium) {
  if (!on_path("chromium")) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh)";
  const auto html = s_dir / "report.html";
  auto r = tune(s_dir, {"report", s_study, "--format", "html", "-o", html.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A copy with one probe script appended that writes the page's width into the DOM once it is
  // drawn: a page 1000 px wide must not scroll sideways (wide tables scroll in their own box).
  const auto probed = s_dir / "report-probe.html";
  std::ofstream(probed) << read_file(html)
                        << "<script>window.addEventListener('load', function () {"
                           " var d = document.documentElement;"
                           " document.body.setAttribute('data-page-width',"
                           " d.scrollWidth + ' of ' + d.clientWidth); });</script>\n";
  const auto profile = s_dir / "chromium-profile";
  r = run(s_dir,
          {"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--user-data-dir=" + profile.string(), "--window-size=1000,2000",
           "--virtual-time-budget=5000", "--dump-dom", "file://" + probed.string()},
          {}, 90);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = report_json();
  // History, parallel coordinates, timeline, one slice per parameter, importance when computed
  // and the settings are not within the noise of each other (then it ranks nothing).
  const bool importance = !j["importance"].empty() && j["importance_verdict"] != "within";
  const std::size_t expected = 3 + j["params"].size() + (importance ? 1 : 0);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("data-charts-rendered=\"(\\d+)\"")))
      << "the drawing script did not finish; DOM:\n"
      << r.out.substr(0, 2000);
  EXPECT_EQ(std::stoul(m[1]), expected);
  std::size_t canvases = 0;
  const std::regex size_re("data-drawn-size=\"(\\d+)x(\\d+)\"");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), size_re);
       it != std::sregex_iterator(); ++it) {
    ++canvases;
    EXPECT_GT(std::stoi((*it)[1]), 0);
    EXPECT_GT(std::stoi((*it)[2]), 0);
  }
  EXPECT_EQ(canvases, expected);
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("data-page-width=\"(\\d+) of (\\d+)\"")))
      << r.out.substr(0, 2000);
  EXPECT_LE(std::stoi(m[1]), std::stoi(m[2])) << "the page scrolls sideways at 1000 px";
  // The parallel coordinates' colour legend, filled in by the drawing code.
  EXPECT_NE(r.out.find("line colour: elapsed_time, best"), std::string::npos);
}

TEST_F(ReportE2E, ExportedBashScriptRunsAndWritesTheLog) {
  const auto script = s_dir / "best.sh";
  auto r = tune(s_dir, {"export", s_study, "--format", "bash", "-o", script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE((fs::status(script).permissions() & fs::perms::owner_exec) != fs::perms::none);
  r = run(s_dir, {"bash", "-n", script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = s_dir / "bash-run";
  r = run(s_dir, {"bash", script.string()}, {{"TUNE_OUT", out.string()}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(fs::exists(out / "log")) << r.out << r.err;
  const auto log = nlohmann::json::parse(read_file(out / "log"));
  const auto j = report_json();
  EXPECT_EQ(log.size(), j["best"]["params"]["steps"].get<std::size_t>());
  EXPECT_NEAR(log.back()["elapsed_time"].get<double>(), j["best"]["params"]["x"].get<double>(),
              1e-5);
}

TEST_F(ReportE2E, ExportedCommandIsTheOneTheRunnerLaunched) {
  const auto trials = test_support::stored_trials(s_dir / "out" / "study.db", "rpt");
  for (int number : {0, 3}) {
    const auto& t = trials.at(static_cast<std::size_t>(number));
    auto r =
        tune(s_dir, {"export", s_study, "--format", "mpirun", "--trial", std::to_string(number)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Let bash split the line into words, with $TUNE_OUT at the trial's own folder.
    r = run(s_dir, {"bash", "-c", "w() { printf '%s\\n' \"$@\"; }; w " + r.out},
            {{"TUNE_OUT", t.user_attrs.at(k_attr_trial_dir).get<std::string>()}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> words;
    std::istringstream in(r.out);
    for (std::string w; std::getline(in, w);) words.push_back(w);
    // Drop the `env [-u VAR] K=V...` prefix; the runner set those in the environment instead.
    const auto mpirun = std::find(words.begin(), words.end(), "mpirun");
    ASSERT_NE(mpirun, words.end());
    // Word for word, --allow-run-as-root included when the trials ran as root (so does export).
    const std::vector<std::string> launched = t.user_attrs.at(k_attr_launched_argv);
    EXPECT_EQ(std::vector<std::string>(mpirun, words.end()), launched) << "trial " << number;
    const auto env = t.user_attrs.at(k_attr_env);
    for (const auto& [key, value] : env.items())
      EXPECT_NE(std::find(words.begin(), mpirun, key + "=" + value.get<std::string>()), mpirun)
          << key;
  }
}

TEST_F(ReportE2E, BadInputGivesOneClearLine) {
  auto r = tune(s_dir, {"export", s_study, "--trial", "999"});
  EXPECT_EQ(r.exit_code, 2);  // bad input (docs/report-confirm-export.md, "Exit status")
  EXPECT_EQ(r.err, "tune: error: --trial 999: no such trial in study 'rpt' (11 trials)\n");
  r = tune(s_dir, {"report", (s_dir / "missing.db").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such database"), std::string::npos) << r.err;
  r = tune(s_dir, {"export", s_study, "--format", "lsf"});
  EXPECT_NE(r.exit_code, 0);
}

// The Slurm script asks for what the winner measured: a time limit from its (re-run) wall times,
// the machine it was tuned on named, and run with bash on that machine it warns about nothing.
TEST_F(ReportE2E, ExportedSlurmScriptAsksForTimeAndNamesThisMachine) {
  const auto script = s_dir / "timed.slurm";
  auto r = tune(s_dir, {"export", s_study, "--format", "slurm", "-o", script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto text = read_file(script);
  EXPECT_TRUE(std::regex_search(text, std::regex("\n#SBATCH --time=00:0[5-9]:00\n"))) << text;
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_NE(text.find(std::string("\n# Tuned on: ") + host + ": "), std::string::npos) << text;
  EXPECT_NE(text.find("the longest of 4 runs"), std::string::npos) << text;  // the best, 3 re-runs
  EXPECT_NE(text.find("\n# Kept from the study, which ran on a development machine"),
            std::string::npos);
  const auto out = s_dir / "slurm-as-bash";
  r = run(s_dir, {"bash", script.string()}, {{"TUNE_OUT", out.string()}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(out / "log")) << r.err;
  EXPECT_EQ(r.err.find("warning: this node"), std::string::npos) << r.err;

  r = tune(s_dir, {"export", s_study, "--format", "pbs", "--walltime", "2h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n#PBS -l walltime=02:00:00\n"), std::string::npos) << r.out;
  r = tune(s_dir, {"export", s_study, "--format", "bash", "--walltime", "2h"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = tune(s_dir, {"export", s_study, "--format", "slurm", "--walltime", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--walltime 'soon'"), std::string::npos) << r.err;
}

TEST_F(ReportE2E, ExportedSlurmScriptCompletesUnderSbatch) {
  test_support::LocalSlurm slurm(s_dir / "slurm");
  if (const auto why = slurm.start(); !why.empty())
    GTEST_SKIP() << "cannot start a local Slurm: " << why;
  const auto script = s_dir / "best.slurm";
  auto r = tune(s_dir, {"export", s_study, "--format", "slurm", "-o", script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto text = read_file(script);
  EXPECT_NE(text.find("\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n"), std::string::npos)
      << text;
  const auto out = s_dir / "slurm-run";
  auto env = slurm.env();
  env["TUNE_OUT"] = out.string();
  r = run(s_dir,
          {"sbatch", "--wait", "--output=" + (s_dir / "slurm-job.out").string(), script.string()},
          env, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << read_file(s_dir / "slurm-job.out");
  EXPECT_NE(r.out.find("Submitted batch job"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out / "log")) << read_file(s_dir / "slurm-job.out");
  const auto log = nlohmann::json::parse(read_file(out / "log"));
  EXPECT_NEAR(log.back()["elapsed_time"].get<double>(),
              report_json()["best"]["params"]["x"].get<double>(), 1e-5);
  slurm.stop();
}

#ifdef TUNE_TRAINER
// The real thing: the shipped quickstart study at a tiny budget, its best trial exported as a
// bash script, and the script run by hand must leave the bundled trainer's log.
TEST(ReportE2ETrainer, ExportedQuickstartScriptRunsTheTrainer) {
  const auto dir = test_support::fresh_test_dir("tune-report-trainer-");
  std::string text = read_file(TUNE_SOURCE_DIR "/studies/quickstart.yaml");
  const auto at = text.find("--train-samples=");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('\n', at) - at, "--train-samples=800");
  text += "output: " + (dir / "out").string() + "\n";
  const auto study = test_support::write_file(dir / "quickstart.yaml", text);
  auto r = tune(dir, {"--trials", "1", study});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto script = dir / "best.sh";
  r = tune(dir, {"export", study, "-o", script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = dir / "run";
  r = run(dir, {"bash", script.string()}, {{"TUNE_OUT", out.string()}}, 180);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << read_file(script);
  ASSERT_TRUE(fs::exists(out / "log")) << r.out << r.err;
  const auto log = nlohmann::json::parse(read_file(out / "log"));
  ASSERT_TRUE(log.is_array() && !log.empty());
  EXPECT_GT(log.back().value("elapsed_time", 0.0), 0.0);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace tune::tuner
