#include "tuner/base/install_layout.h"

#include <unistd.h>

namespace tune::tuner {

namespace fs = std::filesystem;

fs::path executable_path() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path{} : self;
}

fs::path executable_dir() { return executable_path().parent_path(); }

fs::path sibling_program(const std::string& name) {
  const auto dir = executable_dir();
  if (dir.empty()) return {};
  auto candidate = dir / name;
  return ::access(candidate.c_str(), X_OK) == 0 ? candidate : fs::path{};
}

fs::path plugin_library(const std::string& name) {
  const fs::path exe = executable_dir();
  if (exe.empty()) return {};
  std::error_code ec;
  for (const auto& candidate : {exe / name, exe.parent_path() / "lib" / "tune" / name})
    if (fs::is_regular_file(candidate, ec)) return candidate;
  return {};
}

fs::path data_dir() {
  const auto bin = executable_dir();
  return bin.empty() ? fs::path{} : bin.parent_path() / "share" / "tune";
}

std::string resolve_study_file(const std::string& argument) {
  std::error_code ec;
  if (argument.empty() || argument.find('/') != std::string::npos || fs::exists(argument, ec))
    return argument;
  const auto share = data_dir();
  if (share.empty()) return argument;
  const bool has_suffix = argument.ends_with(".yaml") || argument.ends_with(".yml");
  const auto ready = share / "studies" / (has_suffix ? argument : argument + ".yaml");
  return fs::is_regular_file(ready, ec) ? ready.string() : argument;
}

}  // namespace tune::tuner
