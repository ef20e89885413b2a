#include "search/trial.h"

#include <atomic>

namespace tune::search {

const char* to_string(TrialState state) {
  switch (state) {
    case TrialState::running:
      return "RUNNING";
    case TrialState::complete:
      return "COMPLETE";
    case TrialState::pruned:
      return "PRUNED";
    case TrialState::fail:
      return "FAIL";
    case TrialState::waiting:
      return "WAITING";
  }
  return "UNKNOWN";
}

const char* to_string(Direction direction) {
  return direction == Direction::maximize ? "MAXIMIZE" : "MINIMIZE";
}

std::uint64_t new_change_log_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

ChangedTrials take_changes(const StudyView& study, ChangeCursor& cursor) {
  ChangedTrials out;
  const auto changed = study.changes_since(cursor);
  cursor = study.cursor();
  if (changed) {
    out.positions.assign(changed->begin(), changed->end());
    return out;
  }
  out.from_scratch = true;
  out.positions.resize(study.trials().size());
  for (std::size_t i = 0; i < out.positions.size(); ++i) out.positions[i] = i;
  return out;
}

}  // namespace tune::search
