#include "tuner/base/temp_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace tune::tuner {
namespace {

// The variable std::filesystem::temp_directory_path reads first, with its value; "" for /tmp.
std::pair<std::string, std::string> temp_dir_source() {
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0')
      return {name, value};
  return {"", "/tmp"};
}

}  // namespace

std::string temp_dir_or_empty() {
  std::error_code ec;
  auto dir = std::filesystem::temp_directory_path(ec);
  return ec ? std::string() : dir.string();
}

Result<std::string> make_temp_dir(std::string_view prefix) {
  const auto [variable, dir] = temp_dir_source();
  std::string pattern = (std::filesystem::path(dir) / fmt::format("{}XXXXXX", prefix)).string();
  if (::mkdtemp(pattern.data()) != nullptr) return pattern;
  const int err = errno;
  if (variable.empty())
    return std::unexpected(
        fmt::format("cannot make a temporary folder in {}: {}", dir, std::strerror(err)));
  return std::unexpected(
      fmt::format("cannot make a temporary folder in {} (the folder {} names): {}; set {} to a "
                  "writable folder",
                  dir, variable, std::strerror(err), variable));
}

}  // namespace tune::tuner
