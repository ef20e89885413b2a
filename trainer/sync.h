// How the ranks' gradients become one model: the update rule after each local step (SyncSgd,
// Pipelined for --double-buffering, BlockMomentum for --sync block). A rule owns its buffers
// and Pipelined's comm thread; not thread-safe otherwise.
// Design: docs/design-notes.md#trainersynch
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
