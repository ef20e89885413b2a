#include "probes/blas_kernels.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include "probes/onednn_isa.h"

namespace tune::probes {

namespace {

bool has_all(const std::set<std::string>& flags, const std::vector<std::string_view>& needed) {
  return std::ranges::all_of(needed,
                             [&](std::string_view f) { return flags.contains(std::string(f)); });
}

// The core types worth offering: one per kernel family OpenBLAS 0.3.21 builds for x86-64 with
// DYNAMIC_ARCH (the others, Penryn or Bobcat, run the same kernels as one of these or older).
constexpr std::string_view k_offered[] = {"Cooperlake",  "SkylakeX", "Zen",   "Haswell",
                                          "Sandybridge", "Nehalem",  "Core2", "Prescott"};

}  // namespace

bool same_kernel_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string isa_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::sse3:
      return "SSE3";
    case IsaLevel::ssse3:
      return "SSSE3";
    case IsaLevel::sse4_2:
      return "SSE4.2";
    case IsaLevel::avx:
      return "AVX";
    case IsaLevel::avx2:
      return "AVX2";
    case IsaLevel::avx512:
      return "AVX-512";
    case IsaLevel::unknown:
      break;
  }
  return "an unknown instruction set";
}

std::set<std::string> read_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("flags")) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    std::set<std::string> out;
    for (std::string w; words >> w;) out.insert(w);
    return out;
  }
  return {};
}

IsaLevel cpu_isa(const std::set<std::string>& flags) {
  if (has_all(flags, {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}))
    return IsaLevel::avx512;
  if (has_all(flags, {"avx2", "fma"})) return IsaLevel::avx2;
  if (flags.contains("avx")) return IsaLevel::avx;
  if (flags.contains("sse4_2")) return IsaLevel::sse4_2;
  if (flags.contains("ssse3")) return IsaLevel::ssse3;
  if (flags.contains("pni")) return IsaLevel::sse3;
  return IsaLevel::unknown;
}

const std::vector<CoreType>& openblas_core_types() {
  static const std::vector<CoreType> types = {
      {"Sapphirerapids",
       IsaLevel::avx512,
       {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16", "amx_tile"}},
      {"Cooperlake",
       IsaLevel::avx512,
       {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"}},
      {"SkylakeX", IsaLevel::avx512, {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}},
      {"Zen", IsaLevel::avx2, {"avx2", "fma"}},
      {"Haswell", IsaLevel::avx2, {"avx2", "fma"}},
      {"Excavator", IsaLevel::avx2, {"avx2", "fma"}},
      {"Steamroller", IsaLevel::avx, {"avx", "fma"}},
      {"Piledriver", IsaLevel::avx, {"avx", "fma"}},
      {"Bulldozer", IsaLevel::avx, {"avx"}},
      {"Sandybridge", IsaLevel::avx, {"avx"}},
      {"Nehalem", IsaLevel::sse4_2, {"sse4_2"}},
      {"Dunnington", IsaLevel::ssse3, {"ssse3"}},
      {"Penryn", IsaLevel::ssse3, {"ssse3"}},
      {"Core2", IsaLevel::ssse3, {"ssse3"}},
      {"Atom", IsaLevel::ssse3, {"ssse3"}},
      {"Bobcat", IsaLevel::ssse3, {"ssse3"}},
      {"Nano", IsaLevel::ssse3, {"ssse3"}},
      {"Barcelona", IsaLevel::sse3, {"pni"}},
      {"Opteron_SSE3", IsaLevel::sse3, {"pni"}},
      {"Opteron", IsaLevel::sse3, {}},
      {"Prescott", IsaLevel::sse3, {"pni"}},
  };
  return types;
}

IsaLevel core_level(std::string_view core) {
  for (const CoreType& t : openblas_core_types())
    if (same_kernel_name(t.name, core)) return t.level;
  return IsaLevel::unknown;
}

std::vector<std::string> runnable_core_types(const std::set<std::string>& flags) {
  std::vector<std::pair<IsaLevel, std::string>> found;
  for (std::string_view name : k_offered)
    for (const CoreType& t : openblas_core_types())
      if (t.name == name && has_all(flags, t.flags)) found.emplace_back(t.level, name);
  std::ranges::stable_sort(found, [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& [level, name] : found) out.push_back(std::move(name));
  return out;
}

const std::vector<KernelLibrary>& kernel_libraries() {
  static const std::vector<KernelLibrary> libraries = {
      {"openblas",
       "OpenBLAS",
       "OPENBLAS_CORETYPE",
       "libopenblas.so.0",
       "core type",
       {"libopenblas"}},
      {"onednn",
       "oneDNN",
       "ONEDNN_MAX_CPU_ISA",
       "libdnnl.so.2",
       "instruction set",
       {"libdnnl", "[anon]"}},
  };
  return libraries;
}

const KernelLibrary* kernel_library(std::string_view kind) {
  for (const KernelLibrary& l : kernel_libraries())
    if (l.kind == kind) return &l;
  return nullptr;
}

bool kernel_name_known(std::string_view kind, std::string_view name) {
  if (kind == "onednn") return onednn_isa(name) != nullptr;
  return core_level(name) != IsaLevel::unknown;
}

KernelCheck parse_kernel_check(std::string_view output) {
  KernelCheck out;
  bool done = false;
  int doubles = 0, singles = 0;
  std::istringstream in{std::string(output)};
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    double x = 0;
    const auto parsed = std::from_chars(value.data(), value.data() + value.size(), x);
    const bool number = parsed.ec == std::errc() && parsed.ptr == value.data() + value.size();
    if (key == "core")
      out.core = value;
    else if (key == "done")
      done = true;
    else if (number && key == "dgemm_error")
      out.dgemm_error = x, ++doubles;
    else if (number && key == "sgemm_error")
      out.sgemm_error = x, ++singles;
    else if (number && key == "dgemm_gflops")
      out.dgemm_gflops = x, ++doubles;
    else if (number && key == "sgemm_gflops")
      out.sgemm_gflops = x, ++singles;
  }
  out.has_double = doubles == 2;
  out.ran = done && singles == 2 && (doubles == 0 || doubles == 2) && !out.core.empty();
  if (!out.ran) out.failure = "the check did not print all of its results";
  return out;
}

bool kernel_check_passes(const KernelCheck& check) {
  if (!check.ran) return false;
  if (!check.requested.empty() && !same_kernel_name(check.requested, check.core)) return false;
  return (!check.has_double || (check.dgemm_error <= 1.0 && check.dgemm_gflops > 0)) &&
         check.sgemm_error <= 1.0 && check.sgemm_gflops > 0;
}

}  // namespace tune::probes
