// What a training run does alike whichever device computes it, written once for the CPU driver
// (train.cpp) and the CUDA plugin (gpu.cpp): the setup with one verdict agreed by every rank, the
// iteration count, each rank's share of the validation set, the log entries and the closing line.
// The caller owns everything; functions that take a communicator are collective on it and, like
// every MPI call of a run, are made from the rank's main thread only.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainer/data.h"
#include "trainer/log_report.h"
#include "trainer/options.h"

namespace tune::trainer {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Per-rank sums of a stretch of samples; global() adds them over the ranks (collective).
struct Sums {
  double loss = 0, correct = 0, count = 0;
  Sums global(MPI_Comm comm) const;
};

struct RunSetup {
  std::pair<Dataset, Dataset> data;  // training set, validation set
  std::optional<LogReport> log;      // on rank 0 only
};

// Loads the datasets (unless error already says why the run cannot start), checks that they make
// one full global batch and opens rank 0's log. Collective: on any rank's failure the lowest rank
// that failed prints one line (usually all fail alike) and every rank returns nullopt, so a lone
// failure never leaves the others blocked in their first allreduce.
std::optional<RunSetup> set_up_run(const Options& o, std::string error, int rank, int world,
                                   MPI_Comm comm);

// --epochs passes of per_epoch batches, cut at --max-iterations when given.
std::int64_t total_iterations(const Options& o, std::int64_t per_epoch);

// Calls evaluate(x, y, m) for each batch of m <= batch normalised samples (x) and labels (y) of
// this rank's contiguous share of val; returns the share's size.
template <typename Evaluate>
std::int64_t for_each_validation_batch(const Dataset& val, int batch, int rank, int world,
                                       Evaluate&& evaluate) {
  const std::int64_t n = val.size(), lo = n * rank / world, hi = n * (rank + 1) / world;
  std::vector<float> x(std::size_t(batch) * k_image_pixels);
  std::vector<int> y(static_cast<std::size_t>(batch));
  for (std::int64_t i = lo; i < hi; i += batch) {
    const int m = static_cast<int>(std::min<std::int64_t>(batch, hi - i));
    for (int j = 0; j < m; ++j) {
      normalise(val.images.data() + std::size_t(i + j) * k_image_pixels,
                x.data() + std::size_t(j) * k_image_pixels);
      y[std::size_t(j)] = val.labels[std::size_t(i + j)];
    }
    evaluate(x.data(), y.data(), m);
  }
  return hi - lo;
}

// The log entry after `iteration` iterations: train and validation sums over all ranks; the
// throughput leaves out the eval_seconds spent validating.
nlohmann::json interval_entry(std::int64_t iteration, std::int64_t per_epoch,
                              std::int64_t global_batch, const Sums& train, const Sums& val,
                              double elapsed, double eval_seconds);

// The end of the run (collective): with --benchmark, the run's one log entry from this rank's
// sums over the whole run (run); then rank 0's summary line, with where (" on CUDA" or "") after
// the rank count.
void finish_run(const Options& o, std::optional<LogReport>& log, const Sums& run,
                std::int64_t total, std::int64_t per_epoch, std::int64_t global_batch,
                double elapsed, double eval_seconds, const char* where, int rank, int world,
                MPI_Comm comm);

}  // namespace tune::trainer
