// The networks and their optimisers, CPU path: flat parameter and gradient buffers, activations
// sized once (a step allocates nothing); GEMMs in OpenBLAS, the rest in OpenMP loops.
// Not thread-safe: one thread drives a Model.
// Design: docs/design-notes.md#trainermodelh
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/options.h"

namespace tune::trainer {

// A model's flat parameter and gradient vectors, what an update rule (sync.h) works on: the CPU
// Model owns one; the GPU path keeps one as the host copy of its device buffers. A rule may swap
// either vector for one of its own size (double buffering hands gradients to its comm thread so).
struct Weights {
  std::vector<float> params, grads;
};

struct StepStats {
  double loss_sum = 0;  // sum over samples of cross-entropy
  double correct = 0;   // samples classified right
};

class Model {
 public:
  // mlp: 784 -> hidden... -> 10. cnn: conv5x5(16)+pool, conv5x5(32)+pool, then hidden... -> 10.
  Model(ModelKind kind, const std::vector<int>& hidden, int max_batch, std::uint64_t seed);

  std::size_t num_params() const { return m_w.params.size(); }
  float* params() { return m_w.params.data(); }
  float* grads() { return m_w.grads.data(); }
  const float* params() const { return m_w.params.data(); }
  Weights& weights() { return m_w; }
  // Forward, loss, backward; overwrites grads() with d(loss_sum * grad_scale)/d(params).
  // grad_scale = 1/(batch*world) makes an allreduce *sum* the data-parallel mean gradient.
  StepStats train_step(const float* x, const int* y, int n, float grad_scale);
  StepStats evaluate(const float* x, const int* y, int n);
  double flops_per_sample() const;  // forward+backward, for the roofline

 private:
  enum class Kind { dense, conv, pool };
  struct Layer {
    Kind kind = Kind::dense;
    int in = 0, out = 0;      // features (dense) or channels (conv/pool)
    int h = 0, w = 0, k = 0;  // input spatial size and kernel (conv/pool)
    bool relu = false;
    std::size_t w_off = 0, b_off = 0;
    std::size_t in_size = 0, out_size = 0;  // per sample
    std::vector<float> act;                 // output, max_batch * out_size
    std::vector<int> argmax;                // pool only
    std::vector<float> col;                 // conv only: im2col of the input, kept for backward
  };
  void forward(const float* x, int n);
  StepStats loss(const int* y, int n, float grad_scale, bool want_grad);
  void backward(const float* x, int n);

  int m_max_batch;
  std::vector<Layer> m_layers;
  Weights m_w;
  std::vector<float> m_dcol;      // d(im2col) scratch, sized for the largest conv
  std::vector<float> m_d0, m_d1;  // ping-pong activation gradients
};

class Optimizer {
 public:
  Optimizer(OptimizerKind kind, std::size_t n, float lr, float momentum);
  void step(float* params, const float* grads);
  // For the pipelined rule (sync.h): step(params, grads) unless grads is null, then in the same
  // pass ahead = params + mu v - lr * local_scale * local, the point the next synchronous step
  // would reach if the global gradient were local_scale * local. Adam has no such linear
  // lookahead: it steps and copies params to ahead.
  void step_ahead(float* params, const float* grads, const float* local, float local_scale,
                  float* ahead);

 private:
  void adam_step(float* params, const float* grads);

  OptimizerKind m_kind;
  float m_lr, m_momentum;
  std::int64_t m_t = 0;
  std::vector<float> m_m, m_v;
};

}  // namespace tune::trainer
