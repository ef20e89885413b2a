// Staging: a study's `files:` put into one trial's working directory before its command runs
// (copies, symbolic links, rendered templates); a failure names the path and the system's reason.
// Stateless; thread-safe for distinct working directories.
// Design: docs/design-notes.md#tunerrunstagingh
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/base/result.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// Stages `files` in order into `workdir` (which exists), templates rendered with `values`.
// Returns [{"dest", "src", "mode"}, ...]. A file already at a destination is replaced, unless it
// is the source itself (workdir: study with an input staged onto itself is left alone).
Result<nlohmann::json> stage_files(const std::vector<StagedFile>& files, const std::string& workdir,
                                   const TemplateValues& values);

}  // namespace tune::tuner
