// Opening a study that exists, for the commands that read one (best, trials, report, export,
// confirm): a study file or a database names it, and --storage/--study override. Also where a
// study file's database is (storage_url_for), which the runner uses to create one.
//
// An OpenedStudy owns its storage connection and a StudyCache synced once; not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tuner/base/result.h"
#include "tuner/storage/study_cache.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// The storage URL a study file uses (its `storage:` or {output}/study.db).
std::string storage_url_for(const StudySpec& spec, const std::string& override_url);

// The choices of `spec`'s unresolved `type: kernel` parameters from the study's stored
// k_attr_study_kernel_choices ({"PARAM": ["SkylakeX", ...]}); a parameter it does not name, or
// names with something not a core type, keeps [null].
void apply_stored_kernel_choices(StudySpec& spec, const nlohmann::json& stored);

// An existing study, for the commands that read one (best, trials, report, export, confirm).
struct OpenedStudy {
  std::unique_ptr<Storage> storage;
  std::unique_ptr<StudyCache> cache;  // synced once
  std::optional<StudySpec> spec;      // when opened through its study file
  // The database it came from, as given: its password too (show redact_storage_url(url)).
  std::string url;
};

// `arg` is a study file (*.yaml/*.yml: its storage and name) or a database path/URL;
// `storage_url` (--storage) and `study_name` (--study) override. A database holding one study
// needs no name. Read-only by default: reading works on a database the user may not write.
Result<OpenedStudy> open_existing_study(const std::string& arg, const std::string& storage_url,
                                        const std::string& study_name,
                                        OpenMode mode = OpenMode::read_only);

}  // namespace tune::tuner
