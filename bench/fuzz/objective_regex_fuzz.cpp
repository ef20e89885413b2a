// libFuzzer entry point for the regex objective over a trial's stdout or stderr
// (read_objective with a regex).
// The input format is described in bench/fuzz/fuzz_targets.h; run it with scripts/fuzz.sh.
#include "bench/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tune::fuzz::Scratch scratch;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  tune::fuzz::run_objective_regex(input, scratch);
  return 0;
}
