// Running a command from an end-to-end or cluster test, in the shorthand those tests use (`run`
// with numbered output files, `slurp`, `on_path`), over tests/common/test_support.h's
// run_command (tune's own launcher: a wall-clock limit, and nothing it starts outlives it).
// Header-only. Not thread-safe: `run` numbers its output files with a process-wide counter.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/common/test_support.h"

namespace tune::test_support {

using Ran = CommandOutput;

inline std::string slurp(const std::filesystem::path& p) { return read_file(p); }

// Runs argv in `dir` with `env` added; its stdout and stderr are kept in dir/cmdN.{out,err}.
inline Ran run(const std::filesystem::path& dir, const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& env = {}, double timeout_s = 120) {
  static int counter = 0;
  return run_command(argv, dir, env, "cmd" + std::to_string(++counter), timeout_s);
}

// Whether `program` is in PATH or in a system bin folder (daemons live in sbin).
inline bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  for (std::size_t a = 0; a <= p.size();) {
    const auto b = std::min(p.find(':', a), p.size());
    if (std::filesystem::exists(std::filesystem::path(p.substr(a, b - a)) / program)) return true;
    a = b + 1;
  }
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin"})
    if (std::filesystem::exists(std::filesystem::path(dir) / program)) return true;
  return false;
}

}  // namespace tune::test_support
