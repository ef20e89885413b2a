// Data parallelism is exact: P ranks with batch B, after one fp32 step with any allreduce, hold
// the same parameters as one process with batch P*B (same seed, same global batch). The update
// rules of sync.h against synchronous SGD: block momentum with one step per block, no block
// momentum and block lr 1 is synchronous SGD; double buffering's lookahead keeps the synchronous
// trajectory. Runs under mpirun with 2, 3 and 4 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "trainer/allreduce.h"
#include "trainer/data.h"
#include "trainer/model.h"
#include "trainer/sync.h"

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

// One rank's model trained through an update rule built from options, on comm.
struct Trainee {
  Trainee(const Options& o, Communicator& comm)
      : model(ModelKind::mlp, {64, 32}, 6, 5),
        optimizer(o.optimizer, model.num_params(), o.lr, o.momentum),
        reducer(comm, model.num_params(), Algorithm::ring, GradDtype::fp32, 0.25),
        rule(make_update_rule(o, reducer, comm, optimizer, model.num_params())) {}
  void step(const Batch& b) {
    model.train_step(b.x.data(), b.y.data(), 6, rule->grad_scale(6));
    rule->step(model.weights(), true);
  }
  Model model;
  Optimizer optimizer;
  GradientReducer reducer;
  std::unique_ptr<UpdateRule> rule;
};

Options rule_options(SyncKind sync, bool double_buffering) {
  Options o;
  o.sync = sync;
  o.double_buffering = double_buffering;
  o.block_steps = 1;
  o.block_momentum = 0.f;
  o.block_lr = 1.f;
  return o;  // --lr 0.05, --momentum 0.9: the local optimiser keeps its momentum
}

// The parameters after `steps` steps of the rule options ask for, then finish(), on the same
// batches for every rule (one rule at a time: a comm thread in flight owns the communicator).
std::vector<float> train(const Options& o, MPI_Comm mpi_comm, int steps) {
  Communicator comm(mpi_comm);
  const Dataset data = make_synthetic(comm.size() * 6 * steps, 33);
  DataIterator it(data, 6, comm.rank(), comm.size(), 0, 0, Augment::none, 4);
  Trainee t(o, comm);
  for (int s = 0; s < steps; ++s) t.step(it.next());
  t.rule->finish(t.model.weights());
  return {t.model.params(), t.model.params() + t.model.num_params()};
}

double max_difference(const Options& a, const Options& b, MPI_Comm mpi_comm, int steps) {
  const std::vector<float> x = train(a, mpi_comm, steps), y = train(b, mpi_comm, steps);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, double(std::fabs(x[i] - y[i])));
  return worst;
}

// Averaging each rank's one-step model delta is averaging the gradients, also with the local
// optimiser's momentum (it is linear in the gradients); what differs is float rounding of
// (w + v) - w: well below 1e-6 on parameters of magnitude < 1.
TEST(UpdateRules, BlockMomentumOfOneStepIsSynchronousSgd) {
  const Options sync = rule_options(SyncKind::sgd, false);
  const Options block = rule_options(SyncKind::block, false);
  EXPECT_LT(max_difference(block, sync, MPI_COMM_WORLD, 1), 1e-6);
  EXPECT_LT(max_difference(block, sync, MPI_COMM_WORLD, 4), 1e-6);
}

// One step then finish: the reduced gradients are applied exactly as synchronous SGD does.
TEST(UpdateRules, DoubleBufferingFirstStepIsSynchronousBitForBit) {
  const Options sync = rule_options(SyncKind::sgd, false);
  const Options pipelined = rule_options(SyncKind::sgd, true);
  EXPECT_EQ(max_difference(pipelined, sync, MPI_COMM_WORLD, 1), 0.0);
}

// With one rank the local gradient is the global one, so the lookahead point is exactly where
// synchronous SGD computes its next gradient: the pipeline follows it step for step (to float
// rounding of p + mu v - lr g in another order). Gradients applied one step late, as before the
// lookahead, end 0.09 away after 5 steps (measured).
TEST(UpdateRules, DoubleBufferingFollowsSynchronousTrajectory) {
  const Options sync = rule_options(SyncKind::sgd, false);
  const Options pipelined = rule_options(SyncKind::sgd, true);
  EXPECT_LT(max_difference(pipelined, sync, MPI_COMM_SELF, 5), 1e-5);
}

}  // namespace
}  // namespace tune::trainer
