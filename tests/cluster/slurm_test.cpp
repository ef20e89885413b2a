// Slurm as the engine, end to end on a local single-node Slurm (tests/cluster/slurm_fixture.h):
// a study whose trials are srun job steps inside `salloc`, trials stopped on timeout or Ctrl-C
// whose steps must not outlive them, and a job array of tune workers sharing one PostgreSQL study.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "tests/cluster/postgres_fixture.h"
#include "tests/cluster/run_command.h"
#include "tests/cluster/slurm_fixture.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/slurm_launch.h"
#include "tuner/storage/storage_url.h"

namespace tune::test_support {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

// One cluster for the whole binary: starting Slurm costs seconds, each test only a job.
class SlurmEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_dir = fs::temp_directory_path() / ("tune-slurm-" + std::to_string(getpid()));
    fs::remove_all(s_dir);
    fs::create_directories(s_dir);
    s_slurm = std::make_unique<LocalSlurm>(s_dir / "slurm");
    s_why_not = s_slurm->start();
  }
  static void TearDownTestSuite() {
    s_slurm.reset();  // stops the daemons
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(s_dir);
  }
  void SetUp() override {
    if (!s_why_not.empty()) GTEST_SKIP() << "cannot start a local Slurm: " << s_why_not;
    m_dir = s_dir / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(m_dir);
  }

  std::string write_study(const std::string& body) {
    const auto path = (m_dir / "study.yaml").string();
    std::ofstream(path) << "output: " << (m_dir / "out").string() << "\n" << body;
    return path;
  }
  // `salloc --nodes=1 --ntasks=2 ARGV...`: ARGV runs here, inside a fresh allocation.
  Ran in_allocation(std::vector<std::string> argv, std::map<std::string, std::string> env = {}) {
    argv.insert(argv.begin(), {"salloc", "--nodes=1", "--ntasks=2", "--quiet"});
    env.merge(s_slurm->env());
    return run(m_dir, std::move(argv), std::move(env), 240);
  }
  // The study's trials, from the SQLite default (out/study.db) or `url`.
  std::vector<search::FrozenTrial> trials(const std::string& name, const std::string& url = "") {
    auto storage = tuner::open_storage(url.empty() ? (m_dir / "out" / "study.db").string() : url);
    EXPECT_TRUE(storage) << storage.error();
    if (!storage) return {};
    auto study = (*storage)->get_study(name);
    EXPECT_TRUE(study) << study.error();
    if (!study) return {};
    return *(*storage)->get_all_trials(study->study_id);
  }

  static inline fs::path s_dir;
  static inline std::unique_ptr<LocalSlurm> s_slurm;
  static inline std::string s_why_not;
  fs::path m_dir;
};

// Each trial is one job step of the allocation tune runs in: both tasks of a trial report the
// allocation's job id and the same step, steps differ between trials, and the trial's
// environment reaches every task.
TEST_F(SlurmEngine, TrialsRunAsJobStepsOfTheAllocation) {
  const auto study = write_study(
      "name: steps\n"
      "launch:\n  slurm: {ntasks: 2, cpus_per_task: 1}\n"
      "command: [bash, -c, 'echo \"$SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID $TUNE_MARK\" >> "
      "\"$1\"; [ \"$SLURM_PROCID\" = 0 ] || exit 0; exec \"$2\" --out \"$3\" --value \"$4\"',\n"
      "          step,"
      "          '{trial_dir}/tasks', '" FAKE_TRIAL
      "', '{trial_dir}', '{x}']\n"
      "env: {TUNE_MARK: 'mark-{x}'}\n"
      "params: {x: [1, 2, 3]}\n"
      "sampler: {type: grid}\n");
  const auto job_file = m_dir / "job";
  auto r = in_allocation({"bash", "-c", "echo \"$SLURM_JOB_ID\" > \"$1\"; shift; exec \"$@\"",
                          "alloc", job_file.string(), TUNE_BIN, "--trials", "3", study});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string job;
  std::ifstream(job_file) >> job;
  ASSERT_FALSE(job.empty());

  const auto ts = trials("steps");
  ASSERT_EQ(ts.size(), 3u);
  std::set<std::string> steps;
  for (const auto& t : ts) {
    ASSERT_EQ(t.state, TrialState::complete) << t.system_attrs.dump();
    const auto command = t.user_attrs.at("command");
    EXPECT_EQ(command[0], "srun") << command.dump();
    const auto name = "tune-steps-" + std::to_string(t.number);
    for (const std::string& flag : std::vector<std::string>{
             "--mpi=pmix", "--ntasks=2", "--cpus-per-task=1", "--job-name=" + name}) {
      EXPECT_NE(std::find(command.begin(), command.end(), flag), command.end())
          << flag << " in " << command.dump();
    }
    EXPECT_EQ(t.system_attrs.at("slurm_step").at("name"), name);
    EXPECT_EQ(t.system_attrs.at("slurm_step").at("cancelled"), 0);

    std::ifstream tasks(t.user_attrs.at("trial_dir").get<std::string>() + "/tasks");
    std::set<std::string> procids;
    std::string task_job, step, procid, mark;
    while (tasks >> task_job >> step >> procid >> mark) {
      EXPECT_EQ(task_job, job);
      EXPECT_EQ(mark, "mark-" + search::param_value_to_string(search::to_external(
                                    t.distributions.at("x"), t.params.at("x"))));
      procids.insert(procid);
      steps.insert(step);
    }
    EXPECT_EQ(procids, (std::set<std::string>{"0", "1"})) << "trial " << t.number;
  }
  EXPECT_EQ(steps.size(), 3u) << "one step per trial";
}

// launch.mpirun works inside an allocation too (`salloc ... tune` with an mpirun study): both
// ranks run, as root (tune adds --allow-run-as-root), within the allocation's job.
TEST_F(SlurmEngine, MpirunInsideTheAllocationRunsItsRanks) {
  const auto study = write_study(
      "name: inside\n"
      "launch:\n  mpirun: {n: 2}\n"
      "command: [bash, -c, 'echo \"$SLURM_JOB_ID $OMPI_COMM_WORLD_RANK\" >> \"$1\"; "
      "[ \"$OMPI_COMM_WORLD_RANK\" = 0 ] || exit 0; exec \"$2\" --out \"$3\" --value 1',\n"
      "          rank, '{trial_dir}/ranks', '" FAKE_TRIAL
      "', '{trial_dir}']\n"
      "params: {x: [1]}\n");
  const auto job_file = m_dir / "job";
  auto r = in_allocation({"bash", "-c", "echo \"$SLURM_JOB_ID\" > \"$1\"; shift; exec \"$@\"",
                          "alloc", job_file.string(), TUNE_BIN, "--trials", "1", study});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string job;
  std::ifstream(job_file) >> job;
  const auto ts = trials("inside");
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].state, TrialState::complete) << ts[0].system_attrs.dump();
  std::ifstream ranks(ts[0].user_attrs.at("trial_dir").get<std::string>() + "/ranks");
  std::set<std::string> seen;
  for (std::string rank_job, rank; ranks >> rank_job >> rank;) {
    EXPECT_EQ(rank_job, job);
    seen.insert(rank);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"0", "1"}));
}

#ifdef TUNE_TRAINER
// The bundled MPI trainer as a 2-rank step: srun --mpi=pmix wires up MPI_COMM_WORLD.
TEST_F(SlurmEngine, MpiTrainerRunsThroughSrunPmix) {
  const auto study = write_study(
      "name: trainer\n"
      "launch:\n  slurm: {nodes: 1, ntasks: 2}\n"
      "command: ['{tune_trainer}', '--out={trial_dir}', --synthetic=200, --hidden=16,\n"
      "          --batch-size=50, --epochs=1, --benchmark, '--iterator-workers={workers}']\n"
      "params: {workers: [0, 1]}\n"
      "sampler: {type: grid}\n");
  auto r = in_allocation({TUNE_BIN, "--trials", "2", study});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto ts = trials("trainer");
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) {
    EXPECT_EQ(t.state, TrialState::complete) << t.system_attrs.dump();
    const auto out = slurp(t.user_attrs.at("trial_dir").get<std::string>() + "/stdout");
    EXPECT_NE(out.find(", 2 ranks,"), std::string::npos) << out;
  }
}
#endif

// The quickstart's oversubscribed winner (issue 35): 2 ranks x 2 OpenMP threads, unbound, tuned
// on this machine. Its exported Slurm script asks for no more CPUs than this node has, says how
// the winner's threads relate to its cores, and sbatch runs it to COMPLETED on the local Slurm of
// the very machine it was tuned on (it asked for 2 x 2 CPUs on 2 and stayed pending forever).
#ifdef TUNE_TRAINER
TEST_F(SlurmEngine, ExportedQuickstartWinnerCompletesUnderSbatch) {
  std::string text = slurp(TUNE_SOURCE_DIR "/studies/quickstart.yaml");
  const auto samples = text.find("--train-samples=");
  ASSERT_NE(samples, std::string::npos);
  text.replace(samples, text.find('\n', samples) - samples, "--train-samples=800");
  // No rule baselines: the one trial is the winner's (the rules would wait behind it).
  const auto rules = text.find("\nrules: all\n");
  ASSERT_NE(rules, std::string::npos);
  text.erase(rules, std::string("\nrules: all").size());
  // One enqueued trial, the winner of the issue, instead of the defaults baseline.
  const auto enqueue = text.find("\nenqueue:\n");
  const auto after = text.find("\nsampler:", enqueue);
  ASSERT_NE(enqueue, std::string::npos);
  ASSERT_NE(after, std::string::npos);
  text.replace(enqueue, after - enqueue,
               "\nenqueue:\n  - {iterator_workers: 0, omp_threads: 2, blas_threads: 1, "
               "opencv_threads: 1,\n     bind_to: none, allreduce: mpi, grad_dtype: fp32, "
               "bucket_mb: 4}\n");
  ASSERT_EQ(text.find("\nrules:"), std::string::npos);
  ASSERT_NE(text.find("probes: {enabled: true}"), std::string::npos) << "probes predict the pools";
  const auto study = write_study(text);
  auto r = run(m_dir, {TUNE_BIN, "--trials", "1", study}, {}, 180);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Where the winner's probes saw contention, the runner enqueues the first guess after it:
  // a waiting trial that --trials 1 leaves for the next run.
  auto ts = trials("quickstart");
  std::erase_if(ts, [](const search::FrozenTrial& t) {
    return t.state == TrialState::waiting && t.system_attrs.value(tuner::k_attr_first_guess, false);
  });
  ASSERT_EQ(ts.size(), 1u);
  ASSERT_EQ(ts[0].state, TrialState::complete) << ts[0].system_attrs.dump();
  const int pus = ts[0].system_attrs.at("tune:machine").at("pus").get<int>();

  const auto script = m_dir / "best.slurm";
  r = run(m_dir, {TUNE_BIN, "export", study, "--format", "slurm", "-o", script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto exported = slurp(script);
  const int cpus = std::max(1, std::min(2, pus / 2));  // 2 threads per rank, 2 ranks on `pus`
  EXPECT_NE(exported.find("\n#SBATCH --ntasks-per-node=2\n#SBATCH --cpus-per-task=" +
                          std::to_string(cpus) + "\n"),
            std::string::npos)
      << exported;
  EXPECT_NE(exported.find("the probes' prediction"), std::string::npos) << exported;
  if (pus < 4) {
    EXPECT_NE(exported.find("# The winner ran 2 ranks x 2 threads on "), std::string::npos)
        << exported;
  }

  // Submitted to the local Slurm of the machine it was tuned on, it runs and completes.
  const auto out = m_dir / "slurm-run";
  auto env = s_slurm->env();
  env["TUNE_OUT"] = out.string();
  const auto job_out = m_dir / "slurm-job.out";
  r = run(m_dir, {"sbatch", "--parsable", "--output=" + job_out.string(), script.string()}, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string job = r.out.substr(0, r.out.find_first_of(";\n"));
  ASSERT_FALSE(job.empty()) << r.out;
  // Poll the job's state with a deadline: scontrol keeps a finished job for MinJobAge (300 s).
  std::string state, line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool released = false;
  for (;;) {
    r = run(m_dir, {"scontrol", "--oneliner", "show", "job", job}, s_slurm->env());
    line = r.out;
    if (!released && line.contains("Reason=launch_failed_requeued_held")) {
      // slurmd could not start the batch step (once in CI: "slurmstepd failed to send return
      // code ...: Resource temporarily unavailable"), so Slurm requeued the job held, eligible
      // two minutes later. That is the local slurmd, not the script: released once, as an
      // operator would, and given its time again.
      released = true;
      run(m_dir, {"scontrol", "release", job}, s_slurm->env());
      run(m_dir, {"scontrol", "update", "JobId=" + job, "StartTime=now"}, s_slurm->env());
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      std::cout << "[ note ] job " << job << " held after a failed launch: released once\n";
    }
    const auto at = line.find("JobState=");
    state = at == std::string::npos ? "" : line.substr(at + 9, line.find(' ', at) - at - 9);
    if (state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT" ||
        state == "NODE_FAIL" || state == "OUT_OF_MEMORY")
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      run(m_dir, {"scancel", job}, s_slurm->env());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_EQ(state, "COMPLETED") << "job " << job << ": " << line << "\n"
                                << slurp(job_out) << exported;
  ASSERT_TRUE(fs::exists(out / "log")) << slurp(job_out);
  const auto log = nlohmann::json::parse(slurp(out / "log"));
  ASSERT_TRUE(log.is_array() && !log.empty());
  EXPECT_GT(log.back().value("elapsed_time", 0.0), 0.0);
}
#endif

// A trial past its timeout, whose task ignores SIGTERM: the trial is FAIL, its task is gone and
// Slurm lists no step of it once tune has moved on (checked inside the same allocation).
TEST_F(SlurmEngine, TimeoutCancelsTheStep) {
  const auto study = write_study(
      "name: hang\ntimeout: 2s\n"
      "launch:\n  slurm: {ntasks: 1}\n"
      "command: ['" FAKE_TRIAL
      "', --out, '{trial_dir}', --mode, hang, --started, "
      "'{trial_dir}/pid']\n"
      "params: {x: [1]}\n");
  const auto steps_file = m_dir / "steps-after";
  auto r = in_allocation({"bash", "-c",
                          "\"${@:2}\"; status=$?; squeue --noheader --steps "
                          "--jobs=\"$SLURM_JOB_ID\" --format=%j > \"$1\"; exit $status",
                          "alloc", steps_file.string(), TUNE_BIN, "--trials", "1", study});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto ts = trials("hang");
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_NE(ts[0].system_attrs.value("fail_reason", "").find("timed out"), std::string::npos)
      << ts[0].system_attrs.dump();
  EXPECT_FALSE(ts[0].system_attrs.at("slurm_step").contains("cancel_error"))
      << ts[0].system_attrs.dump();
  ASSERT_TRUE(fs::exists(steps_file));
  EXPECT_EQ(slurp(steps_file).find("tune-hang-0"), std::string::npos) << slurp(steps_file);
  pid_t task = 0;
  std::ifstream(ts[0].user_attrs.at("trial_dir").get<std::string>() + "/pid") >> task;
  ASSERT_GT(task, 0) << "the task never started";
  EXPECT_TRUE(kill(task, 0) != 0 && errno == ESRCH) << "task " << task << " outlived its trial";
}

// Ctrl-C to tune while a step runs (its task ignores SIGTERM): tune exits 130, the trial is FAIL
// and, still inside the allocation, Slurm lists no step of it and the task is gone.
TEST_F(SlurmEngine, InterruptCancelsTheStep) {
  const auto study = write_study(
      "name: intr\n"
      "launch:\n  slurm: {ntasks: 1}\n"
      "command: ['" FAKE_TRIAL
      "', --out, '{trial_dir}', --mode, hang, --started, "
      "'{trial_dir}/pid']\n"
      "params: {x: [1]}\n");
  const auto tune_pid_file = m_dir / "tune.pid", steps_file = m_dir / "steps-after";
  auto env = boost::this_process::environment();
  env["SLURM_CONF"] = s_slurm->conf();
  boost::process::child alloc(
      boost::process::search_path("salloc"), "--nodes=1", "--ntasks=2", "--quiet", "bash", "-c",
      "\"${@:3}\" & echo $! > \"$1\"; wait $!; status=$?; squeue --noheader --steps "
      "--jobs=\"$SLURM_JOB_ID\" --format=%j > \"$2\"; exit $status",
      "alloc", tune_pid_file.string(), steps_file.string(), TUNE_BIN, "--trials", "1", study, env,
      boost::process::std_out > (m_dir / "alloc.out").string(),
      boost::process::std_err > (m_dir / "alloc.err").string());
  const auto task_pid_file = m_dir / "out/trials/0/pid";
  ASSERT_TRUE(wait_for_file(task_pid_file, std::chrono::seconds(60))) << slurp(m_dir / "alloc.err");
  pid_t tune = 0, task = 0;
  std::ifstream(tune_pid_file) >> tune;
  std::ifstream(task_pid_file) >> task;
  ASSERT_GT(tune, 0);
  ASSERT_EQ(kill(tune, SIGINT), 0);
  std::error_code ec;
  ASSERT_TRUE(alloc.wait_for(std::chrono::seconds(90), ec)) << "salloc did not end";
  EXPECT_EQ(alloc.exit_code(), 130) << slurp(m_dir / "alloc.err");
  const auto ts = trials("intr");
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].state, TrialState::fail);
  EXPECT_NE(ts[0].system_attrs.value("fail_reason", "").find("interrupted"), std::string::npos)
      << ts[0].system_attrs.dump();
  EXPECT_EQ(slurp(steps_file).find("tune-intr-0"), std::string::npos) << slurp(steps_file);
  EXPECT_TRUE(kill(task, 0) != 0 && errno == ESRCH) << "task " << task << " outlived its trial";
}

// The last resort behind every stopped trial: a step whose srun is gone (here: never tune's) is
// found by its name in the allocation and cancelled, and the call returns once it has ended.
TEST_F(SlurmEngine, CancelSlurmStepsEndsALeftoverStep) {
  auto r = run(m_dir, {"salloc", "--no-shell", "--nodes=1", "--ntasks=1"}, s_slurm->env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.err.find("Granted job allocation ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string job = std::to_string(std::stoi(r.err.substr(at + 23)));
  auto env = boost::this_process::environment();
  env["SLURM_CONF"] = s_slurm->conf();
  const auto started = m_dir / "pid";
  boost::process::child step(boost::process::search_path("srun"), "--jobid=" + job,
                             "--job-name=tune-left-3", "--ntasks=1", FAKE_TRIAL, "--out",
                             m_dir.string(), "--mode", "hang", "--started", started.string(), env,
                             boost::process::std_out > boost::process::null,
                             boost::process::std_err > (m_dir / "srun.err").string());
  ASSERT_TRUE(wait_for_file(started, std::chrono::seconds(60))) << slurp(m_dir / "srun.err");
  pid_t task = 0;
  std::ifstream(started) >> task;

  setenv("SLURM_JOB_ID", job.c_str(), 1);
  setenv("SLURM_CONF", s_slurm->conf().c_str(), 1);
  const auto cancelled = tuner::cancel_slurm_steps("tune-left-3");
  const auto again = tuner::cancel_slurm_steps("tune-left-3");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_CONF");
  ASSERT_TRUE(cancelled) << cancelled.error();
  EXPECT_EQ(*cancelled, 1);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(*again, 0) << "nothing left to cancel";
  std::error_code ec;
  EXPECT_TRUE(step.wait_for(std::chrono::seconds(30), ec)) << "srun outlived its step";
  EXPECT_TRUE(kill(task, 0) != 0 && errno == ESRCH) << "task " << task << " outlived its step";
  run(m_dir, {"scancel", job}, s_slurm->env());
}

// `tune export --format slurm-array`: a 2-task array of tune workers on one PostgreSQL study, each
// task on its own (here: the one) node in turn, finishes with distinct trials of that study.
TEST_F(SlurmEngine, WorkerArrayOnAPostgresStudyFinishesWithDistinctTrials) {
  if (auto missing = tune::testing::postgres_missing()) GTEST_SKIP() << *missing;
  auto& server = tune::testing::shared_postgres();
  if (!server) server = std::make_unique<tune::testing::PostgresServer>();
  ASSERT_TRUE(server->started()) << server->error();
  ASSERT_EQ(server->create_database("slurm_array"), "");
  const auto url = server->url("slurm_array");
  const auto study = write_study("name: array\nstorage: " + url +
                                 "\n"
                                 "command: ['" FAKE_TRIAL
                                 "', --out, '{trial_dir}', --value, '{x}']\n"
                                 "params: {x: {type: float, low: 1, high: 9}}\n"
                                 "sampler: {type: random, seed: 7}\n");
  const auto script = m_dir / "workers.sbatch";
  auto r = run(m_dir, {TUNE_BIN, "export", study, "--format", "slurm-array", "-o", script.string(),
                       "--workers", "2", "--trials-per-worker", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "a PostgreSQL study needs no warning";
  const auto text = slurp(script);
  EXPECT_NE(text.find("\n#SBATCH --array=0-1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n#SBATCH --exclusive\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" --storage " + url + " "), std::string::npos) << text;
  r = run(m_dir, {"sbatch", "--wait", script.string()}, s_slurm->env(), 240);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  const auto ts = trials("array", url);
  ASSERT_EQ(ts.size(), 6u);
  std::set<int> numbers;
  std::set<std::string> owners;
  for (const auto& t : ts) {
    EXPECT_EQ(t.state, TrialState::complete) << t.number;
    numbers.insert(t.number);
    owners.insert(t.system_attrs.value("tune:owner", nlohmann::json()).dump());
  }
  EXPECT_EQ(numbers, (std::set<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(owners.size(), 2u) << "two workers, one owner each";
  int outputs = 0;
  for (const auto& e : fs::directory_iterator(m_dir))
    outputs += e.path().filename().string().starts_with("tune-array-workers-") ? 1 : 0;
  EXPECT_EQ(outputs, 2) << "one output file per array task";
}

}  // namespace
}  // namespace tune::test_support
