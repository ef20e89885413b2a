// The training loop of every device, written once (run_loop): the CPU path (train.cpp) and the
// CUDA plugin (gpu.cpp) each provide a Backend, so the two cannot drift apart. A Backend
// provides train(batch, compress), take_sums(), evaluate() and finish(), all collective calls
// made from the rank's main thread.
// Design: docs/design-notes.md#trainerdriverh
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>

#include "trainer/data.h"
#include "trainer/options.h"
#include "trainer/run_common.h"

namespace tune::trainer {

template <typename Backend>
void run_loop(const Options& o, MPI_Comm comm, RunSetup& setup, DataIterator& iterator,
              Backend& backend, const char* where) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  const std::int64_t per_epoch = iterator.batches_per_epoch();
  const std::int64_t total = total_iterations(o, per_epoch);
  const std::int64_t global_batch = std::int64_t(o.batch_size) * world;
  MPI_Barrier(comm);
  const auto t0 = Clock::now();
  double eval_seconds = 0;
  for (std::int64_t it = 0; it < total; ++it) {
    // 1-bit starts once --warm-start samples (over all ranks) have been trained in fp32.
    backend.train(iterator.next(), it * global_batch >= o.warm_start);
    const bool last = it + 1 == total;
    if (last) backend.finish();
    // A progress line is appended and flushed, never a log rewritten whole: an hour's run prints
    // as many as it likes at no growing cost.
    if (o.progress_interval > 0 && (it + 1) % o.progress_interval == 0 && rank == 0) {
      std::printf("tune-trainer: iteration %lld elapsed %.6f s\n", static_cast<long long>(it + 1),
                  seconds_since(t0));
      std::fflush(stdout);
    }
    if (o.benchmark || ((it + 1) % o.log_interval != 0 && !last)) continue;
    const auto te = Clock::now();
    const Sums train = backend.take_sums().global(comm);
    const Sums val = backend.evaluate();
    eval_seconds += seconds_since(te);
    if (setup.log)
      setup.log->append(interval_entry(it + 1, per_epoch, global_batch, train, val,
                                       seconds_since(t0), eval_seconds));
  }
  // With --benchmark nothing took the sums yet: these are the whole run's.
  const Sums run = backend.take_sums();
  MPI_Barrier(comm);
  finish_run(o, setup.log, run, total, per_epoch, global_batch, seconds_since(t0), eval_seconds,
             where, rank, world, comm);
}

}  // namespace tune::trainer
