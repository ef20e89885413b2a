// Data parallelism is exact: P ranks with batch B, after one fp32 step with any allreduce, hold
// the same parameters as one process with batch P*B (same seed, same global batch). Runs under
// mpirun with 2, 3 and 4 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "trainer/allreduce.h"
#include "trainer/data.h"
#include "trainer/model.h"

namespace tune::trainer {
namespace {

void check_one_step(ModelKind kind, std::vector<int> hidden, Algorithm algo,
                    OptimizerKind opt_kind) {
  Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size(), batch = 6;
  const Dataset data = make_synthetic(p * batch * 4, 21);

  DataIterator local(data, batch, comm.rank(), p, 0, 0, Augment::none, 2);
  DataIterator global(data, batch * p, 0, 1, 0, 0, Augment::none, 2);
  const Batch& mine = local.next();
  const Batch& all = global.next();
  // The rank's batch is its slice of the single process's batch.
  EXPECT_TRUE(std::equal(mine.x.begin(), mine.x.end(),
                         all.x.begin() + std::size_t(comm.rank()) * batch * k_image_pixels));

  const float scale = 1.f / float(p * batch);
  Model distributed(kind, hidden, batch, 5);
  Optimizer opt_d(opt_kind, distributed.num_params(), 0.05f, 0.9f);
  distributed.train_step(mine.x.data(), mine.y.data(), batch, scale);
  GradientReducer reducer(comm, distributed.num_params(), algo, GradDtype::fp32, 0.25);
  reducer.reduce(distributed.grads());
  opt_d.step(distributed.params(), distributed.grads());

  Model single(kind, hidden, batch * p, 5);
  Optimizer opt_s(opt_kind, single.num_params(), 0.05f, 0.9f);
  single.train_step(all.x.data(), all.y.data(), batch * p, scale);
  opt_s.step(single.params(), single.grads());

  double worst = 0, worst_grad = 0;
  for (std::size_t i = 0; i < single.num_params(); ++i) {
    worst = std::max(worst, double(std::fabs(single.params()[i] - distributed.params()[i])));
    worst_grad =
        std::max(worst_grad, double(std::fabs(single.grads()[i] - distributed.grads()[i])));
  }
  EXPECT_LT(worst_grad, 2e-6) << "gradients differ";
  EXPECT_LT(worst, 1e-6) << "parameters differ";
}

TEST(Equivalence, MlpRingMomentum) {
  check_one_step(ModelKind::mlp, {64, 32}, Algorithm::ring, OptimizerKind::momentum);
}
TEST(Equivalence, MlpRabenseifnerMomentum) {
  check_one_step(ModelKind::mlp, {64, 32}, Algorithm::rabenseifner, OptimizerKind::momentum);
}
TEST(Equivalence, MlpHierarchicalMomentum) {
  check_one_step(ModelKind::mlp, {64, 32}, Algorithm::hierarchical, OptimizerKind::momentum);
}
// Momentum only: Adam's first step is lr * g / (|g| + eps), which turns float-rounding noise in
// near-zero gradients into visible parameter differences (its rule is tested in model_test).
TEST(Equivalence, MlpMpiMomentum) {
  check_one_step(ModelKind::mlp, {64, 32}, Algorithm::mpi, OptimizerKind::momentum);
}
TEST(Equivalence, CnnRingMomentum) {
  check_one_step(ModelKind::cnn, {16}, Algorithm::ring, OptimizerKind::momentum);
}

}  // namespace
}  // namespace tune::trainer
