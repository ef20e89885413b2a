// Names the trainer's threads ("tt-iter", "tt-comm", "tt-omp", "tt-blas", "tt-cv") so the
// probes can tell its pools apart. Called from the main thread before MPI starts and before any
// other thread of the trainer's own.
// Design: docs/design-notes.md#trainerthread_namesh
#pragma once

namespace tune::trainer {

// The calling thread's name (15 characters at most); failures are ignored (names are a hint).
void name_this_thread(const char* name);

// Renames OpenBLAS's threads and starts the OpenMP and (when `opencv_used`) OpenCV pools under
// their names. After the libraries' thread counts are set (apply_thread_settings).
void name_library_pools(bool opencv_used);

}  // namespace tune::trainer
