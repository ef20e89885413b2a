// The CUDA kernels of the --device cuda path, behind plain C++ declarations so that gpu.cpp
// (C++23, compiled by the host compiler) never includes device code. Every launcher enqueues on
// the given stream and returns at once. Layouts follow the CPU Model: activations row-major
// (rows = samples), weights (in x out) row-major followed by the bias.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tune::trainer::gpu {

// y[r][c] = relu?(y[r][c] + b[c]).
void bias_relu(float* y, const float* b, int rows, int cols, bool relu, cudaStream_t s);
// dy[r][c] *= (y[r][c] > 0) when relu; db[c] = sum_r dy[r][c].
void relu_backward_bias(float* dy, const float* y, float* db, int rows, int cols, bool relu,
                        cudaStream_t s);
// Softmax cross-entropy over 10 classes: adds sum of losses and of correct predictions to
// sums[0], sums[1]; with d != nullptr writes d(loss * scale)/d(logits).
void softmax_xent(const float* logits, const int* labels, int n, float scale, float* d,
                  double* sums, cudaStream_t s);
// Chainer MomentumSGD: v = mu v - lr g; p += v.
void momentum_step(float* p, float* v, const float* g, std::size_t n, float lr, float mu,
                   cudaStream_t s);
// Adam with bias correction folded into step (lr * sqrt(1-b2^t) / (1-b1^t)).
void adam_step(float* p, float* m, float* v, const float* g, std::size_t n, float step,
               cudaStream_t s);
void to_half(const float* in, std::uint16_t* out, std::size_t n, cudaStream_t s);
void from_half(const std::uint16_t* in, float* out, std::size_t n, cudaStream_t s);

}  // namespace tune::trainer::gpu
