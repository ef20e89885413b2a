// Load that is not the job's, end to end (issue 36 point 4): a real burner (one process spinning
// on each CPU tune may use, started by the fixture and stopped by its pids) runs beside a short
// study of a trivial job. The test reads tune's output until it says it waits for the machine to
// be quiet (the output is the synchronisation, never a sleep), stops the burner, and checks the
// database: the trial measured beside the burner is marked, a re-run of its setting was
// measured quietly, and the best trial's value does not come from a run measured under load.
#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"
#include "tuner/run/load_check.h"

extern char** environ;

namespace tune::tuner {
namespace {

using search::FrozenTrial;

// One spinning child per CPU this process may run on; stopped (SIGKILL, reaped) by its pids.
class Burner {
 public:
  Burner() {
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 2;
    for (int i = 0; i < cpus; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        for (;;) asm volatile("" ::: "memory");  // spins; the barrier keeps the loop
      }
      if (pid > 0) m_pids.push_back(pid);
    }
  }
  ~Burner() { stop(); }
  Burner(const Burner&) = delete;
  Burner& operator=(const Burner&) = delete;
  void stop() {
    for (pid_t p : m_pids) kill(p, SIGKILL);
    for (pid_t p : m_pids) waitpid(p, nullptr, 0);
    m_pids.clear();
  }
  std::size_t size() const { return m_pids.size(); }

 private:
  std::vector<pid_t> m_pids;
};

// `tune` with its stdout on a pipe read line by line, in an environment without
// TUNE_LOAD_CHECK (the fixtures turn the judging off for the other tests: load_check.h).
class TuneProcess {
 public:
  explicit TuneProcess(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe(fds) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::strncmp(*e, "TUNE_LOAD_CHECK=", 16) != 0) env.push_back(*e);
    env.push_back(nullptr);
    if (posix_spawn(&m_pid, args[0], &actions, nullptr, args.data(), env.data()) != 0) m_pid = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    m_out = fds[0];
  }
  ~TuneProcess() {
    if (m_pid > 0) {
      kill(m_pid, SIGKILL);
      waitpid(m_pid, nullptr, 0);
    }
    if (m_out >= 0) close(m_out);
  }
  bool started() const { return m_pid > 0; }
  // The next whole line (without its newline); none at the end of the output.
  std::optional<std::string> line() {
    while (true) {
      if (const auto nl = m_pending.find('\n'); nl != std::string::npos) {
        std::string l = m_pending.substr(0, nl);
        m_pending.erase(0, nl + 1);
        m_all += l + '\n';
        return l;
      }
      char buf[4096];
      const ssize_t n = read(m_out, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      m_pending.append(buf, static_cast<std::size_t>(n));
    }
  }
  // Reads to the end and waits for the exit; its exit code (-1: a signal).
  int finish() {
    while (line()) {
    }
    int status = 0;
    waitpid(m_pid, &status, 0);
    m_pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& output() const { return m_all; }

 private:
  pid_t m_pid = -1;
  int m_out = -1;
  std::string m_pending, m_all;
};

class LoadE2E : public test_support::TempDirTest {
 protected:
  LoadE2E() : TempDirTest("tune-load-e2e-") {}
};

// The quiet re-run needs a machine that is quiet once the burner stops: where other work keeps
// it busy (a shared machine's builds), a test first waits, a minute at most, for two quiet
// half-second samples in a row, as tune itself waits.
void wait_for_a_quiet_machine() {
  const auto sample = live_load_sample(0.5);
  int quiet = 0;
  double busy = 0;
  for (int i = 0; i < 120 && quiet < 2; ++i) {
    const auto b = sample();
    ASSERT_TRUE(b) << "/proc/stat cannot be read";
    busy = *b;
    quiet = busy <= 0.25 ? quiet + 1 : 0;
  }
  ASSERT_EQ(quiet, 2) << "the machine stayed busy with other work (" << busy
                      << " CPUs' worth) for a minute: this test needs one that is quiet once its "
                         "burner stops";
}

// Reads tune's output until it waits for a quiet machine, then stops the burner; tune's exit.
int run_beside(Burner& burner, TuneProcess& tune, bool& waited) {
  waited = false;
  while (const auto l = tune.line()) {
    if (l->starts_with("tune: waiting for the machine to be quiet: ")) {
      waited = true;
      break;
    }
  }
  burner.stop();
  return tune.finish();
}

TEST_F(LoadE2E, ATrialBesideABurnerIsMarkedAndMeasuredAgainOnceTheMachineIsQuiet) {
  wait_for_a_quiet_machine();
  if (HasFatalFailure()) return;
  // A trivial job: 0.4 s asleep, then its value (x), the fake trial's elapsed_time, minimised.
  // The baseline, x = 1, is the best setting and runs first, beside the burner.
  const auto study = test_support::write_file(
      m_dir / "study.yaml",
      "name: load\noutput: " + (m_dir / "out").string() +
          "\ncommand: ['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}', --step-ms, 400]\n"
          "sampler: {type: grid, seed: 1}\n"
          "params:\n  x: [1, 2, 3]\n"
          "enqueue: [{x: 1}]\n"
          "probes: {enabled: false}\n"
          "load: {wait: 10s}\n");
  Burner burner;
  ASSERT_GT(burner.size(), 0u);
  TuneProcess tune({TUNE_BIN, "--trials", "3", study});
  ASSERT_TRUE(tune.started());
  bool waited = false;
  const int exit_code = run_beside(burner, tune, waited);
  ASSERT_TRUE(waited) << tune.output();
  ASSERT_EQ(exit_code, 0) << tune.output();
  EXPECT_NE(tune.output().find("(trial 0 was measured under that load)"), std::string::npos)
      << tune.output();
  // The live line of trial 0 said it, and tune said when the machine was quiet again.
  EXPECT_NE(tune.output().find("#0 COMPLETE"), std::string::npos) << tune.output();
  EXPECT_NE(tune.output().find("measured under load: "), std::string::npos) << tune.output();
  EXPECT_NE(tune.output().find("tune: the machine is quiet after"), std::string::npos)
      << tune.output();

  const auto trials = test_support::stored_trials(m_dir / "out" / "study.db", "load");
  ASSERT_EQ(trials.size(), 3u) << tune.output();
  const FrozenTrial& burdened = trials[0];
  ASSERT_TRUE(measured_under_load(burdened)) << burdened.user_attrs.dump();
  const auto& mark = burdened.user_attrs.at(k_attr_measured_under_load);
  EXPECT_GT(mark.at("external_cpus").get<double>(), mark.at("limit").get<double>());
  EXPECT_GT(burdened.user_attrs.at(k_attr_external_cpu).get<double>(), 0.25);
  // Trial 1 re-measured trial 0's setting, once the machine was quiet.
  const FrozenTrial& again = trials[1];
  EXPECT_EQ(rerun_of(again), 0);
  EXPECT_EQ(again.system_attrs.value(k_attr_rerun_cause, ""), "load");
  EXPECT_EQ(again.params, burdened.params);
  EXPECT_FALSE(measured_under_load(again)) << again.user_attrs.dump();
  ASSERT_TRUE(rerun_value(again));
  ASSERT_TRUE(again.user_attrs.contains(k_attr_external_cpu));
  EXPECT_LE(again.user_attrs.at(k_attr_external_cpu).get<double>(), 0.25 + 0.1);
  // Trial 0's believed value is its quiet re-run's; its own run is kept as its search value.
  ASSERT_TRUE(burdened.value);
  EXPECT_DOUBLE_EQ(*burdened.value, *rerun_value(again));
  EXPECT_TRUE(burdened.user_attrs.contains(k_attr_search_value));
  // The ranking: every ranked trial's value was measured without load.
  search::VectorStudyView view(search::Direction::minimize);
  for (const auto& t : trials) view.add(t);
  const FrozenTrial* best = best_trial(view);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->number, 0);  // x = 1, as measured quietly by trial 1
  for (const FrozenTrial* t : ranked_trials(view))
    EXPECT_TRUE(trusted_run(*t) || !rerun_values_of(view, t->number).empty()) << t->number;
}

// Issue 48 point 2: the first guess is made from a baseline measured on a quiet machine. Beside
// the burner the baseline is marked; tune says the guess waits for its quiet re-run, and the
// guess the study records is worked out from that re-run, its reasoning naming it.
TEST_F(LoadE2E, ABaselineBesideABurnerGivesNoGuessUntilItsQuietReRun) {
  wait_for_a_quiet_machine();
  if (HasFatalFailure()) return;
  const auto study = test_support::write_file(
      m_dir / "study.yaml",
      "name: guess\noutput: " + (m_dir / "out").string() +
          "\ncommand: ['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}', --step-ms, 400]\n"
          "env: {OMP_NUM_THREADS: '{threads}'}\n"
          "params:\n  x: [1, 2]\n  threads: [null, 1, 2]\n"
          "enqueue: [{x: 1, threads: null}]\n"
          "probes: {enabled: true}\n"
          "load: {wait: 10s}\n");
  Burner burner;
  ASSERT_GT(burner.size(), 0u);
  TuneProcess tune({TUNE_BIN, "--trials", "2", study});
  ASSERT_TRUE(tune.started());
  bool waited = false;
  // The line that the guess waits comes before the wait for a quiet machine.
  const int exit_code = run_beside(burner, tune, waited);
  ASSERT_TRUE(waited) << tune.output();
  ASSERT_EQ(exit_code, 0) << tune.output();
  const auto& out = tune.output();
  const auto waits = out.find(
      "first guess: after trial 1, the baseline measured again on a quiet machine (#0 ran beside ");
  ASSERT_NE(waits, std::string::npos) << out;
  EXPECT_LT(waits, out.find("tune: waiting for the machine to be quiet: ")) << out;
  const auto trials = test_support::stored_trials(m_dir / "out" / "study.db", "guess");
  ASSERT_GE(trials.size(), 2u) << out;
  ASSERT_TRUE(measured_under_load(trials[0])) << trials[0].user_attrs.dump();
  EXPECT_EQ(rerun_of(trials[1]), 0);
  EXPECT_FALSE(measured_under_load(trials[1])) << trials[1].user_attrs.dump();
  // No trial was enqueued as a guess before the re-run ended: every guess trial comes after it.
  for (const auto& t : trials) {
    if (t.system_attrs.value(k_attr_first_guess, false)) {
      EXPECT_GT(t.number, 1) << out;
    }
  }
  // The study's record of the guess: made from the re-run, and its reasoning says so.
  const auto attrs = test_support::study_user_attrs(m_dir / "out" / "study.db", "guess");
  ASSERT_TRUE(attrs.contains(k_attr_study_first_guess)) << attrs.dump() << out;
  const auto& mark = attrs[k_attr_study_first_guess];
  EXPECT_EQ(mark.value("from_trial", -1), 1) << mark.dump();
  ASSERT_TRUE(mark.contains("reasoning")) << mark.dump();
  EXPECT_TRUE(mark["reasoning"][0].get<std::string>().starts_with(
      "from trial 1, the baseline #0 measured again on a quiet machine (#0 ran beside "))
      << mark.dump();
}

// Issue 48 point 5: a machine that is never quiet (a burner for the study's whole length). The
// bounded wait is said once and spent, the study goes on and ends, within its time limit, with a
// best, and every output that names it says it was measured under load.
TEST_F(LoadE2E, AStudyOnAMachineThatIsNeverQuietEndsWithABestMarkedMeasuredUnderLoad) {
  const auto study = test_support::write_file(
      m_dir / "study.yaml",
      "name: busy\noutput: " + (m_dir / "out").string() +
          "\ncommand: ['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}', --step-ms, 300]\n"
          "sampler: {type: grid, seed: 1}\n"
          "params:\n  x: [1, 2, 3]\n"
          "enqueue: [{x: 2}]\n"
          "probes: {enabled: false}\n"
          "load: {wait: 2s}\n");
  Burner burner;
  ASSERT_GT(burner.size(), 0u);
  TuneProcess tune({TUNE_BIN, "--trials", "4", "--time-limit", "120", study});
  ASSERT_TRUE(tune.started());
  const int exit_code = tune.finish();  // the burner runs throughout
  const auto run = tune.output();
  ASSERT_EQ(exit_code, 0) << run;
  const auto said = [&](const std::string& text) {
    std::size_t n = 0;
    for (auto p = run.find(text); p != std::string::npos; p = run.find(text, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(said("tune: waiting for the machine to be quiet: "), 1u) << run;
  EXPECT_EQ(said("tune: the machine stayed busy ("), 1u) << run;
  EXPECT_NE(run.find("best trial: #"), std::string::npos) << run;
  EXPECT_NE(run.find("  measured under load: no trial ran on a quiet machine"), std::string::npos)
      << run;
  const auto best = test_support::run_command({TUNE_BIN, "best", study}, m_dir, {}, "tune");
  EXPECT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(best.out.find("  measured under load: no trial ran on a quiet machine"),
            std::string::npos)
      << best.out;
  const auto json =
      test_support::run_command({TUNE_BIN, "report", study, "--format", "json"}, m_dir, {}, "tune");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_TRUE(j["best"].is_object()) << j.dump();
  EXPECT_EQ(j["best_measured_under_load"], true);
  EXPECT_NE(j["best_basis"].get<std::string>().find("measured under load"), std::string::npos);
  const auto script = m_dir / "best.sh";
  const auto exported = test_support::run_command(
      {TUNE_BIN, "export", study, "-o", script.string()}, m_dir, {}, "tune");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(test_support::read_file(script).find(
                "# The best trial, measured under load: no trial ran on a quiet machine"),
            std::string::npos)
      << test_support::read_file(script);
  burner.stop();
}

}  // namespace
}  // namespace tune::tuner
