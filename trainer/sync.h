// How the ranks' gradients become one model: the update rule a run uses after each local step.
//
//   - SyncSgd: allreduce every step's gradients, then one optimiser step (plain data parallel).
//   - Pipelined (--double-buffering): a comm thread reduces step t's gradients while the main
//     thread computes step t+1, so the reduced gradients arrive one step late. A late gradient
//     makes heavy-ball momentum unstable: at --momentum 0.9 and --lr 0.05 Fashion-MNIST diverges
//     to 10% (measured, one rank, where no communication is involved), which is why a momentum of
//     0.5 used to be forced, at the cost of accuracy. Instead the rule keeps the exact synchronous
//     trajectory w (master parameters and velocity, updated with the reduced gradients when they
//     arrive) and computes each gradient at a lookahead of it, w + mu v - lr * world * g_local:
//     the synchronous next point with the still-missing global gradient estimated by this rank's
//     own. The only difference from synchronous SGD is that estimate's noise.
//   - BlockMomentum (--sync block; Chen & Huo 2016, blockwise model-update filtering): each rank
//     takes --block-steps local optimiser steps on its own gradients, then the ranks average the
//     block's model delta G (through the gradient reducer, so fp16 and 1-bit apply to it) and
//     filter it: Delta = block_momentum * Delta + block_lr * G; W += Delta. The next block starts
//     from W, or from W + block_momentum * Delta with --block-nesterov. Defaults: block momentum
//     1 - 1/ranks (the paper's) and block lr 1 - block momentum, a filter of gain
//     block_lr / (1 - block_momentum) = 1. The paper's block lr 1 (gain = ranks) compensates
//     local learners that move 1/ranks as far as one learner on all the data; here every local
//     step already uses the synchronous global step's lr, so the averaged delta moves as far as
//     synchronous SGD and a gain of 2 or 4 overshoots (one epoch of Fashion-MNIST, 8 steps a
//     block: 83.6% at 2 ranks, 78.3% at 4, against 85.9% and 85.8% at gain 1).
//
// A rule owns its buffers and, for Pipelined, the comm thread; all MPI calls go through the
// reducer it is given (from the comm thread while one is in flight). Not thread-safe otherwise.
#pragma once

#include <functional>
#include <memory>

#include "trainer/allreduce.h"
#include "trainer/model.h"
#include "trainer/options.h"

namespace tune::trainer {

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // The factor train_step scales the loss gradient by: 1/(batch*world) when the reducer's *sum*
  // must be the global mean, 1/batch when a rank steps on its own gradients.
  virtual float grad_scale(int batch) const = 0;
  // After a training step wrote w.grads: fold them into w.params. compress: past --warm-start
  // (1-bit only).
  virtual void step(Weights& w, bool compress) = 0;
  // Calls eval with w.params holding the model every rank agrees on; training resumes afterwards
  // exactly as if eval had not been called (collective).
  virtual void evaluate(Weights& w, const std::function<void()>& eval) = 0;
  // At the end of training: leaves the agreed model in w.params (collective).
  virtual void finish(Weights& w) = 0;
};

// The rule Options ask for (reducer and optimizer must outlive it).
std::unique_ptr<UpdateRule> make_update_rule(const Options& o, GradientReducer& reducer,
                                             Communicator& comm, Optimizer& optimizer,
                                             std::size_t n_params);

}  // namespace tune::trainer
