#include "tuner/storage/storage_error.h"

#include <fmt/format.h>

namespace tune::tuner {

StorageError finished_trial_error(std::int64_t trial_id, search::TrialState state) {
  return {StorageErrorKind::finished,
          fmt::format("trial id {} is finished ({}) and takes no more writes", trial_id,
                      search::to_string(state))};
}

StorageError missing_trial_error(std::int64_t trial_id) {
  return {StorageErrorKind::missing, fmt::format("trial id {} does not exist", trial_id)};
}

}  // namespace tune::tuner
