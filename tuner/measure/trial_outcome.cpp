#include "tuner/measure/trial_outcome.h"

#include <signal.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
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

TrialOutcome classify_outcome(const LaunchResult& res, const OutcomeContext& ctx,
                              const ObjectiveReader& read) {
  TrialOutcome o;
  if (!res.started) {
    o.reason = res.error;
  } else if (res.stopped == StopReason::interrupted) {
    o.reason =
        fmt::format("interrupted ({}); the trial's processes were stopped",
                    ctx.interrupt_signal == SIGINT ? "Ctrl-C" : signal_name(ctx.interrupt_signal));
    o.stop_study = true;
  } else if (res.stopped == StopReason::timeout) {
    o.reason = ctx.study_deadline_bites ? "stopped: the study's --time-limit was reached"
                                        : res.stop_detail;
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
    const auto err = explaining_lines_of_file(ctx.stderr_path, 300);
    o.reason = fmt::format("exit code {}{}{}", res.exit_code,
                           res.oom_kill.empty() ? "" : ": out of memory (" + res.oom_kill + ")",
                           err.empty() ? "" : ": " + err);
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
