// The study file's `objective.window` settings as plain values: what the progress number is and
// when the window's estimate is good enough. The estimator that reads them is
// tuner/measure/rate_window.h. Plain values; thread-safe.
#pragma once

namespace tune::tuner {

enum class WindowMeasure {
  counter,  // the number counts work done and grows (a step, samples seen)
  lines,    // each progress line is one unit of work (tune counts the lines)
  rate,     // the number is itself a rate (samples/s of the stretch since the previous line)
};

// "counter", "lines", "rate".
inline const char* window_measure_name(WindowMeasure m) {
  switch (m) {
    case WindowMeasure::lines:
      return "lines";
    case WindowMeasure::rate:
      return "rate";
    case WindowMeasure::counter:
      break;
  }
  return "counter";
}

struct WindowSettings {
  WindowMeasure measure = WindowMeasure::counter;
  double scale = 1;          // multiplies the rate (e.g. samples per step); > 0
  double warmup_s = 2;       // seconds after the first point that are not measured
  double warmup_steps = 0;   // counter units (lines; points for `rate`) not measured either
  double target = 0.02;      // stop once the interval's half-width / value is at most this
  double confidence = 0.95;  // of the interval
  double min_s = 3;          // no stop on the target before the window is this long
};

// The best trial a new one must beat, for its window to stop a loser: its interval (a point
// when it has none). judge/window_best.h finds it.
struct WindowBest {
  int trial = -1;
  double low = 0, high = 0;
};

}  // namespace tune::tuner
