#include "tuner/launch/program_identity.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include <unistd.h>

#include "tuner/base/text.h"
#include "tuner/launch/launcher.h"

namespace tune::tuner {

namespace fs = std::filesystem;

namespace {

bool is_interpreter(const std::string& path) {
  const std::string base = fs::path(path).filename().string();
  for (const char* prefix : {"python", "pypy", "perl", "ruby", "Rscript", "julia", "node"}) {
    if (base.starts_with(prefix)) return true;
  }
  return false;
}

// The interpreter's `--version` line (Python 2 prints it on stderr), bounded in time.
std::string version_of(const std::string& path, const std::map<std::string, std::string>& env) {
  LaunchRequest request;
  request.argv = {path, "--version"};
  request.env_set = env;
  request.timeout_s = 10;
  const CapturedRun run = run_captured(request, 200);
  if (!run.result.started || run.result.exit_code != 0) return "";
  // The last line that says something (Python 2 prints its version on stderr).
  const auto last_line = [](std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
      text.pop_back();
    return printable(text.substr(text.rfind('\n') + 1), 200);
  };
  const std::string line = last_line(run.out);
  return line.empty() ? last_line(run.err) : line;
}

}  // namespace

nlohmann::json to_json(const ProgramIdentity& p) {
  nlohmann::json j = {
      {"role", p.role}, {"name", p.name}, {"path", p.path}, {"real_path", p.real_path}};
  if (!p.version.empty()) j["version"] = p.version;
  return j;
}

std::vector<ProgramIdentity> programs_from_json(const nlohmann::json& stored) {
  std::vector<ProgramIdentity> out;
  if (!stored.is_array()) return out;
  const auto text = [](const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (const auto& j : stored) {
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) continue;
    out.push_back({text(j, "role"), text(j, "name"), text(j, "path"), text(j, "real_path"),
                   text(j, "version")});
  }
  return out;
}

std::string find_in_path(const std::string& name, const std::map<std::string, std::string>& env,
                         const std::string& workdir) {
  std::error_code ec;
  if (name.empty()) return "";
  if (name.contains('/')) {
    fs::path p(name);
    if (p.is_relative() && !workdir.empty()) p = fs::path(workdir) / p;
    return fs::exists(p, ec) ? p.lexically_normal().string() : "";
  }
  const auto it = env.find("PATH");
  std::istringstream dirs(it == env.end() ? std::string("/usr/local/bin:/usr/bin:/bin")
                                          : it->second);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    // An empty PATH entry is the current folder, as for execvp.
    const fs::path candidate =
        fs::path(dir.empty() ? (workdir.empty() ? "." : workdir) : dir) / name;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return "";
}

ProgramIdentity ProgramIdentities::identify_one(const std::string& role, const std::string& name,
                                                const std::map<std::string, std::string>& env,
                                                const std::string& workdir) {
  const auto path_it = env.find("PATH");
  const auto key = std::make_pair(name, path_it == env.end() ? std::string() : path_it->second);
  if (const auto it = m_cache.find(key); it != m_cache.end() && !name.starts_with(".")) {
    ProgramIdentity cached = it->second;
    cached.role = role;
    return cached;
  }
  ProgramIdentity p{role, name, find_in_path(name, env, workdir), "", ""};
  std::error_code ec;
  if (!p.path.empty()) {
    const auto real = fs::canonical(p.path, ec);
    p.real_path = ec ? p.path : real.string();
    if (is_interpreter(p.real_path) || is_interpreter(p.path)) p.version = version_of(p.path, env);
  }
  m_cache[key] = p;
  return p;
}

std::vector<ProgramIdentity> ProgramIdentities::identify(
    const RenderedLaunch& launch, const std::map<std::string, std::string>& env,
    const std::string& workdir) {
  std::vector<ProgramIdentity> out;
  if (const auto launcher = launch.kind->program())
    out.push_back(identify_one("launcher", *launcher, env, workdir));
  if (!launch.command.empty())
    out.push_back(identify_one("program", launch.command.front(), env, workdir));
  return out;
}

}  // namespace tune::tuner
