// A job's throughput measured over a window while it runs: the estimator behind the study file's
// `objective: {window: ...}`: a warm-up, then the rate and its interval by batch means.
// Plain value; not thread-safe (one follower per trial owns one).
// Design: docs/design-notes.md#tunermeasurerate_windowh
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tuner/study/window_settings.h"

namespace tune::tuner {

// Batches the window is cut into, and how many a stop on the target needs.
inline constexpr int k_window_batches = 10;
inline constexpr int k_min_stop_batches = 6;
// Points kept per window: a job printing more progress lines than this is not followed further.
inline constexpr std::size_t k_window_max_points = 200000;

struct WindowEstimate {
  bool warmed_up = false;           // the window has its origin
  int points = 0;                   // in the window, its origin included
  int batches = 0;                  // 0 or 1: no interval
  double span_s = 0;                // the window's length: last point - origin
  double value = 0;                 // rate x scale (valid when points >= 2)
  std::optional<double> low, high;  // the interval (batches >= 2)
  double first_t = 0;               // the first point's time
  double origin_t = 0;              // the window's origin: first_t + the warm-up it took
  double warmup_steps = 0;          // counter units the warm-up took (points for `rate`)

  bool has_value() const { return points >= 2; }
  // Half-width over the value; nullopt without an interval or with a value of 0.
  std::optional<double> relative_half_width() const;
};

class RateWindow {
 public:
  explicit RateWindow(WindowSettings settings) : m_settings(settings) {}

  // One progress point. Refused (false): a non-finite t or v, a t before the last point's, a
  // counter below the last one (a second counter printed alongside, a restart), or more than
  // k_window_max_points. A counter point at the last point's time replaces it (lines read
  // together).
  bool add(double t, double v);

  // The estimate over the window (from its origin); `from_first` over every point instead,
  // warm-up included (for a job that ended before its warm-up did).
  WindowEstimate estimate(bool from_first = false) const;

  // The estimate's interval is within the target and the window long enough to stop on it.
  bool target_met(const WindowEstimate& e) const;
  // Enough of a window to judge it at all (a stop on the target, or against another trial).
  bool judgeable(const WindowEstimate& e) const;

  bool any() const { return !m_points.empty(); }
  bool warmed_up() const { return m_origin.has_value(); }
  bool full() const { return m_points.size() >= k_window_max_points; }
  const WindowSettings& settings() const { return m_settings; }

 private:
  struct Point {
    double t, v;
  };
  WindowEstimate estimate_from(std::size_t first) const;

  WindowSettings m_settings;
  std::vector<Point> m_points;
  std::optional<std::size_t> m_origin;  // index of the window's first point
};

}  // namespace tune::tuner
