// Which programs a trial really ran (the launcher and the program as PATH resolves them, an
// interpreter's version), stored on every trial and checked by exported scripts.
// Not thread-safe (one runner, one thread).
// Design: docs/design-notes.md#tunerlaunchprogram_identityh
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/launch/rendered_launch.h"

namespace tune::tuner {

struct ProgramIdentity {
  std::string role;       // "launcher" (mpirun, srun) or "program"
  std::string name;       // as the study writes it: "python3", "./a.out", "/usr/bin/mpirun"
  std::string path;       // what PATH gives for it (as written when it holds a '/'); "" = none
  std::string real_path;  // `path` with every symbolic link resolved
  std::string version;    // an interpreter's `--version` line; "" for other programs
};

nlohmann::json to_json(const ProgramIdentity& identity);
// The stored form back; entries that are not objects with a string "name" are skipped (trial
// attrs are anyone's to write).
std::vector<ProgramIdentity> programs_from_json(const nlohmann::json& stored);

// `name` looked up in the PATH of `env` (a trial's whole environment), as execvp(3) does: only
// names without a '/' are searched; a relative name with a '/' is taken from `workdir`.
std::string find_in_path(const std::string& name, const std::map<std::string, std::string>& env,
                         const std::string& workdir = "");

class ProgramIdentities {
 public:
  // The launcher and the program of `launch`, resolved with `env` (the environment the trial
  // starts with: tune's own with the trial's env_set and env_unset applied).
  std::vector<ProgramIdentity> identify(const RenderedLaunch& launch,
                                        const std::map<std::string, std::string>& env,
                                        const std::string& workdir);

 private:
  ProgramIdentity identify_one(const std::string& role, const std::string& name,
                               const std::map<std::string, std::string>& env,
                               const std::string& workdir);
  std::map<std::pair<std::string, std::string>, ProgramIdentity> m_cache;  // (name, PATH)
};

}  // namespace tune::tuner
