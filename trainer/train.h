// The CPU training path: data, model, optimiser, update rule and log, wired per Options and run
// by the loop every device shares (driver.h). Which threads each rank starts (what the probes
// predict) is in the design notes.
// Design: docs/design-notes.md#trainertrainh
#pragma once

#include <mpi.h>

#include "trainer/options.h"

namespace tune::trainer {

// Applies --omp-threads/--blas-threads/--opencv-threads; leaves library defaults when unset.
void apply_thread_settings(const Options& options);

// Trains per options on comm; returns the process exit code (errors go to stderr as one line).
int run_training(const Options& options, MPI_Comm comm);

}  // namespace tune::trainer
