// The window objective while its trial runs: reads the job's progress (ProgressReader), keeps the
// estimate (RateWindow), and decides when to stop the trial: measured enough, pruned or failed.
// One follower per trial; used by one thread at a time (the watcher's while the trial runs, then
// the runner's).
// Design: docs/design-notes.md#tunermeasurewindow_followerh
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tuner/base/result.h"
#include "tuner/measure/progress.h"
#include "tuner/measure/rate_window.h"
#include "tuner/measure/trial_outcome.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

class WindowFollower {
 public:
  // `path`: the absolute path the progress is read from (the trial's stdout or stderr file, the
  // job's file, its log). `best`: what to prune against (judge/window_best.h); nullopt = never
  // prune (no best yet, an enqueued or re-run trial, `prune: false`). `stream_head_bytes`: how much
  // of a stream the trial's file gets before tune-keeper holds the rest back until the end (0: no
  // cap), for the message when progress stops there.
  WindowFollower(const WindowSpec& spec, std::string path, std::optional<WindowBest> best,
                 std::uintmax_t stream_head_bytes = 0);

  // Reads the new progress; a reason to stop the trial now, or "".
  std::string tick(double now_s);
  // Once the trial has ended: reads what is left (unless it decided already).
  void finish(double now_s);

  // What it decided when it stopped the trial; nullopt when it did not.
  const std::optional<WindowDecision>& decision() const { return m_decision; }
  // The value of a trial whose job exited 0 by itself: the estimate over the window (or over
  // every point, when the warm-up had not ended), or why there is none (too few points, a
  // partial number read).
  Result<double> ended_value();
  // The value a COMPLETE decision or ended_value() gave.
  std::optional<double> value() const { return m_value; }
  // The trial's k_attr_window attribute.
  nlohmann::json attrs() const;
  // The progress points in the window: the step a PRUNED trial's value is stored at.
  std::int64_t points() const { return m_final ? m_final->points : 0; }

 private:
  void read(double now_s);
  std::string decide(search::TrialState state, const char* status, std::string reason,
                     const WindowEstimate& e);
  std::string no_progress_hint() const;
  // The reader's first partial-number line, quoted, and how many lines were refused so.
  std::string partial_number_reason() const;
  // "; stdout reached the 8 MiB ..." when the followed stream hit the cap a trial's file gets
  // while it runs (a flood hides the progress after it); "" otherwise.
  std::string cap_hint() const;

  WindowSpec m_spec;
  ProgressReader m_reader;
  RateWindow m_window;
  std::optional<WindowBest> m_best;
  std::uintmax_t m_stream_head_bytes;
  std::optional<double> m_first_read;   // when the first point was read (tune's clock)
  std::optional<double> m_origin_read;  // when the window's origin was read
  double m_last_read = 0;               // when the last point was read
  std::uint64_t m_out_of_order = 0;     // points the window refused (counter went back)
  std::optional<WindowDecision> m_decision;
  std::string m_stop;                     // the verdict given with it
  std::optional<WindowEstimate> m_final;  // frozen at the decision, or at the job's end
  std::optional<double> m_value;
  std::string m_status = "unfinished";
  std::string m_note;
  bool m_from_first = false;  // the final estimate is over every point (warm-up unfinished)
};

}  // namespace tune::tuner
