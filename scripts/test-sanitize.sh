#!/usr/bin/env bash
# The unit tests of search/, probes/ and tuner/, built with AddressSanitizer +
# UndefinedBehaviorSanitizer (-DTUNE_SANITIZE=ON, Debug) in build-asan/. Part of the test
# command: scripts/test.sh runs it after ctest, and this is where those three suites run (its
# build/ leaves them out). Any ASan or UBSan report, a leak or a failed test fails the run. About
# 14 minutes on 2 cores, most of it the build (-O0: a third of the compile time of -O2 under the
# sanitizers, and the unit tests need no speed; the suites' own sources are not instrumented).
#
#   scripts/test-sanitize.sh [GTEST_FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-asan
targets=(search_unit_tests probes_unit_tests tuner_unit_tests)
# -g1: line tables only, which is what ASan's and UBSan's reports print (file:line of each
# frame); full debug info (-g) cost a tenth of this build's time and no report reads it.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DCMAKE_C_FLAGS_DEBUG=-g1 -DTUNE_SANITIZE=ON -DTUNE_BUILD_BENCH=OFF \
  -DTUNE_WITH_CUDA=OFF -DTUNE_MODULES="search;probes;tuner" -DTUNE_UNIT_SUITES=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

# strict_memcmp=0: Boost.Process 1.74's environment lookup (environment.hpp, find) compares
# "KEY=" with every entry by memcmp over the key's length, past the end of a shorter entry; the
# comparison stops at the first differing byte (at the latest the entry's NUL), so only the bytes
# memcmp really reads are checked.
# verify_asan_link_order=0: the sanitized tune-keeper is started with a trial's LD_PRELOAD (the
# probes' libtune_threads.so, init's libstdbuf, a study's allocator), which then loads before
# the ASan runtime; the check would abort the keeper, not find a bug.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:strict_memcmp=0:verify_asan_link_order=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# hwloc's PCI plugin dlclose()s libpciaccess while that library's globals still point at what
# it allocated, so LeakSanitizer reports those blocks (from an "<unknown module>") at exit. The
# probes need no PCI devices for their tests; leaving the component out removes that false leak.
export HWLOC_COMPONENTS=-pci

failed=()
for t in "${targets[@]}"; do
  echo "== $t (ASan + UBSan)"
  "$build/bin/$t" --gtest_brief=1 --gtest_filter="${1:-*}" || failed+=("$t")
done
if ((${#failed[@]})); then
  echo "test-sanitize.sh: failed under the sanitizers: ${failed[*]}" >&2
  exit 1
fi
echo "test-sanitize.sh: ${targets[*]} passed under ASan + UBSan"
