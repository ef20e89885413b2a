// The environment variables a program reads (names only), as libtune_getenv.so records them in
// `tune init`'s probe run. read_env_reads() and parse_env_reads() are thread-safe.
// Design: docs/design-notes.md#probesenv_readsh
#pragma once

#include <map>
#include <set>
#include <string>

namespace tune::probes {

inline constexpr const char* k_env_reads_env = "TUNE_ENV_READS";
inline constexpr const char* k_env_reads_library = "libtune_getenv.so";

// Variable name -> the libraries that read it (file names; "?" when the caller was unknown).
using EnvReads = std::map<std::string, std::set<std::string>>;

// Adds the lines of one process's file to `out`: lines that are not NAME<TAB>LIBRARY with a
// portable name of at most 128 bytes are skipped; at most `max_names` names are kept in all.
void parse_env_reads(const std::string& text, EnvReads& out, std::size_t max_names = 4096);

// Every process file of `dir` (at most 256 KiB of each, 4096 files).
EnvReads read_env_reads(const std::string& dir);

}  // namespace tune::probes
