// The environment variables a program reads, as libtune_getenv.so (probes/env_reads.c) records
// them: preloaded into `tune init`'s probe run, it appends "NAME<TAB>LIBRARY" to
// $TUNE_ENV_READS/PID the first time a process reads NAME through getenv/secure_getenv from
// LIBRARY (the caller's file name: libgomp.so.1, libopenblasp-r0.3.21.so, python3.11). Names
// only, never values. What it cannot see: a program that reads `environ` itself (Python's
// os.environ is built from the environment at start, without getenv), a static binary, and a
// read made before the preload could act.
//
// read_env_reads() reads such a folder (bounded); parse_env_reads() is its pure part. Both
// thread-safe.
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
