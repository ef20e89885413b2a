#include "trainer/run_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>

namespace tune::trainer {

Sums Sums::global(MPI_Comm comm) const {
  double in[3] = {loss, correct, count}, out[3] = {};
  MPI_Allreduce(in, out, 3, MPI_DOUBLE, MPI_SUM, comm);
  return {out[0], out[1], out[2]};
}

std::optional<RunSetup> set_up_run(const Options& o, std::string error, int rank, int world,
                                   MPI_Comm comm) {
  RunSetup setup;
  if (error.empty()) {
    auto data = load_datasets(o);
    if (!data)
      error = data.error();
    else if (data->first.size() < std::int64_t(o.batch_size) * world)
      error = fmt::format(
          "--train-samples: {} training samples make no full batch of --batch-size {} x {} ranks",
          data->first.size(), o.batch_size, world);
    else
      setup.data = std::move(*data);
  }
  if (rank == 0 && error.empty()) {
    try {
      setup.log.emplace(o.out_dir);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  // The lowest failing rank, or world when none failed.
  int mine = error.empty() ? world : rank, first = 0;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == world) return setup;
  if (rank == first) std::fprintf(stderr, "tune-trainer: error: %s\n", error.c_str());
  return std::nullopt;
}

std::int64_t total_iterations(const Options& o, std::int64_t per_epoch) {
  std::int64_t total = per_epoch * o.epochs;
  if (o.max_iterations > 0) total = std::min(total, o.max_iterations);
  return total;
}

nlohmann::json interval_entry(std::int64_t iteration, std::int64_t per_epoch,
                              std::int64_t global_batch, const Sums& train, const Sums& val,
                              double elapsed, double eval_seconds) {
  return {{"epoch", iteration / per_epoch},
          {"iteration", iteration},
          {"main/loss", train.loss / train.count},
          {"main/accuracy", train.correct / train.count},
          {"validation/main/loss", val.loss / val.count},
          {"validation/main/accuracy", val.correct / val.count},
          {"elapsed_time", elapsed},
          {"samples_per_sec", double(iteration) * double(global_batch) / (elapsed - eval_seconds)}};
}

void finish_run(const Options& o, std::optional<LogReport>& log, const Sums& run,
                std::int64_t total, std::int64_t per_epoch, std::int64_t global_batch,
                double elapsed, double eval_seconds, const char* where, int rank, int world,
                MPI_Comm comm) {
  const double samples = double(total) * double(global_batch);
  const double samples_per_sec = samples / std::max(1e-9, elapsed - eval_seconds);
  if (o.benchmark) {
    const Sums tr = run.global(comm);
    if (log)
      log->append({{"epoch", total / per_epoch},
                   {"iteration", total},
                   {"main/loss", tr.count > 0 ? tr.loss / tr.count : 0.0},
                   {"main/accuracy", tr.count > 0 ? tr.correct / tr.count : 0.0},
                   {"elapsed_time", elapsed},
                   {"samples_per_sec", samples_per_sec}});
  }
  if (rank == 0)
    std::printf("tune-trainer: %lld iterations, %d ranks%s, %.0f samples/s, elapsed %.3f s\n",
                static_cast<long long>(total), world, where, samples_per_sec, elapsed);
}

}  // namespace tune::trainer
