#include "trainer/train.h"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <memory>
#include <opencv2/core.hpp>
#include <optional>
#include <utility>

#include "trainer/allreduce.h"
#include "trainer/data.h"
#include "trainer/driver.h"
#include "trainer/log_report.h"
#include "trainer/model.h"
#include "trainer/run_common.h"
#include "trainer/sync.h"
#include "trainer/thread_names.h"

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

// The CPU backend of run_loop (driver.h): the Model, its optimiser and the update rule.
class CpuBackend {
 public:
  CpuBackend(const Options& o, Communicator& comm, const Dataset& val)
      : m_o(o),
        m_comm(comm),
        m_val(val),
        m_model(o.model, o.hidden, o.batch_size, o.seed),
        m_optimizer(o.optimizer, m_model.num_params(), o.lr, o.momentum),
        m_reducer(comm, m_model.num_params(), o.allreduce, o.grad_dtype, o.bucket_mb),
        m_rule(make_update_rule(o, m_reducer, comm, m_optimizer, m_model.num_params())),
        m_grad_scale(m_rule->grad_scale(o.batch_size)) {}

  void train(const Batch& batch, bool compress) {
    const StepStats s =
        m_model.train_step(batch.x.data(), batch.y.data(), m_o.batch_size, m_grad_scale);
    m_sums.loss += s.loss_sum;
    m_sums.correct += s.correct;
    m_sums.count += m_o.batch_size;
    m_rule->step(m_model.weights(), compress);
  }
  Sums take_sums() { return std::exchange(m_sums, Sums{}); }
  void finish() { m_rule->finish(m_model.weights()); }
  // Validation over this rank's contiguous share of the set, summed over ranks.
  Sums evaluate() {
    Sums s;
    m_rule->evaluate(m_model.weights(), [&] {
      for_each_validation_batch(m_val, m_o.batch_size, m_comm.rank(), m_comm.size(),
                                [&](const float* x, const int* y, int m) {
                                  const StepStats st = m_model.evaluate(x, y, m);
                                  s.loss += st.loss_sum;
                                  s.correct += st.correct;
                                  s.count += m;
                                });
    });
    return s.global(m_comm.comm());
  }

 private:
  const Options& m_o;
  Communicator& m_comm;
  const Dataset& m_val;
  Model m_model;
  Optimizer m_optimizer;
  GradientReducer m_reducer;
  std::unique_ptr<UpdateRule> m_rule;
  float m_grad_scale;
  Sums m_sums;
};

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
  // Before any thread of the trainer's own and before MPI's: the probes tell the pools apart by
  // these names (trainer/thread_names.h).
  name_library_pools(options.augment != Augment::none);
}

int run_training(const Options& o, MPI_Comm comm) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  std::optional<RunSetup> setup = set_up_run(o, "", rank, world, comm);
  if (!setup) return 1;

  Communicator communicator(comm);
  CpuBackend backend(o, communicator, setup->data.second);
  DataIterator iterator(setup->data.first, o.batch_size, rank, world, o.iterator_workers,
                        o.prefetch, o.augment, o.seed);
  run_loop(o, comm, *setup, iterator, backend, "");
  return 0;
}

}  // namespace tune::trainer
