// `tune report`, `tune confirm` and `tune export` end to end on one small study run through
// mpirun: every report format from the CLI, the HTML report rendered by headless Chromium, the
// exported bash script run for real (it must leave the trial program's log), the exported mpirun
// line compared with the command the runner really launched, and the exported Slurm script
// submitted with `sbatch --wait` to a single-node Slurm that the test starts and stops.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/common/test_support.h"
#include "tuner/launcher.h"
#include "tuner/sqlite_storage.h"
#include "tuner/trial_attrs.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

using Ran = test_support::CommandOutput;
using test_support::read_file;

// `argv` run in `dir`, each run's output in files of its own (cmdN.out, cmdN.err).
Ran run(const fs::path& dir, std::vector<std::string> argv,
        std::map<std::string, std::string> env = {}, double timeout_s = 120) {
  static int counter = 0;
  return test_support::run_command(argv, dir, env, "cmd" + std::to_string(++counter), timeout_s);
}

Ran tune(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), TUNE_BIN);
  return run(dir, std::move(args));
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  for (std::size_t a = 0; a <= p.size();) {
    const auto b = std::min(p.find(':', a), p.size());
    if (fs::exists(fs::path(p.substr(a, b - a)) / program)) return true;
    a = b + 1;
  }
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin"})
    if (fs::exists(fs::path(dir) / program)) return true;
  return false;
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
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["counts"]["complete"], 5);
  EXPECT_EQ(j["counts"]["confirm_runs"], 6);
  ASSERT_TRUE(j["best"].is_object());
  EXPECT_EQ(j["best"]["repeats"].size(), 3u);
  EXPECT_EQ(j["baseline"]["number"], 0);
  EXPECT_EQ(j["baseline"]["repeats"].size(), 3u);
  // fake_trial logs exactly its --value: the repeats equal the original value, so the CI is
  // the degenerate interval at the ratio.
  const double base = j["baseline"]["params"]["x"], best = j["best"]["params"]["x"];
  EXPECT_NEAR(j["speedup"]["ratio"].get<double>(), base / best, 1e-4);
  ASSERT_EQ(j["speedup"]["ci95"].size(), 2u);
  EXPECT_NEAR(j["speedup"]["ci95"][0].get<double>(), base / best, 1e-4);
  // Interleaved round robin: baseline, top, baseline, top, ...
  std::vector<int> order;
  for (const auto& t : j["trials"])
    if (!t["confirm_of"].is_null()) order.push_back(t["confirm_of"]);
  const int top = j["best"]["number"];
  EXPECT_EQ(order, (std::vector<int>{0, top, 0, top, 0, top}));
}

TEST_F(ReportE2E, TextAndMarkdownFromTheCli) {
  auto r = tune(s_dir, {"report", s_study});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("study 'rpt' (minimize elapsed_time)\nstorage: ")) << r.out;
  EXPECT_NE(r.out.find("\ntrials: 5 complete, 0 failed, 0 pruned; 6 confirm re-runs\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("\nSpeedup over baseline: "), std::string::npos);
  EXPECT_NE(r.out.find("95% CI ["), std::string::npos);
  EXPECT_NE(r.out.find("\nTop 5 trials\n  rank  trial"), std::string::npos);
  EXPECT_NE(r.out.find("\nParameter importance ("), std::string::npos);
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
  const auto profile = s_dir / "chromium-profile";
  r = run(s_dir,
          {"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--user-data-dir=" + profile.string(), "--window-size=1200,2000",
           "--virtual-time-budget=5000", "--dump-dom", "file://" + html.string()},
          {}, 90);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = report_json();
  // History, parallel coordinates, timeline, one slice per parameter, importance when computed.
  const std::size_t expected = 3 + j["params"].size() + (j["importance"].empty() ? 0 : 1);
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
    std::vector<std::string> launched = t.user_attrs.at(k_attr_command);
    std::erase(launched, "--allow-run-as-root");  // the scripts set Open MPI's root variables
    EXPECT_EQ(std::vector<std::string>(mpirun, words.end()), launched) << "trial " << number;
    const auto env = t.user_attrs.at(k_attr_env);
    for (const auto& [key, value] : env.items())
      EXPECT_NE(std::find(words.begin(), mpirun, key + "=" + value.get<std::string>()), mpirun)
          << key;
  }
}

TEST_F(ReportE2E, BadInputGivesOneClearLine) {
  auto r = tune(s_dir, {"export", s_study, "--trial", "999"});
  EXPECT_EQ(r.exit_code, 2);  // bad input (README "Exit status")
  EXPECT_EQ(r.err, "tune: error: --trial 999: no such trial in study 'rpt' (11 trials)\n");
  r = tune(s_dir, {"report", (s_dir / "missing.db").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such database"), std::string::npos) << r.err;
  r = tune(s_dir, {"export", s_study, "--format", "lsf"});
  EXPECT_NE(r.exit_code, 0);
}

// A single-node Slurm cluster in a temp folder: munged on its own socket, slurmctld and slurmd
// on ports of their own, each run in the foreground as our own child and stopped by pid (tune's
// launcher would, rightly, stop a daemon that its command left behind).
class LocalSlurm {
 public:
  explicit LocalSlurm(fs::path dir) : m_dir(std::move(dir)) {}
  ~LocalSlurm() { stop(); }

  // Empty string on success, else why it could not start.
  std::string start() {
    for (const char* p : {"munged", "slurmctld", "slurmd", "sbatch", "sinfo", "runuser"})
      if (!on_path(p)) return std::string(p) + " is not installed";
    if (geteuid() != 0) return "needs root to run munged as the munge user";
    fs::create_directories(m_dir / "munge");
    fs::create_directories(m_dir / "state");
    fs::create_directories(m_dir / "spool");
    // munged insists that every folder above its socket is searchable by all.
    for (fs::path p = m_dir; p != p.root_path(); p = p.parent_path())
      fs::permissions(p, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
    auto r = run(m_dir, {"chown", "munge:munge", (m_dir / "munge").string()});
    if (r.exit_code != 0) return "chown munge: " + r.err;
    fs::permissions(m_dir / "munge",
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    if (auto why = daemon({"setpriv", "--reuid=munge", "--regid=munge", "--init-groups", "munged",
                           "--foreground", "--socket=" + socket(),
                           "--pid-file=" + (m_dir / "munge/pid").string(),
                           "--log-file=" + (m_dir / "munge/log").string(),
                           "--seed-file=" + (m_dir / "munge/seed").string()});
        !why.empty())
      return why;
    // slurmctld needs munged's socket: wait (bounded) until it exists.
    for (const auto until = Clock::now() + std::chrono::seconds(10);
         !fs::exists(socket()) && Clock::now() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }

    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const int port = 20000 + static_cast<int>(getpid() % 20000);
    std::ofstream(conf()) << "ClusterName=tunetest\nSlurmctldHost=" << host
                          << "\nSlurmctldPort=" << port << "\nSlurmdPort=" << port + 1
                          << "\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket="
                          << socket()
                          << "\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                             "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
                             "SlurmUser=root\nSlurmdUser=root\nReturnToService=2\nMpiDefault=none\n"
                             "StateSaveLocation="
                          << (m_dir / "state").string()
                          << "\nSlurmdSpoolDir=" << (m_dir / "spool").string()
                          << "\nSlurmctldPidFile=" << (m_dir / "slurmctld.pid").string()
                          << "\nSlurmdPidFile=" << (m_dir / "slurmd.pid").string()
                          << "\nSlurmctldLogFile=" << (m_dir / "slurmctld.log").string()
                          << "\nSlurmdLogFile=" << (m_dir / "slurmd.log").string()
                          << "\nNodeName=" << host
                          << " CPUs=" << std::thread::hardware_concurrency()
                          << " State=UNKNOWN\nPartitionName=debug Nodes=" << host
                          << " Default=YES MaxTime=INFINITE State=UP\n";
    for (const char* name : {"slurmctld", "slurmd"}) {
      if (auto why = daemon({name, "-D", "-f", conf()}); !why.empty()) return why;
    }
    // Ready when the node reports idle; each sinfo is a round trip to slurmctld.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < deadline) {
      r = run(m_dir, {"sinfo", "-h", "-o", "%t"}, env());
      if (r.exit_code == 0 && r.out.starts_with("idle")) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return "the node never became idle; slurmctld log:\n" + read_file(m_dir / "slurmctld.log");
  }

  void stop() {
    for (auto it = m_daemons.rbegin(); it != m_daemons.rend(); ++it) {
      kill(it->id(), SIGTERM);
      std::error_code ec;
      if (!it->wait_for(std::chrono::seconds(10), ec)) {
        kill(it->id(), SIGKILL);
        it->wait(ec);
      }
    }
    m_daemons.clear();
  }

  std::string conf() const { return (m_dir / "slurm.conf").string(); }
  std::map<std::string, std::string> env() const { return {{"SLURM_CONF", conf()}}; }

 private:
  std::string socket() const { return (m_dir / "munge/munge.socket").string(); }

  // Starts one daemon in the foreground, output to DIR/<name>.console.
  std::string daemon(const std::vector<std::string>& argv) {
    const auto name = fs::path(argv[0] == "setpriv" ? "munged" : argv[0]).filename().string();
    try {
      auto env = boost::this_process::environment();
      env["SLURM_CONF"] = conf();
      m_daemons.emplace_back(bp::search_path(argv[0]),
                             bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()), env,
                             bp::std_in<bp::null, bp::std_out> bp::null,
                             bp::std_err > (m_dir / (name + ".console")).string());
    } catch (const std::exception& e) {
      return name + ": " + e.what();
    }
    return "";
  }

  fs::path m_dir;
  std::vector<bp::child> m_daemons;
};

TEST_F(ReportE2E, ExportedSlurmScriptCompletesUnderSbatch) {
  LocalSlurm slurm(s_dir / "slurm");
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
