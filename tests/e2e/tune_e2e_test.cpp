// The `tune` binary end to end: failure modes, kill -9 and resume, Ctrl-C, two processes on one
// database, Optuna reading our database, the read-only commands and bad input.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/launch/launcher.h"
#include "tuner/storage/sqlite_storage.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;

using test_support::read_file;
using test_support::wait_for_file;

class TuneE2E : public test_support::TempDirTest {
 protected:
  TuneE2E() : TempDirTest("tune-e2e-") {}

  std::string write_study(const std::string& body) {
    return test_support::write_file(m_dir / "study.yaml", body);
  }
  // The study's name and output folder: the head of every study file here.
  std::string study_head() const { return "name: e2e\noutput: " + (m_dir / "out").string() + "\n"; }
  std::string base_study(const std::string& extra, const std::string& command_tail = "") {
    return study_head() + "command: ['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}'" +
           command_tail +
           "]\n"
           "sampler: {type: random, seed: 1}\n"
           "params:\n  x: {type: float, low: 1, high: 10}\n" +
           extra;
  }

  // tune with `args`, run in m_dir to its end.
  test_support::CommandOutput run_tune(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run_command(argv, m_dir, {}, "tune");
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "e2e");
  }
  static std::string reason(const search::FrozenTrial& t) {
    return t.system_attrs.value(k_attr_fail_reason, std::string());
  }
};

TEST_F(TuneE2E, EveryFailureModeIsRecordedAndTheStudyGoesOn) {
  const auto study = write_study(
      study_head() +
      "command: ['" FAKE_TRIAL
      "', --out, '{trial_dir}', --mode, '{mode}']\n"
      "timeout: 1s\n"
      "sampler: {type: random, seed: 1}\n"
      "params:\n  mode: [ok, crash, hang, nolog, badjson, nan, segv]\n"
      "enqueue: [{mode: ok}, {mode: crash}, {mode: hang}, {mode: nolog}, {mode: badjson},\n"
      "          {mode: nan}, {mode: segv}]\n"
      "max_failures: 0\n");  // every failure mode, in a row: the study must not stop early
  auto o = run_tune({"--trials", "7", study});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), 7u);
  EXPECT_EQ(ts[0].state, TrialState::complete);
  for (int i = 1; i < 7; ++i) EXPECT_EQ(ts[i].state, TrialState::fail) << i;
  EXPECT_NE(reason(ts[1]).find("exit code 3: fake_trial: crashing on purpose"), std::string::npos)
      << reason(ts[1]);
  EXPECT_NE(reason(ts[2]).find("timed out after 1.0s"), std::string::npos) << reason(ts[2]);
  EXPECT_NE(reason(ts[3]).find("was not written"), std::string::npos) << reason(ts[3]);
  EXPECT_NE(reason(ts[4]).find("not valid JSON"), std::string::npos) << reason(ts[4]);
  EXPECT_NE(reason(ts[5]).find("not finite"), std::string::npos) << reason(ts[5]);
  EXPECT_NE(reason(ts[6]).find("SIGSEGV"), std::string::npos) << reason(ts[6]);
  EXPECT_EQ(ts[1].user_attrs[k_attr_exit_code], 3);
  EXPECT_TRUE(ts[0].user_attrs[k_attr_launched_argv].is_array());
  EXPECT_NE(o.out.find("1 complete, 6 failed, 0 pruned"), std::string::npos) << o.out;
}

TEST_F(TuneE2E, RerunningContinuesTheStudy) {
  const auto study = write_study(base_study(""));
  ASSERT_EQ(run_tune({"--trials", "3", study}).exit_code, 0);
  auto o = run_tune({"--trials", "2", study});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), 5u);
  for (const auto& t : ts) {
    EXPECT_EQ(t.state, TrialState::complete);
    // The fake trial reports exactly the sampled x.
    const double x = t.params.at("x");
    EXPECT_NEAR(*t.value, x, 1e-5);
  }
  EXPECT_NE(o.out.find("5 trials: 5 complete"), std::string::npos) << o.out;
}

// objective: {wall_time: true}: the value is the trial's wall time as tune measured it, whatever
// the program logs (the fake trial's log says 1000), and a failed exit still fails the trial.
TEST_F(TuneE2E, WallTimeObjectiveScoresTheRunItself) {
  const auto study = write_study(
      study_head() + "command: ['" FAKE_TRIAL
                     "', --out, '{trial_dir}', --value, '1000', --step-ms, '{ms}', --mode, "
                     "'{mode}']\n"
                     "objective: {wall_time: true}\n"
                     "sampler: {type: random, seed: 1}\n"
                     "params:\n  ms: [20, 600]\n  mode: [ok, crash]\n"
                     "enqueue: [{ms: 600, mode: ok}, {ms: 20, mode: ok}, {ms: 20, mode: crash}]\n");
  auto o = run_tune({"--trials", "3", study});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(ts[i].state, TrialState::complete) << reason(ts[i]);
    EXPECT_DOUBLE_EQ(*ts[i].value, ts[i].user_attrs.at(k_attr_wall_time).get<double>());
  }
  EXPECT_GE(*ts[0].value, 0.6);
  EXPECT_LT(*ts[0].value, 100.0);  // not the logged 1000
  EXPECT_LT(*ts[1].value, *ts[0].value);
  EXPECT_EQ(ts[2].state, TrialState::fail);
  EXPECT_NE(reason(ts[2]).find("exit code 3"), std::string::npos) << reason(ts[2]);
}

TEST_F(TuneE2E, KillNineMidTrialThenResume) {
  const auto hang_flag = m_dir / "hang";
  const auto started = m_dir / "started";
  std::ofstream(hang_flag) << "1";
  const auto study = write_study(base_study("", ", --hang-if-exists, '" + hang_flag.string() +
                                                    "', --started, '" + started.string() + "'"));
  bp::child tune(TUNE_BIN, "--trials", "3", study, bp::std_out > bp::null, bp::std_err > bp::null);
  ASSERT_TRUE(wait_for_file(started, std::chrono::seconds(30)));
  pid_t trial_pid = 0;
  std::ifstream(started) >> trial_pid;
  ASSERT_EQ(kill(tune.id(), SIGKILL), 0);
  tune.wait();
  // PR_SET_PDEATHSIG takes the trial down with tune; wait for that (bounded).
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (kill(trial_pid, 0) == 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::yield();
  EXPECT_NE(kill(trial_pid, 0), 0) << "the trial outlived tune -9";

  auto before = trials();
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].state, TrialState::running);

  fs::remove(hang_flag);
  auto o = run_tune({"--trials", "2", study});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_NE(reason(ts[0]).find("died"), std::string::npos) << reason(ts[0]);
  EXPECT_EQ(ts[1].state, TrialState::complete);
  EXPECT_EQ(ts[2].state, TrialState::complete);
}

TEST_F(TuneE2E, CtrlCStopsTheTrialRecordsItAndExits) {
  const auto started = m_dir / "started";
  const auto study =
      write_study(base_study("", ", --mode, hang, --started, '" + started.string() + "'"));
  bp::child tune(TUNE_BIN, "--trials", "5", study, bp::std_out > bp::null, bp::std_err > bp::null);
  ASSERT_TRUE(wait_for_file(started, std::chrono::seconds(30)));
  pid_t trial_pid = 0;
  std::ifstream(started) >> trial_pid;
  ASSERT_EQ(kill(tune.id(), SIGINT), 0);
  tune.wait();
  EXPECT_EQ(tune.exit_code(), 130);
  EXPECT_NE(kill(trial_pid, 0), 0) << "the trial survived Ctrl-C";
  auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_NE(reason(ts[0]).find("interrupted"), std::string::npos);
}

TEST_F(TuneE2E, TwoProcessesShareOneDatabase) {
  const auto study = write_study(base_study(""));
  bp::child a(TUNE_BIN, "--trials", "20", "--quiet", study, bp::std_out > bp::null,
              bp::std_err > (m_dir / "a.err").string());
  bp::child b(TUNE_BIN, "--trials", "20", "--quiet", study, bp::std_out > bp::null,
              bp::std_err > (m_dir / "b.err").string());
  a.wait();
  b.wait();
  EXPECT_EQ(a.exit_code(), 0) << read_file(m_dir / "a.err");
  EXPECT_EQ(b.exit_code(), 0) << read_file(m_dir / "b.err");
  auto ts = trials();
  ASSERT_EQ(ts.size(), 40u);
  std::set<int> numbers;
  std::set<int> owners;
  for (const auto& t : ts) {
    numbers.insert(t.number);
    EXPECT_EQ(t.state, TrialState::complete);
    owners.insert(t.system_attrs[k_attr_owner]["pid"].get<int>());
  }
  EXPECT_EQ(numbers.size(), 40u);
  EXPECT_EQ(*numbers.rbegin(), 39);
  EXPECT_EQ(owners.size(), 2u);
}

// A grid runs each point once, in any order, then the study stops by itself even when more
// trials were asked for; the enqueued baseline counts as the grid point it lands on.
TEST_F(TuneE2E, GridRunsEveryPointOnceThenStops) {
  const auto study = write_study(
      study_head() + "command: ['" FAKE_TRIAL
                     "', --out, '{trial_dir}', --value, '{x}', --mode, '{mode}']\n"
                     "sampler: {type: grid, seed: 2, search_space: {x: [1, 2.5, 4]}}\n"
                     "params:\n  x: {type: float, low: 1, high: 10}\n  mode: [ok, nolog]\n"
                     "enqueue:\n  - {x: 2.5, mode: ok}\n");
  auto o = run_tune({"--trials", "20", study});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("every grid point ran"), std::string::npos) << o.out;
  std::set<std::pair<double, double>> points;
  auto ts = trials();
  for (const auto& t : ts) points.emplace(t.params.at("x"), t.params.at("mode"));
  EXPECT_EQ(ts.size(), 6u);
  EXPECT_EQ(points.size(), 6u);
  // Running it again finds nothing left to do.
  auto again = run_tune({"--trials", "5", study});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(trials().size(), 6u);
}

TEST_F(TuneE2E, BestAndTrialsCommands) {
  const auto study = write_study(base_study(""));
  ASSERT_EQ(run_tune({"--trials", "4", "--quiet", study}).exit_code, 0);
  auto ts = trials();
  const search::FrozenTrial* best = &ts[0];
  for (const auto& t : ts) {
    if (*t.value < *best->value) best = &t;
  }
  auto b = run_tune({"best", study});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("best trial: #" + std::to_string(best->number)), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("4 complete, 0 failed, 0 pruned"), std::string::npos) << b.out;
  auto db = run_tune({"best", (m_dir / "out" / "study.db").string()});
  EXPECT_EQ(db.out, b.out);
  auto t = run_tune({"trials", study});
  ASSERT_EQ(t.exit_code, 0);
  int lines = 0;
  for (char c : t.out) lines += c == '\n';
  EXPECT_EQ(lines, 5) << t.out;  // header + 4 trials
}

TEST_F(TuneE2E, BadInputIsOneLineAndNonZero) {
  auto missing = run_tune({"--trials", "1", (m_dir / "nope.yaml").string()});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("tune: error: "), std::string::npos);
  EXPECT_NE(missing.err.find("nope.yaml: cannot read"), std::string::npos);

  const auto study = write_study(base_study("bogus_key: 1\n"));
  auto bad = run_tune({"--trials", "1", study});
  EXPECT_EQ(bad.exit_code, 2);  // bad input (docs/report-confirm-export.md, "Exit status")
  EXPECT_NE(bad.err.find("study.yaml:7: key 'bogus_key': unknown key"), std::string::npos)
      << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1);

  auto sampler = run_tune(
      {"--trials", "1",
       write_study(base_study("").replace(base_study("").find("random"), 6, "annealing"))});
  EXPECT_NE(sampler.exit_code, 0);
  EXPECT_NE(sampler.err.find("sampler"), std::string::npos) << sampler.err;
}

// One meaning per exit status in every subcommand (docs/report-confirm-export.md, "Exit status"): a
// database that is there but cannot be read (a corrupt file, a server that does not answer) is a
// failure to carry the command out, 1; only what the user typed wrong (a flag, a storage URL's
// option, a study file that is not there) is bad input, 2. Each error is one line.
TEST_F(TuneE2E, ExitStatusMeansTheSameInEverySubcommand) {
  const auto study = write_study(base_study(""));
  const std::string db = (m_dir / "out" / "study.db").string();
  fs::create_directories(m_dir / "out");
  test_support::write_file(db, std::string(4096, 'x'));  // no SQLite header: corrupt
  // Nothing listens on port 1 of the loopback; the first connection is tried once, and a
  // short retry_for bounds any later one.
  const std::string down = "postgresql://tune@127.0.0.1:1/tune?connect_timeout=2&retry_for=200ms";
  const auto expect_status = [&](const std::vector<std::string>& args, int status) {
    const auto r = run_tune(args);
    std::string line;
    for (const auto& a : args) line += a + ' ';
    EXPECT_EQ(r.exit_code, status) << line << "\n" << r.err;
    EXPECT_TRUE(r.err.starts_with("tune: error: ")) << line << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << line << "\n" << r.err;
  };
  // The read-only commands and one that writes (confirm adds re-runs), on the study file and on
  // the database itself. slurm-array reads the study file a database names; given the study
  // file, it writes the workers' script without opening the database.
  const std::vector<std::string> slurm_array = {"export", "--format", "slurm-array", "--workers",
                                                "2"};
  const std::vector<std::vector<std::string>> commands = {{"best"},   {"trials"},  {"report"},
                                                          {"export"}, {"confirm"}, slurm_array};
  expect_status({"--trials", "1", study}, 1);
  for (const auto& command : commands) {
    for (const auto& target : {study, db}) {
      if (command == slurm_array && target == study) continue;
      auto args = command;
      args.push_back(target);
      expect_status(args, 1);
    }
  }
  expect_status({"--trials", "1", "--storage", down, study}, 1);
  for (const auto& command : commands) {
    auto on_url = command;
    on_url.push_back(down);
    expect_status(on_url, 1);
    if (command == slurm_array) continue;
    auto overridden = command;
    overridden.insert(overridden.end(), {"--storage", down, study});
    expect_status(overridden, 1);
  }
  // Bad input: a flag, a storage URL's option, a study file that is not there.
  expect_status({"--trials", "1", "--no-such-flag", study}, 2);
  for (const auto& command : commands) {
    auto flag = command;
    flag.insert(flag.end(), {"--no-such-flag", study});
    expect_status(flag, 2);
    auto option = command;
    option.insert(option.end(), {"--storage", "sqlite:///" + db + "?grace_period=abc", study});
    expect_status(option, 2);
    auto missing = command;
    missing.push_back((m_dir / "missing.yaml").string());
    expect_status(missing, 2);
  }
  expect_status({"--trials", "1", "--storage", "sqlite:///" + db + "?grace_period=abc", study}, 2);
  expect_status({"--trials", "1", (m_dir / "missing.yaml").string()}, 2);
  expect_status({"--trials", "1", "--storage", "postgresql://tune@127.0.0.1:1/x?sslmode", study},
                2);  // libpq cannot read the URL: no '=' after sslmode
  expect_status({"best", "postgresql://tune@[::1/x"}, 2);
}

TEST_F(TuneE2E, OptunaLoadsOurStudy) {
  if (system("/usr/bin/python3 -c 'import optuna' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-optuna is not installed (scripts/install-deps.sh installs it)";
  }
  const auto study =
      write_study(study_head() + "command: ['" FAKE_TRIAL
                                 "', --out, '{trial_dir}', --value, '{x}', --mode, '{mode}']\n"
                                 "sampler: {type: random, seed: 5}\n"
                                 "params:\n  x: {type: float, low: 0.5, high: 8, log: true}\n"
                                 "  n: {type: int, low: 1, high: 9, step: 2}\n"
                                 "  mode: [ok, ok, crash, null]\n");
  ASSERT_EQ(run_tune({"--trials", "8", "--quiet", study}).exit_code, 0);
  auto ts = trials();
  const search::FrozenTrial* best = nullptr;
  int complete = 0, failed = 0;
  for (const auto& t : ts) {
    if (t.state == TrialState::complete) {
      ++complete;
      if (!best || *t.value < *best->value) best = &t;
    } else if (t.state == TrialState::fail) {
      ++failed;
    }
  }
  ASSERT_NE(best, nullptr);
  const auto script = (m_dir / "load.py").string();
  std::ofstream(script)
      << "import optuna, sys, json\n"
         "s = optuna.load_study(study_name='e2e', storage='sqlite:///' + sys.argv[1])\n"
         "ts = s.get_trials(deepcopy=False)\n"
         "print(json.dumps({'n': len(ts), 'complete': sum(t.state.name == 'COMPLETE' for t in "
         "ts),\n"
         "  'fail': sum(t.state.name == 'FAIL' for t in ts), 'best_number': s.best_trial.number,\n"
         "  'best_value': s.best_value, 'best_params': s.best_params,\n"
         "  'cmd': s.best_trial.user_attrs['command']}))\n";
  const auto py = test_support::run_command(
      {"/usr/bin/python3", script, (m_dir / "out" / "study.db").string()}, m_dir, {}, "py");
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto j = nlohmann::json::parse(py.out);
  EXPECT_EQ(j["n"], static_cast<int>(ts.size()));
  EXPECT_EQ(j["complete"], complete);
  EXPECT_EQ(j["fail"], failed);
  EXPECT_EQ(j["best_number"], best->number);
  EXPECT_DOUBLE_EQ(j["best_value"].get<double>(), *best->value);
  EXPECT_DOUBLE_EQ(
      j["best_params"]["x"].get<double>(),
      std::get<double>(search::to_external(best->distributions.at("x"), best->params.at("x"))));
  EXPECT_EQ(j["best_params"]["n"].get<int>(),
            std::get<std::int64_t>(
                search::to_external(best->distributions.at("n"), best->params.at("n"))));
  EXPECT_TRUE(j["cmd"].is_array());
}

}  // namespace
}  // namespace tune::tuner

namespace tune::tuner {
namespace {

// The second shipped study (issue 16): tunes the gradient exchange over the shaped two-host link,
// launched across the namespace hosts with a rankfile, scored by samples/s under an accuracy
// constraint; its baseline is plain fp32 data parallelism. Running it needs the hosts up
// (bench/trainer/two_hosts.sh runs the same settings); loading it needs nothing.
TEST(ShippedStudies, TwoHostsStudyLoads) {
  auto spec = load_study_spec(TUNE_SOURCE_DIR "/studies/two-hosts.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->name, "two-hosts");
  EXPECT_EQ(spec->direction, search::Direction::maximize);
  EXPECT_EQ(spec->objective.key, "samples_per_sec");
  ASSERT_EQ(spec->constraints.size(), 1u);
  EXPECT_EQ(spec->launch.hostfile, "/tmp/tune-two-hosts/hostfile");
  EXPECT_NE(std::find(spec->launch.extra.begin(), spec->launch.extra.end(), "--rankfile"),
            spec->launch.extra.end());
  std::set<std::string> names;
  for (const auto& [name, distribution] : spec->space) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"exchange", "allreduce", "grad_dtype", "warm_start",
                                          "bucket_mb", "block_steps"}));
  ASSERT_EQ(spec->enqueue.size(), 1u);
  EXPECT_EQ(spec->enqueue[0].at("grad_dtype"), search::ParamValue(std::string("fp32")));
}

}  // namespace
}  // namespace tune::tuner

#ifdef TUNE_TRAINER
namespace tune::tuner {
namespace {

// The shipped quickstart study, shrunk to a tiny budget: real mpirun, real trainer, real data.
TEST_F(TuneE2E, QuickstartStudyRunsTheBundledTrainer) {
  std::string text = test_support::read_file(TUNE_SOURCE_DIR "/studies/quickstart.yaml");
  const auto at = text.find("--train-samples=");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('\n', at) - at, "--train-samples=800");
  text += "output: " + (m_dir / "out").string() + "\n";
  const auto study = write_study(text);
  // The study names {tune_trainer}; the test binary's tune sits next to it in build/bin.
  auto o = run_tune({"--trials", "3", study});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  auto ts = test_support::stored_trials(m_dir / "out" / "study.db", "quickstart");
  // The rule baselines (and a first guess) the three trials left enqueued wait for the next run.
  std::erase_if(ts, [](const search::FrozenTrial& t) { return t.state == TrialState::waiting; });
  ASSERT_EQ(ts.size(), 3u);
  // Trial 0 is the enqueued framework-defaults baseline; the rules' trials come right after.
  EXPECT_TRUE(ts[0].system_attrs.contains(k_attr_fixed_params));
  EXPECT_TRUE(ts[1].system_attrs.contains(k_attr_rules)) << ts[1].system_attrs.dump();
  int complete = 0;
  for (const auto& t : ts) {
    if (t.state == TrialState::complete) {
      ++complete;
      EXPECT_GT(*t.value, 0.0);
      const auto cmd = t.user_attrs[k_attr_launched_argv];
      EXPECT_NE(cmd[0].get<std::string>().find("mpirun"), std::string::npos);
    } else {
      ADD_FAILURE() << "trial " << t.number << ": " << reason(t);
    }
  }
  EXPECT_EQ(complete, 3);
}

// Issue 5's promise on the real trainer: the framework-defaults baseline is flagged as
// oversubscribed before and during its run, and the winner (1 thread per library, bound ranks)
// is not.
TEST_F(TuneE2E, DefaultsBaselineIsFlaggedAndTheBestTrialIsNot) {
  const auto study = write_study(
      "name: e2e\n"
      "direction: minimize\n"
      "output: " +
      (m_dir / "out").string() +
      "\n"
      "launch: {mpirun: {n: 2, bind_to: '{bind_to}', oversubscribe: true}}\n"
      "command: ['{tune_trainer}', '--out={trial_dir}', "
      "'--data-dir=/usr/share/datasets/fashion-mnist', '--train-samples=4000', '--epochs=1', "
      "'--benchmark', '--iterator-workers={iterator_workers}']\n"
      "env: {OMP_NUM_THREADS: '{threads}', OPENBLAS_NUM_THREADS: '{threads}'}\n"
      "params:\n"
      "  iterator_workers: [null, 0]\n"
      "  threads: [null, 1]\n"
      "  bind_to: [none, core]\n"
      "enqueue:\n"
      "  - {iterator_workers: null, threads: null, bind_to: none}\n"
      "  - {iterator_workers: 0, threads: 1, bind_to: core}\n"
      "sampler: {type: random, seed: 3}\n"
      "probes: {enabled: true}\n");
  auto o = run_tune({"--trials", "2", "--quiet", study});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) {
    ASSERT_EQ(t.state, TrialState::complete) << "trial " << t.number << ": " << reason(t);
    ASSERT_TRUE(t.system_attrs.contains(k_attr_probe_verdict)) << t.system_attrs.dump();
  }
  const auto& baseline = ts[0].system_attrs[k_attr_probe_verdict];
  EXPECT_EQ(baseline["predicted_oversubscribed"], true) << baseline.dump();
  EXPECT_NE(baseline["diagnosis"].get<std::string>(), "") << baseline.dump();
  const auto& best = *std::min_element(
      ts.begin(), ts.end(), [](const auto& a, const auto& b) { return *a.value < *b.value; });
  EXPECT_EQ(best.number, 1) << "defaults " << *ts[0].value << " s vs tuned " << *ts[1].value
                            << " s";
  const auto& verdict = best.system_attrs[k_attr_probe_verdict];
  EXPECT_EQ(verdict["predicted_oversubscribed"], false) << verdict.dump();
  EXPECT_EQ(verdict["observed_oversubscribed"], false) << verdict.dump();
}

}  // namespace
}  // namespace tune::tuner
#endif

namespace tune::tuner {
namespace {

TEST_F(TuneE2E, StudyTimeLimitStopsTheRunningTrialCleanly) {
  const auto study = write_study(base_study("", ", --mode, hang"));
  const auto t0 = std::chrono::steady_clock::now();
  auto o = run_tune({"--trials", "5", "--time-limit", "1s", study});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_LT(took, 10.0);
  auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_EQ(reason(ts[0]), "stopped: the study's --time-limit was reached");
  EXPECT_NE(o.out.find("study --time-limit of 1s reached; no new trials\n"), std::string::npos)
      << o.out;
}

// The command line's conventions (issue 23): `tune help`, a mistyped command's suggestion, the
// order `tune COMMAND ... STUDY`, --version, an "Examples:" block in every command's --help, and
// the renamed flags.

// The command names as `tune help` lists them: the first word of each line under "Commands:".
std::vector<std::string> listed_commands(const std::string& help) {
  std::vector<std::string> names;
  const auto from = help.find("\nCommands:\n");
  if (from == std::string::npos) return names;
  std::istringstream lines(help.substr(from + 11));
  for (std::string line; std::getline(lines, line) && !line.empty();) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

TEST_F(TuneE2E, HelpListsTheCommandsOneLineEach) {
  const auto o = run_tune({"help"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("\nUsage: tune [OPTIONS] STUDY.yaml "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\n       tune COMMAND [OPTIONS] ... "), std::string::npos) << o.out;
  EXPECT_EQ(listed_commands(o.out),
            (std::vector<std::string>{"best", "trials", "report", "confirm", "export", "probe",
                                      "init", "guess", "rules", "help"}))
      << o.out;
  EXPECT_NE(o.out.find("\n  report   Report a study: "), std::string::npos) << o.out;
}

TEST_F(TuneE2E, HelpCommandPrintsThatCommandsHelp) {
  const auto help = run_tune({"help", "report"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("\nUsage: tune report [OPTIONS] STUDY\n"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--no-importance"), std::string::npos) << help.out;
  const auto flag = run_tune({"report", "--help"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(help.out, flag.out);
}

TEST_F(TuneE2E, MistypedCommandSuggestsTheNearestOne) {
  auto o = run_tune({"reprot"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tune: error: unknown command 'reprot'; did you mean 'report'? (tune help lists the "
            "commands)\n");
  o = run_tune({"tirals", "study.yaml"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("did you mean 'trials'?"), std::string::npos) << o.err;
  o = run_tune({"--trials", "3", "exprot"});  // the word after the options is the one looked at
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("did you mean 'export'?"), std::string::npos) << o.err;
  o = run_tune({"help", "confrim"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err,
            "tune: error: unknown command 'confrim'; did you mean 'confirm'? (tune help lists the "
            "commands)\n");
  o = run_tune({"frobnicate"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err,
            "tune: error: unknown command 'frobnicate' and no study file of that name (tune help "
            "lists the commands)\n");
  // A path is a study file, as before: a missing one is reported as such.
  o = run_tune({"missing.yaml"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("missing.yaml: cannot read the study file"), std::string::npos) << o.err;
}

TEST_F(TuneE2E, ExistingFileNamedLikeATypoIsStillAStudyFile) {
  test_support::write_file(m_dir / "reprot", base_study(""));
  const auto o = run_tune({"--trials", "1", "--quiet", "reprot"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(trials().size(), 1u);
}

TEST_F(TuneE2E, CommandComesBeforeTheStudyFile) {
  const auto study = write_study(base_study(""));
  auto o = run_tune({study, "report"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err,
            "tune: error: 'report' after the study file: the command comes first (tune "
            "report " +
                study + ")\n");
  // The options of a study run do not go with a command (they would be ignored).
  o = run_tune({"--trials", "3", "report", study});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--trials before `report` is an option of a study run"), std::string::npos)
      << o.err;
}

TEST_F(TuneE2E, VersionPrintsTheProjectVersion) {
  for (const char* flag : {"--version", "-V"}) {
    const auto o = run_tune({flag});
    EXPECT_EQ(o.exit_code, 0) << flag << o.err;
    EXPECT_EQ(o.out, "tune " TUNE_VERSION "\n") << flag;
  }
}

TEST_F(TuneE2E, EveryCommandsHelpEndsWithExamples) {
  const auto help = run_tune({"help"});
  auto commands = listed_commands(help.out);
  ASSERT_GE(commands.size(), 8u) << help.out;
  commands.insert(commands.begin(), "");  // tune --help itself
  for (const auto& command : commands) {
    auto args = command.empty() ? std::vector<std::string>{} : std::vector<std::string>{command};
    args.push_back("--help");
    const auto o = run_tune(args);
    EXPECT_EQ(o.exit_code, 0) << "tune " << command << " --help: " << o.err;
    EXPECT_NE(o.out.find("\nExamples:\n  tune " + command), std::string::npos)
        << "tune " << command << " --help:\n"
        << o.out;
  }
}

TEST_F(TuneE2E, RenamedFlagsNameTheirNewSpelling) {
  const auto study = write_study(base_study(""));
  auto o = run_tune({"--timeout", "30m", study});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err,
            "tune: error: --timeout is now --time-limit (it bounds the whole run; each trial's own "
            "limit is the study file's timeout:)\n");
  EXPECT_TRUE(trials().empty()) << "nothing ran";
  o = run_tune({"export", study, "--format", "slurm-array", "--workers", "2", "--trials", "3"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_NE(o.err.find("tune: error: --trials is now --trials-per-worker here"), std::string::npos)
      << o.err;
  o = run_tune(
      {"export", study, "--format", "slurm-array", "--workers", "2", "--trials-per-worker", "3"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("\n#SBATCH --array=0-1\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" --trials 3 --storage "), std::string::npos) << o.out;
  o = run_tune({"export", study, "--trials-per-worker", "3"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--workers and --trials-per-worker go with --format slurm-array"),
            std::string::npos)
      << o.err;
  const auto help = run_tune({"export", "--help"});
  EXPECT_NE(help.out.find("--trials-per-worker"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("--trials "), std::string::npos) << "the old spelling is hidden";
  const auto root_help = run_tune({"--help"});
  EXPECT_NE(root_help.out.find("--time-limit DURATION"), std::string::npos) << root_help.out;
  EXPECT_EQ(root_help.out.find("--timeout"), std::string::npos) << root_help.out;
}

TEST_F(TuneE2E, HopelessTrialsArePrunedFromTheirLog) {
  // Two fast baselines (value 1), then slow trials (value 50): the median pruner, fed each
  // log entry as an intermediate value, stops the slow ones early.
  const auto study =
      write_study(study_head() + "command: ['" FAKE_TRIAL
                                 "', --out, '{trial_dir}', --value, '{x}', --steps, '20', "
                                 "--step-ms, '{ms}']\n"
                                 "sampler: {type: random, seed: 1}\n"
                                 "pruner: {type: median, n_startup_trials: 2, n_warmup_steps: 2}\n"
                                 "params:\n  x: [1, 50]\n  ms: [1, 150]\n"
                                 "enqueue: [{x: 1, ms: 1}, {x: 1, ms: 1}, {x: 50, ms: 150}]\n");
  auto o = run_tune({"--trials", "3", study});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(ts[0].state, TrialState::complete);
  EXPECT_EQ(ts[1].state, TrialState::complete);
  EXPECT_EQ(ts[2].state, TrialState::pruned) << reason(ts[2]);
  EXPECT_NE(reason(ts[2]).find("pruned at step"), std::string::npos);
  ASSERT_FALSE(ts[2].intermediate_values.empty());
  EXPECT_LT(ts[2].intermediate_values.rbegin()->first, 20);  // stopped before the end
  EXPECT_TRUE(ts[2].value.has_value());
}

}  // namespace
}  // namespace tune::tuner
