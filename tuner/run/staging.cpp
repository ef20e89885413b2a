#include "tuner/run/staging.h"

#include <fmt/format.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// Writes `text` to `path`, reporting what the system said (ENOSPC, EACCES, ...) when it fails.
Result<void> write_text(const fs::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return std::unexpected(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    return std::unexpected(fmt::format("cannot write {}: {}", path.string(),
                                       std::strerror(wrote ? errno : write_errno)));
  }
  return {};
}

Result<void> stage_one(const StagedFile& file, const fs::path& dest, const TemplateValues& values) {
  std::error_code ec;
  if (dest.has_parent_path()) {
    fs::create_directories(dest.parent_path(), ec);
    if (!ec && !fs::is_directory(dest.parent_path()))
      ec = std::make_error_code(std::errc::not_a_directory);
    if (ec) {
      return std::unexpected(
          fmt::format("cannot create {}: {}", dest.parent_path().string(), ec.message()));
    }
  }
  const auto status = fs::symlink_status(dest, ec);
  if (fs::exists(status)) {
    if (file.mode != StagedFile::Mode::render && fs::equivalent(file.src, dest, ec)) return {};
    // A shared working directory (workdir: study) may hold the user's own folders: a copied
    // folder is merged into its earlier copy, and nothing else ever deletes one.
    const bool merge = file.mode == StagedFile::Mode::copy && fs::is_directory(status) &&
                       fs::is_directory(file.src, ec);
    if (fs::is_directory(status) && !merge) {
      return std::unexpected(
          fmt::format("cannot write {}: a folder is there (staging replaces files, never folders)",
                      dest.string()));
    }
    if (!merge && !fs::remove(dest, ec)) {
      return std::unexpected(fmt::format("cannot replace {}: {}", dest.string(), ec.message()));
    }
  }
  switch (file.mode) {
    case StagedFile::Mode::copy:
      fs::copy(file.src, dest, fs::copy_options::recursive | fs::copy_options::overwrite_existing,
               ec);
      if (!ec && !fs::exists(fs::symlink_status(dest, ec)))
        ec = std::make_error_code(std::errc::no_such_file_or_directory);
      if (ec) {
        return std::unexpected(
            fmt::format("cannot copy {} to {}: {}", file.src, dest.string(), ec.message()));
      }
      return {};
    case StagedFile::Mode::link:
      fs::create_symlink(file.src, dest, ec);
      if (ec) {
        return std::unexpected(
            fmt::format("cannot link {} to {}: {}", dest.string(), file.src, ec.message()));
      }
      return {};
    case StagedFile::Mode::render: {
      auto text = expand_text(file.text, values);
      if (!text) return std::unexpected(fmt::format("template {}: {}", file.src, text.error()));
      return write_text(dest, *text);
    }
  }
  return {};
}

}  // namespace

Result<nlohmann::json> stage_files(const std::vector<StagedFile>& files, const std::string& workdir,
                                   const TemplateValues& values) {
  nlohmann::json record = nlohmann::json::array();
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& file = files[i];
    if (auto ok = stage_one(file, fs::path(workdir) / file.dest, values); !ok)
      return std::unexpected(fmt::format("staging files[{}]: {}", i, ok.error()));
    record.push_back(
        {{"dest", file.dest}, {"src", file.src}, {"mode", staged_mode_name(file.mode)}});
  }
  return record;
}

}  // namespace tune::tuner
