// The window objective while its trial runs: reads the job's progress (ProgressReader), keeps
// the estimate (RateWindow), and decides when the trial has been measured enough.
//
// Every tick (on the launcher's watcher thread) it reads what the job added and, in this order:
//  - a progress line whose group held only part of a number (`12` of `samples 12,345`): stop,
//    FAIL ("partial_number", quoting the line: the regex cannot read this job's numbers);
//  - no progress point `startup` seconds after launch: stop, FAIL ("no_progress": a wrong
//    regex, a job that prints nothing, one stuck before its first step);
//  - the warm-up not over `warmup + max` seconds after the first point: stop, FAIL;
//  - the interval within the target over a window of at least `min` seconds and
//    k_min_stop_batches batches: stop, COMPLETE ("target");
//  - with `prune` and a best trial to beat: the interval's high end below the best's low end (a
//    maximized rate) over such a window: stop, PRUNED with the estimate ("pruned");
//  - `max` seconds since the window began: stop, COMPLETE with the estimate so far ("max"), or
//    FAIL when no point came after the warm-up ("stalled").
// A stop is the launcher's watcher verdict: the whole tree is stopped as a timeout stops it
// (SIGTERM, SIGKILL after the grace). The estimate is frozen at the decision; what the job
// prints while it is being stopped changes nothing. A job that exits by itself first is scored
// on what was seen (ended_value()), and its attrs say so; a crash or a signal stays a FAIL.
//
// Times are seconds since the trial's launch, on the runner's clock; the estimate's own clock
// is the job's when its lines or log carry a time. One follower per trial; used by one thread
// at a time (the watcher's while the trial runs, then the runner's).
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

// The best trial a new one must beat, for pruning losers: its interval (a point when it has
// none).
struct WindowBest {
  int trial = -1;
  double low = 0, high = 0;
};

// The best to prune against, from `best`, the study's best trial (ranking.h: best_trial, or the
// runner's BestTracker, which keeps it without a pass over the history): the range of the
// intervals of every window it was measured in (its own run's and its re-runs'), its value
// included; its value alone when it has no window; nullopt when there is no best yet.
std::optional<WindowBest> window_best(const search::StudyView& study,
                                      const search::FrozenTrial* best);

class WindowFollower {
 public:
  // `path`: the absolute path the progress is read from (the trial's stdout or stderr file, the
  // job's file, its log). `best`: what to prune against; nullopt = never prune (no best yet, an
  // enqueued or re-run trial, `prune: false`). `stream_head_bytes`: how much of a stream the
  // trial's file gets before tune-keeper holds the rest back until the end (0: no cap), for the
  // message when progress stops there.
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
