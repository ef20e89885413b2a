#include <malloc.h>

#include "tuner/cli/cli.h"

int main(int argc, char** argv) {
  // Each trial allocates and frees the same few hundred kilobytes (its record, output buffers,
  // the sampler's arrays). With glibc's defaults, frees at the top of the heap return memory to
  // the kernel (trim at 128 KiB) and large blocks are mmap'ed and unmapped each time, so every
  // trial paid for the same pages again in page faults: about a tenth of a trivial trial's cost
  // (bench/tuner/per_trial_growth.py). tune is one long-lived process per worker; it keeps what
  // it used, as a server would.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  return tune::tuner::run_cli(argc, argv);
}
