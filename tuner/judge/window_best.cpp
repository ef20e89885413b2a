#include "tuner/judge/window_best.h"

#include <algorithm>

#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {

std::optional<WindowBest> window_best(const search::StudyView& study,
                                      const search::FrozenTrial* best) {
  if (best == nullptr || !best->value) return std::nullopt;
  WindowBest b;
  b.trial = best->number;
  b.low = b.high = *best->value;
  // What is known of the best: every window it was measured in, its own and its re-runs'. A
  // re-measured best's value is the median of those runs, and the runs differ by more than one
  // window's interval where the machine's load moves (the interval is within one window): the
  // range of their intervals, not the median, is what a loser must fall below.
  const auto widen = [&](const search::FrozenTrial& t) {
    const auto it = t.user_attrs.find(k_attr_window);
    if (it == t.user_attrs.end()) return;
    for (const char* key : {"low", "high", "value"}) {
      const auto v = finite_number_at(*it, key);
      if (!v) continue;
      b.low = std::min(b.low, *v);
      b.high = std::max(b.high, *v);
    }
  };
  widen(*best);
  for (const auto& t : study.trials()) {
    if (rerun_of(t) == best->number) widen(t);  // a waiting re-run has no window yet
  }
  return b;
}

}  // namespace tune::tuner
