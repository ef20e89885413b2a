// Staging: a study's `files:` (StagedFile, tuner/study/study_file.h) put into one trial's working
// directory before its command runs: copies, symbolic links and rendered templates.
//
// A copy is what the user means by one: a regular file is reflinked (FICLONE) where the file
// system can, else its data copied with its holes left holes (SEEK_DATA/SEEK_HOLE,
// copy_file_range), so a sparse file stays sparse; a folder is copied through, its symbolic
// links followed. The study file refused anything else as it loaded; what changed since (a
// FIFO now where a file was, a link loop) fails the trial by name, never blocks it.
//
// A failure (a source gone since the study loaded, a full disk) comes back as an error naming
// the path and the system's reason; the runner stores it as the trial's FAIL reason. What was
// staged comes back as the trial's `files` user attribute, the record `tune export` and a reader
// of the database go by. Stateless; thread-safe for distinct working directories.
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
