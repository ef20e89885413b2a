// Trial outcome: one pure function from what a finished launch left (exit status, signal, why it
// was stopped, its stderr's tail, the objective's reading) to its state, value and one-line
// reason, safe to store (printable()). Reads nothing; stateless; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/launch/launcher.h"
#include "tuner/measure/objective.h"

namespace tune::tuner {

struct TrialOutcome {
  search::TrialState state = search::TrialState::fail;
  std::optional<double> value;
  std::vector<double> values;       // multi-objective: every objective's (value = values[0])
  std::string reason;               // empty for COMPLETE; printable, at most ~1000 bytes
  std::vector<double> constraints;  // c <= 0 feasible, one per constraint
  bool stop_study = false;          // an interrupt: no further trial
  // Ended by tune's own stop (an interrupt, the study's --time-limit), not by anything the trial
  // did: a baseline cut so is run again, never judged to fail for good (run/baselines.h).
  bool cut_short = false;
};

// What a window objective (tuner/measure/window_follower.h) decided when it stopped the trial: its
// state (COMPLETE on its target or max, PRUNED a loser, FAIL no progress), value and reason.
struct WindowDecision {
  search::TrialState state = search::TrialState::fail;
  std::optional<double> value;
  std::string reason;  // a FAIL's or PRUNED's; "" for COMPLETE
};

struct OutcomeContext {
  bool study_deadline_bites = false;        // the study's --time-limit set the trial's limit
  int interrupt_signal = 0;                 // the signal behind StopReason::interrupted
  std::optional<double> last_intermediate;  // what a pruned trial is ranked by
  // Set when the window objective stopped the trial (StopReason::watcher): the trial ends as it
  // decided, whatever the stopped tree's exit status.
  std::optional<WindowDecision> window;
};

// What the run left in its files, read by the runner once the launch is over.
struct RunReadings {
  // The objective's reading; needed only where wants_objective() says so (a missing one then
  // fails the trial, naming that).
  std::optional<Result<ObjectiveReading>> objective;
  // The end of its stderr (k_mpi_abort_tail_bytes at most): an MPI_Abort behind exit code 0, and
  // the lines that explain a non-zero exit, are read from it.
  std::string stderr_tail;
};

// Whether the outcome of `res` rests on the objective's reading: the command exited 0 by itself,
// or its window decided it completed.
bool wants_objective(const LaunchResult& res, const OutcomeContext& ctx);

TrialOutcome classify_outcome(const LaunchResult& res, const OutcomeContext& ctx,
                              const RunReadings& left);

// A trial the probes predicted to oversubscribe: recorded as infeasible instead of being run.
TrialOutcome skipped_outcome(double constraint);

// The line an MPI library printed when a rank called MPI_Abort (Open MPI's "MPI_ABORT was invoked
// on rank 0 in communicator MPI_COMM_WORLD with errorcode 0", MPICH's "application called
// MPI_Abort(...)") in `tail`, the end of the launcher's stderr, or Open MPI's log of that message
// lost on its way (ORTE_ERROR_LOG in show_help.c); "" when there is none.
std::string mpi_abort_text(std::string_view tail);
// How much of a trial's stderr is searched for it: the abort is among the last things written.
inline constexpr std::size_t k_mpi_abort_tail_bytes = 1 << 20;

// "SIGSEGV", or "signal N" when the name is unknown.
std::string signal_name(int sig);

}  // namespace tune::tuner
