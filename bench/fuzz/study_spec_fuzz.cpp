// libFuzzer entry point for the study parser: parse_study_spec, then the sampler and
// pruner built from the file.
// The input format is described in bench/fuzz/fuzz_targets.h; run it with scripts/fuzz.sh.
#include "bench/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  tune::fuzz::run_study_spec(input);
  return 0;
}
