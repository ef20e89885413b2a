#include "tuner/measure/trial_outcome.h"

#include <signal.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cstring>

#include "tuner/base/text.h"

namespace tune::tuner {

using search::TrialState;

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

TrialOutcome skipped_outcome(double constraint) {
  TrialOutcome o;
  o.state = TrialState::pruned;
  o.reason = "not run: the probes predict CPU oversubscription";
  o.constraints.push_back(constraint);
  return o;
}

std::string mpi_abort_text(std::string_view tail) {
  // Open MPI's help box: "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD" and
  // "with errorcode 0." on the next line; MPICH's: "application called MPI_Abort(comm, 0) -
  // process 0". The last one counts: a job may print the words itself earlier.
  for (const std::string_view marker : {"MPI_ABORT was invoked", "application called MPI_Abort"}) {
    const auto at = tail.rfind(marker);
    if (at == std::string_view::npos) continue;
    auto end = tail.find('\n', at);
    std::string text(tail.substr(at, end == std::string_view::npos ? tail.npos : end - at));
    if (end != std::string_view::npos) {
      auto next = tail.substr(end + 1);
      next = next.substr(0, next.find('\n'));
      while (!next.empty() && next.front() == ' ') next.remove_prefix(1);
      if (next.starts_with("with errorcode")) text += " " + std::string(next);
    }
    while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '.'))
      text.pop_back();
    return text;
  }
  // The box travels from the aborting rank to mpirun as a help message, and a rank killed while
  // sending it loses it: Open MPI then logs only "ORTE_ERROR_LOG: Data unpack would read past end
  // of buffer in file .../orte/util/show_help.c" (1 run in 4 here), still exiting 0.
  for (const std::string_view log : {"ORTE_ERROR_LOG:", "PRTE_ERROR_LOG:"}) {
    const auto at = tail.rfind(log);
    if (at == std::string_view::npos) continue;
    auto line = tail.substr(at, tail.find('\n', at) - at);
    if (line.find("show_help.c") == std::string_view::npos) continue;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    return fmt::format("a rank's message to mpirun was lost ({}), as when a rank calls MPI_Abort",
                       line);
  }
  return {};
}

bool wants_objective(const LaunchResult& res, const OutcomeContext& ctx) {
  if (!res.started || res.stopped == StopReason::interrupted || res.stopped == StopReason::timeout)
    return false;
  if (ctx.window) return ctx.window->state == TrialState::complete;
  return res.stopped != StopReason::watcher && res.write_errors.empty() && res.signal == 0 &&
         res.exit_code == 0;
}

TrialOutcome classify_outcome(const LaunchResult& res, const OutcomeContext& ctx,
                              const RunReadings& left) {
  TrialOutcome o;
  const auto read = [&]() -> Result<ObjectiveReading> {
    if (!left.objective) return std::unexpected("the objective was not read");
    return *left.objective;
  };
  // The last 64 KiB of stderr explain a non-zero exit (explaining_lines_of_file's reach).
  constexpr std::size_t k_explaining_tail = 64 * 1024;
  const std::string_view tail = left.stderr_tail;
  // Open MPI's mpirun exits 0 when a rank calls MPI_Abort(comm, 0): whatever it printed before
  // the abort is a partial figure, never the job's value.
  const auto aborted = [&] { return mpi_abort_text(tail); };
  if (!res.started) {
    o.reason = res.error;
  } else if (res.stopped == StopReason::interrupted) {
    o.reason =
        fmt::format("interrupted ({}); the trial's processes were stopped",
                    ctx.interrupt_signal == SIGINT ? "Ctrl-C" : signal_name(ctx.interrupt_signal));
    o.stop_study = true;
    o.cut_short = true;
  } else if (res.stopped == StopReason::timeout) {
    o.reason = ctx.study_deadline_bites ? "stopped: the study's --time-limit was reached"
                                        : res.stop_detail;
    o.cut_short = ctx.study_deadline_bites;
  } else if (ctx.window) {
    // Stopped by its window as a timeout stops a trial (or ending by itself as the window
    // decided): its measure is what counts, not the stopped tree's exit status.
    o.state = ctx.window->state;
    o.value = ctx.window->value;
    o.reason = ctx.window->reason;
    if (o.state == TrialState::complete) {
      if (auto reading = read(); reading) {
        o.value = reading->value;
        o.constraints = reading->constraints;
      } else {
        o.state = TrialState::fail;
        o.value.reset();
        o.reason = reading.error();
      }
    }
  } else if (res.stopped == StopReason::watcher) {
    o.state = TrialState::pruned;
    o.reason = res.stop_detail;
    o.value = ctx.last_intermediate;
  } else if (!res.write_errors.empty()) {
    // The trial's output is incomplete: whatever it printed cannot be believed (a full disk
    // once read as "objective regex matched nothing", exit status 0).
    o.reason = fmt::format("{}", fmt::join(res.write_errors, "; "));
  } else if (res.signal != 0) {
    o.reason = fmt::format("killed by {}", signal_name(res.signal));
    if (!res.oom_kill.empty()) o.reason += ": out of memory (" + res.oom_kill + ")";
  } else if (res.exit_code != 0) {
    const auto err =
        explaining_lines(tail.substr(tail.size() - std::min(tail.size(), k_explaining_tail)), 300);
    o.reason = fmt::format("exit code {}{}{}", res.exit_code,
                           res.oom_kill.empty() ? "" : ": out of memory (" + res.oom_kill + ")",
                           err.empty() ? "" : ": " + err);
  } else if (auto abort = aborted(); !abort.empty()) {
    o.reason = fmt::format("the MPI job aborted although its launcher exited 0: {}", abort);
  } else if (auto reading = read(); reading) {
    o.state = TrialState::complete;
    o.value = reading->value;
    o.values = reading->values;
    o.constraints = reading->constraints;
  } else {
    o.reason = reading.error();
  }
  o.reason = printable(o.reason, 1000);  // trial output and user values: any bytes
  return o;
}

}  // namespace tune::tuner
