#include "tuner/storage/storage.h"

#include <fmt/format.h>

namespace tune::tuner {

std::string finished_trial_error(std::int64_t trial_id, search::TrialState state) {
  return fmt::format("trial id {} is finished ({}) and takes no more writes", trial_id,
                     search::to_string(state));
}

bool is_finished_trial_error(std::string_view error) {
  return error.find(") and takes no more writes") != std::string_view::npos &&
         error.find(" is finished (") != std::string_view::npos;
}

std::string missing_trial_error(std::int64_t trial_id) {
  return fmt::format("trial id {} does not exist", trial_id);
}

bool is_missing_trial_error(std::string_view error) {
  return error.find("trial id ") != std::string_view::npos && error.ends_with(" does not exist");
}

}  // namespace tune::tuner
