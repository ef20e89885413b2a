// A trial's end as it is stored (FinalRecord), and `result.json` in the trial's folder, which keeps
// it when the database cannot take it, for the next `tune` on the study to store as measured.
// Plain functions over values; thread-safe as far as their arguments are.
// Design: docs/design-notes.md#tunerrunpending_resulth
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/measure/trial_record.h"  // FinalRecord
#include "tuner/storage/storage.h"

namespace tune::tuner {

// The name of the file in the trial's folder.
inline constexpr const char* k_pending_result_file = "result.json";

// Writes the record's attributes, state and values in one transaction (Storage::update_trial;
// with its intermediate values when `with_intermediate`: a resumed trial's, whose writes during
// the run may have been lost). false, nothing written, when the trial had already finished.
[[nodiscard]] StorageResult<bool> store_final_record(Storage& storage, std::int64_t trial_id,
                                                     const FinalRecord& record,
                                                     bool with_intermediate);

// Keeps `record` of `trial` in `path`, atomically; the error names the file.
[[nodiscard]] Result<void> keep_pending_result(const std::filesystem::path& path,
                                               const search::FrozenTrial& trial,
                                               const FinalRecord& record);

// The record kept in `path` for `trial` (its id and number must match); nullopt when there is
// no such file; an error naming the file when it cannot be read as one.
[[nodiscard]] Result<std::optional<FinalRecord>> read_pending_result(
    const std::filesystem::path& path, const search::FrozenTrial& trial);

}  // namespace tune::tuner
