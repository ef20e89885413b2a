#include "tuner/run/pending_result.h"

#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "tuner/base/file_write.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

constexpr int k_format = 1;  // "tune_pending_result": the file's format version

}  // namespace

StorageResult<bool> store_final_record(Storage& storage, std::int64_t trial_id,
                                       const FinalRecord& record, bool with_intermediate) {
  // One transaction: the trial ends with everything its end records, or not at all.
  TrialUpdate end;
  if (with_intermediate) end.intermediate_values = record.intermediate_values;
  end.user_attrs = record.user_attrs;
  end.system_attrs = record.system_attrs;
  end.state = record.state;
  end.values = TrialValues(record.values);
  return storage.update_trial(trial_id, end);
}

Result<void> keep_pending_result(const fs::path& path, const search::FrozenTrial& trial,
                                 const FinalRecord& record) {
  nlohmann::json steps = nlohmann::json::object();
  for (const auto& [step, value] : record.intermediate_values) steps[std::to_string(step)] = value;
  const nlohmann::json doc = {{"tune_pending_result", k_format},
                              {"trial_id", trial.trial_id},
                              {"number", trial.number},
                              {"state", search::to_string(record.state)},
                              {"state_code", static_cast<int>(record.state)},
                              {"values", record.values},
                              {"user_attrs", record.user_attrs},
                              {"system_attrs", record.system_attrs},
                              {"intermediate_values", steps},
                              {"rerun", record.rerun}};
  // Whole or not at all (file_write.h), so a crash leaves the old state or the whole record,
  // never half of one.
  if (auto written = write_file_atomically(path, doc.dump(2) + "\n"); !written)
    return std::unexpected(fmt::format("writing {}: {}", path.string(), written.error()));
  return {};
}

Result<std::optional<FinalRecord>> read_pending_result(const fs::path& path,
                                                       const search::FrozenTrial& trial) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<FinalRecord>();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const auto bad = [&](std::string_view why) -> std::unexpected<std::string> {
    return std::unexpected(fmt::format("{}: {}", path.string(), why));
  };
  const auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("tune_pending_result", 0) != k_format)
    return bad("not a result file of this tune");
  if (doc.value("trial_id", std::int64_t{-1}) != trial.trial_id ||
      doc.value("number", -1) != trial.number) {
    return bad(fmt::format("holds trial {} (id {}), not trial {} (id {})", doc.value("number", -1),
                           doc.value("trial_id", std::int64_t{-1}), trial.number, trial.trial_id));
  }
  FinalRecord record;
  try {
    const int code = doc.at("state_code").get<int>();
    // A kept result is a trial's end: COMPLETE, PRUNED or FAIL.
    if (code < 1 || code > 3)
      return bad(fmt::format("state_code {} is no finished trial's state", code));
    record.state = static_cast<search::TrialState>(code);
    record.values = doc.at("values").get<std::vector<double>>();
    record.user_attrs = doc.at("user_attrs");
    record.system_attrs = doc.at("system_attrs");
    for (const auto& [step, value] : doc.at("intermediate_values").items())
      record.intermediate_values[std::stoll(step)] = value.get<double>();
    record.rerun = doc.value("rerun", false);
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  if (!record.user_attrs.is_object() || !record.system_attrs.is_object())
    return bad("user_attrs and system_attrs must be objects");
  return record;
}

}  // namespace tune::tuner
