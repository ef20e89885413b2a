#include "trainer/train.h"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <opencv2/core.hpp>
#include <optional>

#include "trainer/allreduce.h"
#include "trainer/data.h"
#include "trainer/log_report.h"
#include "trainer/model.h"
#include "trainer/run_common.h"
#include "trainer/sync.h"

namespace tune::trainer {
namespace {

// A non-negative integer from the environment, or -1 when unset or not a number.
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (*end == '\0' && n >= 0) ? static_cast<int>(n) : -1;
}

// Validation over this rank's contiguous share of the set, summed over ranks.
Sums evaluate(Model& model, const Dataset& val, int batch, int rank, int world, MPI_Comm comm) {
  Sums s;
  for_each_validation_batch(val, batch, rank, world, [&](const float* x, const int* y, int m) {
    const StepStats st = model.evaluate(x, y, m);
    s.loss += st.loss_sum;
    s.correct += st.correct;
    s.count += m;
  });
  return s.global(comm);
}

}  // namespace

void apply_thread_settings(const Options& options) {
  // Only what the user asked for: with neither flag nor variable each library keeps its own
  // default (one thread per online CPU), the oversubscribed baseline. OpenMP and OpenBLAS read
  // their variables themselves; OpenCV's TBB backend ignores OPENCV_FOR_THREADS_NUM, so the
  // variable is applied here to make it the knob it is documented to be.
  if (options.omp_threads > 0) omp_set_num_threads(options.omp_threads);
  if (options.blas_threads > 0) openblas_set_num_threads(options.blas_threads);
  const int cv_threads =
      options.opencv_threads >= 0 ? options.opencv_threads : env_int("OPENCV_FOR_THREADS_NUM");
  if (cv_threads >= 0) cv::setNumThreads(cv_threads);
}

int run_training(const Options& o, MPI_Comm comm) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  std::optional<RunSetup> setup = set_up_run(o, "", rank, world, comm);
  if (!setup) return 1;
  const Dataset& train = setup->data.first;
  const Dataset& val = setup->data.second;
  std::optional<LogReport>& log = setup->log;

  Model model(o.model, o.hidden, o.batch_size, o.seed);
  Optimizer optimizer(o.optimizer, model.num_params(), o.lr, o.momentum);
  Communicator communicator(comm);
  GradientReducer reducer(communicator, model.num_params(), o.allreduce, o.grad_dtype, o.bucket_mb);
  const auto rule = make_update_rule(o, reducer, communicator, optimizer, model.num_params());
  DataIterator iterator(train, o.batch_size, rank, world, o.iterator_workers, o.prefetch, o.augment,
                        o.seed);

  const std::int64_t per_epoch = iterator.batches_per_epoch();
  const std::int64_t total = total_iterations(o, per_epoch);
  const std::int64_t global_batch = std::int64_t(o.batch_size) * world;
  const float grad_scale = rule->grad_scale(o.batch_size);

  MPI_Barrier(comm);
  const auto t0 = Clock::now();
  double eval_seconds = 0;
  Sums interval, run;
  for (std::int64_t it = 0; it < total; ++it) {
    const Batch& batch = iterator.next();
    const StepStats s = model.train_step(batch.x.data(), batch.y.data(), o.batch_size, grad_scale);
    interval.loss += s.loss_sum;
    interval.correct += s.correct;
    interval.count += o.batch_size;
    // 1-bit starts once --warm-start samples (over all ranks) have been trained in fp32.
    rule->step(model, it * global_batch >= o.warm_start);
    const bool last = it + 1 == total;
    if (last) rule->finish(model);
    if (!o.benchmark && ((it + 1) % o.log_interval == 0 || last)) {
      const auto te = Clock::now();
      const Sums tr = interval.global(comm);
      Sums va;
      rule->evaluate(model, [&] { va = evaluate(model, val, o.batch_size, rank, world, comm); });
      eval_seconds += seconds_since(te);
      run.loss += interval.loss, run.correct += interval.correct, run.count += interval.count;
      interval = {};
      const double elapsed = seconds_since(t0);
      if (log)
        log->append(interval_entry(it + 1, per_epoch, global_batch, tr, va, elapsed, eval_seconds));
    }
  }
  MPI_Barrier(comm);
  const double elapsed = seconds_since(t0);
  run.loss += interval.loss, run.correct += interval.correct, run.count += interval.count;
  finish_run(o, log, run, total, per_epoch, global_batch, elapsed, eval_seconds, "", rank, world,
             comm);
  return 0;
}

}  // namespace tune::trainer
