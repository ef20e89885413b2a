// libFuzzer entry point for the Chainer-log reader: read_log, read_objective on a log and
// intermediate_points.
// The input format is described in bench/fuzz/fuzz_targets.h; run it with scripts/fuzz.sh.
#include "bench/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tune::fuzz::Scratch scratch;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  tune::fuzz::run_chainer_log(input, scratch);
  return 0;
}
