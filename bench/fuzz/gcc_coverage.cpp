// Coverage feedback for libFuzzer when the code is compiled by GCC.
//
// clang++ 14 (the clang in Debian 12) cannot compile this project: libstdc++ 12 offers
// std::expected only to compilers that implement conditionally trivial destructors (P0848),
// which clang has from version 16. GCC has no -fsanitize=fuzzer, but it has
// -fsanitize-coverage=trace-pc (a call to __sanitizer_cov_trace_pc at every basic block) and
// trace-cmp (the __sanitizer_cov_trace_cmp* hooks, which libFuzzer implements). libFuzzer 14's
// own __sanitizer_cov_trace_pc only says "unsupported" and exits, so the link wraps that symbol
// (-Wl,--wrap) and this file supplies it: each block's return address, relative to the start of
// the executable (so the same block lands in the same slot in every run, whatever the ASLR
// base), is hashed into one of k_slots 8-bit counters that are handed to libFuzzer exactly as
// clang's inline-8bit-counters would be. Hash collisions merge a few blocks; the fuzzer still
// sees new blocks and new hit-count buckets, which is all its feature set uses.
//
// Compiled without sanitizers or coverage (CMake clears the target's options): a hook that
// instrumented itself would recurse. Single-threaded like the fuzz targets; not thread-safe.
#include <cstddef>
#include <cstdint>

extern "C" {
void __sanitizer_cov_8bit_counters_init(std::uint8_t* begin, std::uint8_t* end);
void __sanitizer_cov_pcs_init(const std::uintptr_t* begin, const std::uintptr_t* end);
extern const char __executable_start;  // GNU ld: the first byte of the loaded executable
}

namespace {

constexpr int k_slot_bits = 16;
constexpr std::size_t k_slots = std::size_t{1} << k_slot_bits;

alignas(64) std::uint8_t slot_counters[k_slots];
// libFuzzer's PC table: one {pc, flags} pair per counter. The pc is the first block seen in the
// slot, so -print_pcs and -print_coverage name real code; flags 0 (no function entries known).
struct PcEntry {
  std::uintptr_t pc;
  std::uintptr_t flags;
};
PcEntry slot_pcs[k_slots];

// Runs before main (libFuzzer's driver), like the module constructors clang emits.
__attribute__((constructor)) void register_counters() {
  __sanitizer_cov_8bit_counters_init(slot_counters, slot_counters + k_slots);
  __sanitizer_cov_pcs_init(reinterpret_cast<const std::uintptr_t*>(slot_pcs),
                           reinterpret_cast<const std::uintptr_t*>(slot_pcs + k_slots));
}

}  // namespace

extern "C" {

__attribute__((no_sanitize_coverage)) void __wrap___sanitizer_cov_trace_pc() {
  const auto pc = reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
  const std::uint64_t offset = pc - reinterpret_cast<std::uintptr_t>(&__executable_start);
  const std::size_t slot = (offset * 0x9E3779B97F4A7C15ull) >> (64 - k_slot_bits);
  ++slot_counters[slot];
  if (slot_pcs[slot].pc == 0) slot_pcs[slot].pc = pc;
}

// GCC's trace-cmp also reports floating-point comparisons; libFuzzer has no hook for them.
__attribute__((no_sanitize_coverage)) void __sanitizer_cov_trace_cmpf(float, float) {}
__attribute__((no_sanitize_coverage)) void __sanitizer_cov_trace_cmpd(double, double) {}

}  // extern "C"
