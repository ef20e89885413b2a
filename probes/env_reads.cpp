#include "probes/env_reads.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tune::probes {
namespace {

bool portable(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// A library's file name as recorded: printable ASCII without '/', at most 200 bytes.
bool plain_library(const std::string& lib) {
  if (lib.empty() || lib.size() > 200) return false;
  for (char c : lib) {
    if (c < 0x21 || c > 0x7e || c == '/') return false;
  }
  return true;
}

}  // namespace

void parse_env_reads(const std::string& text, EnvReads& out, std::size_t max_names) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const std::string name = line.substr(0, tab), lib = line.substr(tab + 1);
    if (!portable(name) || !plain_library(lib)) continue;
    if (!out.contains(name) && out.size() >= max_names) continue;
    auto& libs = out[name];
    if (libs.size() < 16) libs.insert(lib);
  }
}

EnvReads read_env_reads(const std::string& dir) {
  namespace fs = std::filesystem;
  constexpr std::size_t k_file_bytes = 256u << 10;
  constexpr int k_files = 4096;
  EnvReads out;
  std::error_code ec;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (++files > k_files) break;
    if (!entry.is_regular_file(ec)) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text(k_file_bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    parse_env_reads(text, out);
  }
  return out;
}

}  // namespace tune::probes
