#include "search/trial.h"

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

}  // namespace tune::search
