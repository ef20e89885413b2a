// The private folder a trial's processes write their thread origins and library answers to
// (tune-threads-XXXXXX under the temporary folder): who made it, and the sweep that removes those
// whose maker is gone. tune removes a trial's folder when the trial ends; a tune killed with
// SIGKILL (a batch system's time limit, an OOM kill) cannot, and each such kill left one behind.
// Design: docs/design-notes.md#tunerprobingorigins_folderh
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace tune::tuner {

inline constexpr const char* k_origins_prefix = "tune-threads-";

// The folder's maker: a process id and its start time (ticks after boot, /proc/PID/stat field
// 22), which together name one process even after the id is reused, in one PID namespace of
// the machine of a boot (probes::this_machine_id and /proc/self/ns/pid): a temporary folder
// shared by several nodes, or by containers, holds folders whose owners this process cannot see.
struct OriginsOwner {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;
  std::string machine;
};

// Writes this process as the owner of `folder` (its k_origins_owner file: "PID START MACHINE\n");
// the file's presence also tells a node watcher on this machine that the folder is tune's.
void write_origins_owner(const std::filesystem::path& folder);

// The owner `folder` names; nullopt when the file is missing, empty (tune before it wrote one)
// or not two numbers and a machine.
std::optional<OriginsOwner> read_origins_owner(const std::filesystem::path& folder);

// Removes the tune-threads-* folders directly under `root` that this user owns, made on this
// machine since its boot, whose owner process is gone (no such pid, or another process's start
// time). A folder whose owner cannot be
// read is left alone: it may be another tune's, older than the owner record. The number removed.
int remove_orphaned_origins(const std::filesystem::path& root);

}  // namespace tune::tuner
