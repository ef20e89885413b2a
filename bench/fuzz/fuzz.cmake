# Compiler flags for the fuzz build (-DTUNE_FUZZ=ON, build dir build-fuzz, see scripts/fuzz.sh),
# included by the top-level CMakeLists.txt before any module so that every library the fuzz
# targets link is instrumented for coverage, not just the targets themselves. ASan + UBSan come
# from the top level (TUNE_FUZZ implies them).
#
# clang >= 16: -fsanitize=fuzzer-no-link here, -fsanitize=fuzzer on the targets.
# GCC: trace-pc + trace-cmp coverage, fed to the libFuzzer runtime from libclang-rt-*-dev by
# bench/fuzz/gcc_coverage.cpp. This is the route on Debian 12: its clang 14 cannot compile the
# project (libstdc++ 12 hides std::expected from compilers without P0848, clang < 16).
include(CheckCXXSourceCompiles)
check_cxx_source_compiles([[
#include <expected>
#include <string>
int main() { std::expected<int, std::string> e = std::unexpected(std::string("x")); return e ? 1 : 0; }
]] TUNE_FUZZ_COMPILER_HAS_EXPECTED)
if(NOT TUNE_FUZZ_COMPILER_HAS_EXPECTED)
  message(FATAL_ERROR "TUNE_FUZZ: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} cannot "
    "compile std::expected with this standard library (clang needs >= 16 with libstdc++ 12); "
    "configure the fuzz build with g++ (scripts/fuzz.sh does)")
endif()

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options(-fsanitize=fuzzer-no-link)
  set(TUNE_FUZZ_ENGINE clang)
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-fsanitize-coverage=trace-pc,trace-cmp)
  # The newest libFuzzer runtime installed (Debian: libclang-rt-14-dev).
  file(GLOB tune_libfuzzer_candidates
    /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a)
  list(SORT tune_libfuzzer_candidates COMPARE NATURAL ORDER DESCENDING)
  list(GET tune_libfuzzer_candidates 0 tune_libfuzzer_default)
  set(TUNE_LIBFUZZER "${tune_libfuzzer_default}" CACHE FILEPATH
    "libclang_rt.fuzzer-x86_64.a (libFuzzer's engine and main) for GCC fuzz builds")
  if(NOT EXISTS "${TUNE_LIBFUZZER}")
    message(FATAL_ERROR "TUNE_FUZZ with GCC needs libFuzzer's runtime "
      "(libclang_rt.fuzzer-x86_64.a, Debian package libclang-rt-14-dev); set TUNE_LIBFUZZER")
  endif()
  set(TUNE_FUZZ_ENGINE gcc)
else()
  message(FATAL_ERROR "TUNE_FUZZ supports clang >= 16 and GCC, not ${CMAKE_CXX_COMPILER_ID}")
endif()
