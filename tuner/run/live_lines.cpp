// What a runner prints after each trial: the live line (and a progress bar on a terminal), or why
// a trial is no longer this worker's. Part of StudyRunner (runner.h).
#include "tuner/run/runner.h"

#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include <filesystem>

#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/summary.h"
#include "tuner/run/log_follower.h"
#include "tuner/run/runner_parts.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

void StudyRunner::print_lost(std::ostream& out, int index, const FrozenTrial& trial,
                             const StorageError& error) const {
  if (error.kind == StorageErrorKind::missing) {
    out << fmt::format("[{}/{}] trial {} GONE  # {}\n", index + 1, m_options.trials, trial.number,
                       k_gone_reason)
        << std::flush;
    return;
  }
  // The one story the database tells (tune trials, the report): its state and reason.
  auto stored = m_storage->get_trial(trial.trial_id);
  const TrialState state = stored ? stored->state : TrialState::fail;
  std::string theirs;
  if (stored) {
    if (auto it = stored->system_attrs.find(k_attr_fail_reason);
        it != stored->system_attrs.end() && it->is_string()) {
      theirs = it->get<std::string>();
    }
  }
  const bool terminal = &out == &std::cout && isatty(STDOUT_FILENO);
  if (terminal) out << "\r\033[K";
  // Their reason is read from the database: any bytes.
  out << terminal_text(fmt::format("[{}/{}] trial {} {}  # {}{}", index + 1, m_options.trials,
                                   trial.number, search::to_string(state), k_lost_reason,
                                   theirs.empty() ? "" : " (its reason there: " + theirs + ")"))
      << '\n'
      << std::flush;
}

void StudyRunner::print_progress(std::ostream& out, int index, const FrozenTrial& trial,
                                 const Ran& ran) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - m_started).count();
  const int done = index + 1;
  const double eta = elapsed / done * (m_options.trials - done);
  TrialProgress progress;
  progress.done = done;
  progress.total = m_options.trials;
  progress.state = ran.end.outcome.state;
  if (ran.end.outcome.values.empty()) progress.value = ran.end.outcome.value;
  progress.values = ran.end.outcome.values;
  if (ran.launch.started) progress.wall_s = ran.launch.wall_s;
  progress.reason = ran.end.outcome.reason;
  // Said where the reason goes: its value is not ranked until a quiet re-run stands for it.
  if (const auto note = load_note(ran.load); !note.empty())
    progress.reason = progress.reason.empty() ? note : progress.reason + "; " + note;
  progress.half_width = finite_number_at(ran.window_attrs, "half_width");
  if (done < m_options.trials) progress.eta_s = eta;
  progress.objectives = live_objective_names(m_spec);
  if (!m_cache->is_multi_objective()) progress.best = m_best.best(*m_cache);
  const bool terminal = &out == &std::cout && isatty(STDOUT_FILENO);
  if (terminal) out << "\r\033[K";  // clear the progress bar drawn after the last line
  out << progress_line(trial, *m_cache, progress) << '\n';
  if (terminal && done < m_options.trials) {
    constexpr int k_width = 30;
    const int filled = k_width * done / m_options.trials;
    out << '[' << std::string(filled, '#') << std::string(k_width - filled, '.') << "] "
        << fmt::format("{}/{}  eta {}", done, m_options.trials, format_duration(eta));
  }
  out << std::flush;
}

}  // namespace tune::tuner
