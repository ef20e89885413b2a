// Names the trainer's threads so the probes can tell its pools apart (probes/sustained.h reads
// the names from /proc): "tt-iter" iterator workers, "tt-comm" the double-buffering thread,
// "tt-omp" libgomp's pool, "tt-blas" OpenBLAS's, "tt-cv" OpenCV's (TBB's workers on Debian).
//
// The libraries name none of their threads, and a new thread inherits its creator's name, so:
// OpenBLAS starts its server threads when the library is loaded, before main(): at the start
// every thread but the main one is OpenBLAS's, renamed through /proc/self/task/TID/comm; the
// OpenMP and OpenCV pools are started early (an empty parallel region, a small parallel_for_)
// while the main thread borrows the pool's name, and keep it for the whole run (both reuse their
// threads). MPI's progress threads start later, under the program's own name ("other").
//
// Called from the main thread before MPI starts and before any other thread of the trainer's own.
#pragma once

namespace tune::trainer {

// The calling thread's name (15 characters at most); failures are ignored (names are a hint).
void name_this_thread(const char* name);

// Renames OpenBLAS's threads and starts the OpenMP and (when `opencv_used`) OpenCV pools under
// their names. After the libraries' thread counts are set (apply_thread_settings).
void name_library_pools(bool opencv_used);

}  // namespace tune::trainer
