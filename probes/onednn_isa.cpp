#include "probes/onednn_isa.h"

#include <algorithm>

#include "probes/blas_kernels.h"

namespace tune::probes {

namespace {

// dnnl_cpu_isa_t's values (oneDNN's include/oneapi/dnnl/dnnl_types.h): the same in 2.x and 3.x
// but for AMX (0x3e7 in 2.x, 0xfe7 in 3.x); AVX512_CORE_FP16 is 3.x's.
struct Code {
  std::string_view name;
  unsigned code;
  int from_major, to_major;
};
constexpr Code k_codes[] = {
    {"SSE41", 0x1, 1, 99},
    {"AVX", 0x3, 1, 99},
    {"AVX2", 0x7, 1, 99},
    {"AVX2_VNNI", 0x407, 2, 99},
    {"AVX512_CORE", 0x27, 1, 99},
    {"AVX512_CORE_VNNI", 0x67, 1, 99},
    {"AVX512_CORE_BF16", 0xe7, 1, 99},
    {"AVX512_CORE_FP16", 0x1ef, 3, 99},
    {"AVX512_CORE_AMX", 0x3e7, 2, 2},
    {"AVX512_CORE_AMX", 0xfe7, 3, 99},
};

bool known_to(std::string_view name, int major) {
  return std::ranges::any_of(k_codes, [&](const Code& c) {
    return c.name == name && major >= c.from_major && major <= c.to_major;
  });
}

}  // namespace

const std::vector<OnednnIsa>& onednn_isas() {
  static const std::vector<std::string_view> avx512 = {"avx512f", "avx512bw", "avx512vl",
                                                       "avx512dq"};
  const auto with = [](std::vector<std::string_view> more) {
    std::vector<std::string_view> out = avx512;
    out.insert(out.end(), more.begin(), more.end());
    return out;
  };
  static const std::vector<OnednnIsa> isas = {
      {"AVX512_CORE_AMX", 9,
       with({"avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"}),
       "AVX-512 with AMX"},
      {"AVX512_CORE_FP16", 8, with({"avx512_vnni", "avx512_bf16", "avx512_fp16"}),
       "AVX-512 with FP16"},
      {"AVX512_CORE_BF16", 7, with({"avx512_vnni", "avx512_bf16"}), "AVX-512 with VNNI and BF16"},
      {"AVX512_CORE_VNNI", 6, with({"avx512_vnni"}), "AVX-512 with VNNI"},
      {"AVX512_CORE", 5, avx512, "AVX-512"},
      {"AVX2_VNNI", 4, {"avx2", "avx_vnni"}, "AVX2 with VNNI"},
      {"AVX2", 3, {"avx2"}, "AVX2"},
      {"AVX", 2, {"avx"}, "AVX"},
      {"SSE41", 1, {"sse4_1"}, "SSE4.1"},
  };
  return isas;
}

const OnednnIsa* onednn_isa(std::string_view name) {
  for (const OnednnIsa& i : onednn_isas())
    if (same_kernel_name(i.name, name)) return &i;
  return nullptr;
}

bool onednn_isa_below(std::string_view isa, std::string_view best) {
  const OnednnIsa* a = onednn_isa(isa);
  const OnednnIsa* b = onednn_isa(best);
  return a != nullptr && b != nullptr && a->rank < b->rank;
}

std::string onednn_isa_of_code(unsigned code, int major) {
  for (const Code& c : k_codes)
    if (c.code == code && major >= c.from_major && major <= c.to_major) return std::string(c.name);
  return "";
}

std::vector<std::string> runnable_onednn_isas(const std::set<std::string>& flags, int major) {
  std::vector<std::string> out;
  for (const OnednnIsa& i : onednn_isas())
    if (known_to(i.name, major) && std::ranges::all_of(i.flags, [&](std::string_view f) {
          return flags.contains(std::string(f));
        }))
      out.emplace_back(i.name);
  return out;
}

}  // namespace tune::probes
