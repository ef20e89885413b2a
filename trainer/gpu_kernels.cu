#include <cuda_fp16.h>

#include "trainer/gpu_kernels.h"
#include "trainer/softmax_xent.h"

namespace tune::trainer::gpu {
namespace {

constexpr int k_threads = 256;
constexpr int k_classes = 10;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>((n + k_threads - 1) / k_threads);
}

__global__ void bias_relu_kernel(float* y, const float* b, int rows, int cols, bool relu) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::size_t(rows) * cols) return;
  const float v = y[i] + b[i % cols];
  y[i] = relu ? fmaxf(v, 0.f) : v;
}

// One thread per column: rows are few (the batch), columns many, and each thread owns its db.
__global__ void relu_backward_bias_kernel(float* dy, const float* y, float* db, int rows, int cols,
                                          bool relu) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
  for (int r = 0; r < rows; ++r) {
    const std::size_t i = std::size_t(r) * cols + c;
    if (relu && y[i] <= 0.f) dy[i] = 0.f;
    acc += dy[i];
  }
  db[c] = acc;
}

__global__ void softmax_xent_kernel(const float* logits, const int* labels, int n, float scale,
                                    float* d, double* sums) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const int y = labels[s];
  float e[k_classes];
  const SoftmaxXent r = softmax_xent_row<k_classes>(logits + std::size_t(s) * k_classes, y, e);
  atomicAdd(&sums[0], double(r.loss));
  if (r.argmax == y) atomicAdd(&sums[1], 1.0);
  if (d) {
    float* ds = d + std::size_t(s) * k_classes;
    for (int c = 0; c < k_classes; ++c) ds[c] = e[c] * scale / r.sum;
    ds[y] -= scale;
  }
}

__global__ void momentum_kernel(float* p, float* v, const float* g, std::size_t n, float lr,
                                float mu) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  v[i] = mu * v[i] - lr * g[i];
  p[i] += v[i];
}

__global__ void adam_kernel(float* p, float* m, float* v, const float* g, std::size_t n,
                            float step) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  m[i] = 0.9f * m[i] + 0.1f * g[i];
  v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
  p[i] -= step * m[i] / (sqrtf(v[i]) + 1e-8f);
}

__global__ void to_half_kernel(const float* in, __half* out, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half_rn(in[i]);
}

__global__ void from_half_kernel(const __half* in, float* out, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __half2float(in[i]);
}

}  // namespace

void bias_relu(float* y, const float* b, int rows, int cols, bool relu, cudaStream_t s) {
  bias_relu_kernel<<<blocks_for(std::size_t(rows) * cols), k_threads, 0, s>>>(y, b, rows, cols,
                                                                              relu);
}
void relu_backward_bias(float* dy, const float* y, float* db, int rows, int cols, bool relu,
                        cudaStream_t s) {
  relu_backward_bias_kernel<<<blocks_for(cols), k_threads, 0, s>>>(dy, y, db, rows, cols, relu);
}
void softmax_xent(const float* logits, const int* labels, int n, float scale, float* d,
                  double* sums, cudaStream_t s) {
  softmax_xent_kernel<<<blocks_for(n), k_threads, 0, s>>>(logits, labels, n, scale, d, sums);
}
void momentum_step(float* p, float* v, const float* g, std::size_t n, float lr, float mu,
                   cudaStream_t s) {
  momentum_kernel<<<blocks_for(n), k_threads, 0, s>>>(p, v, g, n, lr, mu);
}
void adam_step(float* p, float* m, float* v, const float* g, std::size_t n, float step,
               cudaStream_t s) {
  adam_kernel<<<blocks_for(n), k_threads, 0, s>>>(p, m, v, g, n, step);
}
void to_half(const float* in, std::uint16_t* out, std::size_t n, cudaStream_t s) {
  to_half_kernel<<<blocks_for(n), k_threads, 0, s>>>(in, reinterpret_cast<__half*>(out), n);
}
void from_half(const std::uint16_t* in, float* out, std::size_t n, cudaStream_t s) {
  from_half_kernel<<<blocks_for(n), k_threads, 0, s>>>(reinterpret_cast<const __half*>(in), out, n);
}

}  // namespace tune::trainer::gpu
