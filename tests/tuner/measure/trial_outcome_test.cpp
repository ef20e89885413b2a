// Trial outcome: every way a launch can end maps to one state, value and reason, from what the
// run left (no process, no file).
#include <gtest/gtest.h>
#include <signal.h>

#include <sstream>

#include "tuner/measure/trial_outcome.h"

namespace tune::tuner {
namespace {

using search::TrialState;

LaunchResult started(int exit_code = 0) {
  LaunchResult r;
  r.started = true;
  r.exit_code = exit_code;
  return r;
}

RunReadings reading(double value) {
  ObjectiveReading r;
  r.value = value;
  r.constraints = {-1.0};
  RunReadings left;
  left.objective = r;
  return left;
}

std::ostringstream& fresh(std::ostringstream& out) {
  out.str("");
  return out;
}

RunReadings with_tail(RunReadings left, std::string stderr_tail) {
  left.stderr_tail = std::move(stderr_tail);
  return left;
}

// A run whose objective was not read: classify_outcome must not need it.
RunReadings never_read(std::string stderr_tail = {}) {
  RunReadings left;
  left.stderr_tail = std::move(stderr_tail);
  return left;
}

// Where an outcome rests on the objective, the runner reads it: only for exit 0 by itself.
TEST(TrialOutcome, TheObjectiveIsWantedOnlyForAnEndOfItsOwnWithExitZero) {
  EXPECT_TRUE(wants_objective(started(0), {}));
  EXPECT_FALSE(wants_objective(started(3), {}));
  auto killed = started(0);
  killed.signal = SIGKILL;
  EXPECT_FALSE(wants_objective(killed, {}));
  auto timed_out = started(0);
  timed_out.stopped = StopReason::timeout;
  EXPECT_FALSE(wants_objective(timed_out, {}));
  auto disk_full = started(0);
  disk_full.write_errors = {"writing x: No space left on device"};
  EXPECT_FALSE(wants_objective(disk_full, {}));
  EXPECT_FALSE(wants_objective(LaunchResult{}, {}));
  // A window's decision: read when it completed the trial, whatever the stopped tree's status.
  auto stopped = started(143);
  stopped.stopped = StopReason::watcher;
  OutcomeContext window;
  window.window = WindowDecision{TrialState::complete, 5.0, ""};
  EXPECT_TRUE(wants_objective(stopped, window));
  window.window = WindowDecision{TrialState::pruned, 5.0, "pruned"};
  EXPECT_FALSE(wants_objective(stopped, window));
  // Wanted but not read: the trial fails naming that, never with a made-up value.
  EXPECT_EQ(classify_outcome(started(0), {}, never_read()).reason, "the objective was not read");
}

TEST(TrialOutcome, ExitZeroWithAValueCompletes) {
  const auto o = classify_outcome(started(), {}, reading(2.5));
  EXPECT_EQ(o.state, TrialState::complete);
  EXPECT_EQ(o.value, 2.5);
  EXPECT_EQ(o.constraints, std::vector<double>{-1.0});
  EXPECT_EQ(o.reason, "");
  EXPECT_FALSE(o.stop_study);
}

// Output that could not be written fails the trial with the error and the file, even when the
// command exited 0 and what was written holds a value (issue 25: a full disk once read as "the
// objective regex matched nothing", exit status 0).
TEST(TrialOutcome, AWriteErrorFailsTheTrialNamingErrorAndPath) {
  auto res = started(0);
  res.write_errors = {"writing /o/trials/3/stdout: No space left on device",
                      "writing /o/trials/3/stderr: No space left on device"};
  const auto o = classify_outcome(res, {}, never_read());
  EXPECT_EQ(o.state, TrialState::fail);
  EXPECT_EQ(o.reason,
            "writing /o/trials/3/stdout: No space left on device; writing /o/trials/3/stderr: No "
            "space left on device");
  res.exit_code = 2;  // the job's own failure is often the full disk too: the disk is named
  EXPECT_EQ(classify_outcome(res, {}, never_read()).reason.rfind("writing /o/trials/3/stdout", 0),
            0u);
}

TEST(TrialOutcome, AnUnreadableObjectiveFailsWithItsReason) {
  RunReadings left;
  left.objective = std::unexpected("log x has no entries");
  const auto o = classify_outcome(started(), {}, left);
  EXPECT_EQ(o.state, TrialState::fail);
  EXPECT_EQ(o.reason, "log x has no entries");
}

TEST(TrialOutcome, NonZeroExitNamesTheLastStderrLine) {
  const auto o = classify_outcome(started(3), {}, never_read("first\nlast words \xFF\n\n"));
  EXPECT_EQ(o.state, TrialState::fail);
  EXPECT_EQ(o.reason, "exit code 3: last words \xEF\xBF\xBD");
}

// Open MPI prints the cause first, then a banner whose last line is a rule of dashes.
TEST(TrialOutcome, NonZeroExitKeepsTheLinesThatExplainNotTheLauncherBanner) {
  std::ostringstream err;  // the end of the run's stderr
  const std::string rule(74, '-');
  fresh(err) << "Host key verification failed.\n"
             << rule << "\n"
             << "ORTE was unable to reliably start one or more daemons.\n"
             << "This usually is caused by:\n\n* not finding the required libraries\n"
             << rule << "\n";
  const auto o = classify_outcome(started(255), {}, never_read(err.str()));
  EXPECT_EQ(o.reason,
            "exit code 255: Host key verification failed. | ORTE was unable to reliably start one "
            "or more daemons.");
  // Many explaining lines: the first two (the cause) and the last (the final word).
  fresh(err) << "error 1\nerror 2\nerror 3\nnoise\nerror 4\n***\n";
  EXPECT_EQ(classify_outcome(started(1), {}, never_read(err.str())).reason,
            "exit code 1: error 1 | error 2 | error 4");
}

// Open MPI's own errors come in help boxes, advice around one headline and "Key: value" details;
// a second box (opal_init failing after it) must not push out the first's cause.
TEST(TrialOutcome, AnMpirunHelpBoxGivesItsHeadlineAndDetails) {
  std::ostringstream err;  // the end of the run's stderr
  const std::string rule(74, '-');
  fresh(err) << rule << "\nThe specified binding policy is not recognized:\n\n"
             << "  Policy: bogus\n\nPlease check for a typo or ensure that the option "
             << "is a supported\none.\n"
             << rule << "\n"
             << rule << "\n"
             << "It looks like opal_init failed for some reason; your parallel process is\n"
             << "likely to abort.\n\n  opal_hwloc_base_open failed\n"
             << "  --> Returned value -5 instead of OPAL_SUCCESS\n"
             << rule << "\n";
  EXPECT_EQ(classify_outcome(started(1), {}, never_read(err.str())).reason,
            "exit code 1: The specified binding policy is not recognized: | Policy: bogus");
  // A misspelt program under mpirun: the executable it could not find is named.
  fresh(err) << rule << "\nmpirun was unable to find the specified executable file, and "
             << "therefore\ndid not launch the job.\n\nNOTE: A common cause for this "
             << "error is misspelling a mpirun command\n\nNode:       vm\n"
             << "Executable: pyhton3\n"
             << rule << "\n";
  EXPECT_EQ(classify_outcome(started(1), {}, never_read(err.str())).reason,
            "exit code 1: mpirun was unable to find the specified executable file, and therefore | "
            "NOTE: A common cause for this error is misspelling a mpirun command | Executable: "
            "pyhton3");
}

// Open MPI's mpirun exits 0 when a rank calls MPI_Abort(comm, 0) (issue 50): the figure printed
// before the abort is partial, so the trial fails quoting the abort, and the objective is not read.
TEST(TrialOutcome, AnMpiAbortFailsTheTrialWhateverTheExitCode) {
  std::ostringstream err;  // the end of the run's stderr
  const std::string rule(74, '-');
  fresh(err) << "warming up\n"
             << rule << "\nMPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\n"
             << "with errorcode 0.\n\nNOTE: invoking MPI_ABORT causes Open MPI to kill all "
             << "MPI processes.\n"
             << rule << "\n";
  const auto o = classify_outcome(started(0), {}, never_read(err.str()));
  EXPECT_EQ(o.state, TrialState::fail);
  EXPECT_EQ(
      o.reason,
      "the MPI job aborted although its launcher exited 0: MPI_ABORT was invoked on rank 1 in "
      "communicator MPI_COMM_WORLD with errorcode 0");
  // MPICH's words.
  fresh(err) << "application called MPI_Abort(MPI_COMM_WORLD, 0) - process 0\n";
  EXPECT_EQ(classify_outcome(started(0), {}, never_read(err.str())).reason,
            "the MPI job aborted although its launcher exited 0: application called "
            "MPI_Abort(MPI_COMM_WORLD, 0) - process 0");
  // A non-zero abort code keeps the exit code's reason, which quotes the box.
  EXPECT_EQ(classify_outcome(started(3), {}, never_read(err.str())).reason.rfind("exit code 3", 0),
            0u);
  // The box lost on its way (a rank killed while sending it): Open MPI logs only this, exit 0.
  fresh(err) << "[vm:22875] [[13733,0],0] ORTE_ERROR_LOG: Data unpack would read past end "
                "of buffer in file ../../../orte/util/show_help.c at line 501\n";
  EXPECT_EQ(classify_outcome(started(0), {}, never_read(err.str())).reason,
            "the MPI job aborted although its launcher exited 0: a rank's message to mpirun was "
            "lost (ORTE_ERROR_LOG: Data unpack would read past end of buffer in file "
            "../../../orte/util/show_help.c at line 501), as when a rank calls MPI_Abort");
  // Without the words the objective is read as before.
  fresh(err) << "MPI_Abort is a function name a job may print\n";
  EXPECT_EQ(classify_outcome(started(0), {}, with_tail(reading(1.5), err.str())).state,
            TrialState::complete);
}

// A kill the kernel recorded as out of memory says so (issue 37), for the program itself and for
// a launcher that reports its killed rank with an exit code.
TEST(TrialOutcome, AnOutOfMemoryKillIsCalledOne) {
  auto killed = started();
  killed.signal = SIGKILL;
  EXPECT_EQ(classify_outcome(killed, {}, never_read()).reason, "killed by SIGKILL");
  killed.oom_kill = "the kernel's OOM killer killed process 1234 (python3)";
  EXPECT_EQ(classify_outcome(killed, {}, never_read()).reason,
            "killed by SIGKILL: out of memory (the kernel's OOM killer killed process 1234 "
            "(python3))");
  auto rank = started(137);
  rank.oom_kill = killed.oom_kill;
  EXPECT_EQ(classify_outcome(rank, {}, never_read()).reason,
            "exit code 137: out of memory (the kernel's OOM killer killed process 1234 "
            "(python3))");
}

TEST(TrialOutcome, SignalsTimeoutsAndStartFailures) {
  auto killed = started();
  killed.signal = SIGSEGV;
  EXPECT_EQ(classify_outcome(killed, {}, never_read()).reason, "killed by SIGSEGV");

  auto timed_out = started();
  timed_out.stopped = StopReason::timeout;
  timed_out.stop_detail = "timed out after 1.0s";
  EXPECT_EQ(classify_outcome(timed_out, {}, never_read()).reason, "timed out after 1.0s");
  OutcomeContext study_deadline;
  study_deadline.study_deadline_bites = true;
  EXPECT_EQ(classify_outcome(timed_out, study_deadline, never_read()).reason,
            "stopped: the study's --time-limit was reached");

  LaunchResult not_started;
  not_started.error = "'nope' was not found in PATH";
  const auto o = classify_outcome(not_started, {}, never_read());
  EXPECT_EQ(o.state, TrialState::fail);
  EXPECT_EQ(o.reason, not_started.error);
}

TEST(TrialOutcome, PrunedTrialsKeepTheirLastIntermediateValue) {
  auto pruned = started();
  pruned.stopped = StopReason::watcher;
  pruned.stop_detail = "pruned at step 4";
  OutcomeContext ctx;
  ctx.last_intermediate = 7.0;
  const auto o = classify_outcome(pruned, ctx, never_read());
  EXPECT_EQ(o.state, TrialState::pruned);
  EXPECT_EQ(o.value, 7.0);
  EXPECT_EQ(o.reason, "pruned at step 4");
}

TEST(TrialOutcome, AnInterruptStopsTheStudyAndNamesTheSignal) {
  auto r = started();
  r.stopped = StopReason::interrupted;
  OutcomeContext ctx;
  ctx.interrupt_signal = SIGINT;
  auto o = classify_outcome(r, ctx, never_read());
  EXPECT_TRUE(o.stop_study);
  EXPECT_EQ(o.reason, "interrupted (Ctrl-C); the trial's processes were stopped");
  ctx.interrupt_signal = SIGHUP;
  o = classify_outcome(r, ctx, never_read());
  EXPECT_EQ(o.reason, "interrupted (SIGHUP); the trial's processes were stopped");
}

TEST(TrialOutcome, APredictedOversubscriptionIsRecordedNotRun) {
  const auto o = skipped_outcome(1.5);
  EXPECT_EQ(o.state, TrialState::pruned);
  EXPECT_EQ(o.constraints, std::vector<double>{1.5});
  EXPECT_FALSE(o.value);
}

}  // namespace
}  // namespace tune::tuner
