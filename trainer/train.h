// The CPU training path: data, model, optimiser, update rule and log, wired per Options and run by
// the loop every device shares (driver.h).
//
// Threads each rank starts (what the probes module predicts):
//   - the main thread (data loading too when --iterator-workers 0);
//   - N iterator workers (--iterator-workers N), std::threads of DataIterator;
//   - the OpenMP pool: --omp-threads, else OMP_NUM_THREADS, else libgomp's default of one thread
//     per online CPU (the main thread is one of them);
//   - the OpenBLAS pool: --blas-threads, else OPENBLAS_NUM_THREADS (then OMP_NUM_THREADS, which
//     the pthread build also reads), else one per online CPU (the caller counts as one);
//   - the OpenCV pool used by augmentation: --opencv-threads, else OPENCV_FOR_THREADS_NUM, else
//     one per online CPU (only started once a parallel OpenCV call needs it);
//   - 1 comm thread with --double-buffering;
//   - Open MPI's own progress threads (not counted by the trainer).
// Each pool's threads carry a name the probes attribute them by (trainer/thread_names.h).
// With no flag and no variable every library sizes itself to the machine, so 2 ranks on 2 cores
// run 2 x (OpenMP + OpenBLAS) threads: the oversubscribed baseline a tuner must beat.
#pragma once

#include <mpi.h>

#include "trainer/options.h"

namespace tune::trainer {

// Applies --omp-threads/--blas-threads/--opencv-threads; leaves library defaults when unset.
void apply_thread_settings(const Options& options);

// Trains per options on comm; returns the process exit code (errors go to stderr as one line).
int run_training(const Options& options, MPI_Comm comm);

}  // namespace tune::trainer
