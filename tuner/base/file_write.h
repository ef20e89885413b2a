// Files written whole: a file tune writes for the user or for a later run (a report, an exported
// script, a trial's kept result) either holds all of its new text or is left as it was, never
// cut short by a full disk, an I/O error or a crash in the middle, and a failure says why in the
// system's own words (strerror). Plain functions over the file system; thread-safe as far as
// their paths are.
#pragma once

#include <filesystem>
#include <string_view>

#include "tuner/base/result.h"

namespace tune::tuner {

struct FileWriteOptions {
  // Executable by whoever may read it (x added for owner, group and others where they have r): a
  // script. The mode is otherwise the replaced file's, or the creation default (0666 less the
  // umask) for a new file.
  bool executable = false;
  // Whether an existing `path` may be replaced. When false, a file that appears at `path` while
  // this writes is not replaced either (rename without replacing): the error says it exists.
  bool replace = true;
};

// Writes `text` as the whole file `path` (through a symbolic link, which stays): into a temporary
// file in the same folder (".NAME.*"), flushed to disk (fsync), then renamed over `path`
// (rename(2): a reader sees the old file or the new one), and the folder flushed. A replaced file's
// permission bits are kept. On failure `path` is as it was (the old file whole, or none) and the
// temporary file is removed; the error is the step and the cause, without the path, for the caller
// to name: "cannot create the file: No such file or directory", "cannot write the file: No space
// left on device", "cannot replace the file: Is a directory".
[[nodiscard]] Result<void> write_file_atomically(const std::filesystem::path& path,
                                                 std::string_view text,
                                                 const FileWriteOptions& options = {});

// Writes `text` into what `path` already names without replacing it: for a character device or
// a FIFO (/dev/null, a named pipe), which has no contents to keep and cannot be renamed over.
// The error is as write_file_atomically's ("cannot write the file: No space left on device" for
// /dev/full).
[[nodiscard]] Result<void> write_into_existing(const std::filesystem::path& path,
                                               std::string_view text);

}  // namespace tune::tuner
