// Running a command from an end-to-end test: its exit status and output, through tune's own
// launcher (tuner/launcher.h: a wall-clock limit, and nothing it starts outlives it). Shared by
// the e2e and cluster tests; header-only. Not thread-safe: `run` numbers its output files with
// a process-wide counter.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tuner/launcher.h"

namespace tune::test_support {

struct Ran {
  bool started = false;
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs argv in `dir` with `env` added; its stdout and stderr are kept in dir/cmdN.{out,err}.
inline Ran run(const std::filesystem::path& dir, std::vector<std::string> argv,
               std::map<std::string, std::string> env = {}, double timeout_s = 120) {
  static int counter = 0;
  const auto tag = std::to_string(++counter);
  tuner::LaunchRequest req;
  req.argv = std::move(argv);
  req.env_set = std::move(env);
  req.workdir = dir.string();
  req.stdout_path = (dir / ("cmd" + tag + ".out")).string();
  req.stderr_path = (dir / ("cmd" + tag + ".err")).string();
  req.timeout_s = timeout_s;
  const auto r = tuner::run_process(req);
  return {r.started, r.exit_code, slurp(req.stdout_path), slurp(req.stderr_path)};
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
