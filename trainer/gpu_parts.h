// The device side of the --device cuda path, shared by the plugin's files (never by the
// executable, which links no CUDA library; see gpu.h): error checks that throw one-line errors,
// device buffers, the MLP as cuBLAS GEMMs plus the kernels of gpu_kernels.h, the device
// optimiser, and batch and sum transfers. Everything enqueues on the stream it is given; one
// thread drives a GpuMlp and a GpuOptimizer.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "trainer/data.h"
#include "trainer/gpu_kernels.h"
#include "trainer/model.h"
#include "trainer/options.h"
#include "trainer/run_common.h"

namespace tune::trainer {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("--device cuda: {}: {}", what, cudaGetErrorString(e)));
}
inline void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("--device cuda: {}: cuBLAS status {}", what, int(e)));
}
inline void check(ncclResult_t e, const char* what) {
  if (e != ncclSuccess)
    throw std::runtime_error(fmt::format("--allreduce nccl: {}: {}", what, ncclGetErrorString(e)));
}

// Owns n elements of device memory.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : m_n(n) {
    check(cudaMalloc(&m_p, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(m_p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return m_p; }
  std::size_t size() const { return m_n; }

 private:
  T* m_p = nullptr;
  std::size_t m_n;
};

// The MLP on one device: flat parameter/gradient buffers in the CPU Model's layout (initialised
// from a CPU Model with the same seed, so both paths start identical) and cuBLAS GEMMs in
// column-major terms (a row-major (r x c) matrix is a column-major (c x r) one).
class GpuMlp {
 public:
  GpuMlp(const Options& o, cudaStream_t stream, cublasHandle_t blas)
      : m_stream(stream), m_blas(blas), m_max_batch(o.batch_size) {
    Model host(ModelKind::mlp, o.hidden, 1, o.seed);
    m_widths.push_back(k_image_pixels);
    for (int h : o.hidden) m_widths.push_back(h);
    m_widths.push_back(k_classes);
    std::size_t off = 0, widest = 0;
    for (std::size_t l = 0; l + 1 < m_widths.size(); ++l) {
      m_w_off.push_back(off);
      off += std::size_t(m_widths[l]) * m_widths[l + 1];
      m_b_off.push_back(off);
      off += m_widths[l + 1];
      widest = std::max<std::size_t>(widest, m_widths[l + 1]);
      m_acts.emplace_back(
          std::make_unique<DeviceBuffer<float>>(std::size_t(m_max_batch) * m_widths[l + 1]));
    }
    m_params = std::make_unique<DeviceBuffer<float>>(off);
    m_grads = std::make_unique<DeviceBuffer<float>>(off);
    m_d0 = std::make_unique<DeviceBuffer<float>>(std::size_t(m_max_batch) *
                                                 std::max<std::size_t>(widest, k_image_pixels));
    m_d1 = std::make_unique<DeviceBuffer<float>>(m_d0->size());
    check(cudaMemcpy(m_params->get(), host.params(), off * sizeof(float), cudaMemcpyHostToDevice),
          "copy parameters");
  }
  std::size_t num_params() const { return m_params->size(); }
  float* params() { return m_params->get(); }
  float* grads() { return m_grads->get(); }

  void forward(const float* x, int n) {
    const float one = 1.f, zero = 0.f;
    const float* in = x;
    for (std::size_t l = 0; l < m_acts.size(); ++l) {
      const int fi = m_widths[l], fo = m_widths[l + 1];
      check(cublasSgemm(m_blas, CUBLAS_OP_N, CUBLAS_OP_N, fo, n, fi, &one, params() + m_w_off[l],
                        fo, in, fi, &zero, m_acts[l]->get(), fo),
            "forward sgemm");
      gpu::bias_relu(m_acts[l]->get(), params() + m_b_off[l], n, fo, l + 1 < m_acts.size(),
                     m_stream);
      in = m_acts[l]->get();
    }
  }
  // Adds (loss sum, correct) of the batch to sums; with want_grad also leaves d(loss)/d(logits).
  void loss(const int* y, int n, float scale, double* sums, bool want_grad) {
    gpu::softmax_xent(m_acts.back()->get(), y, n, scale, want_grad ? m_d0->get() : nullptr, sums,
                      m_stream);
  }
  void backward(const float* x, int n) {
    const float one = 1.f, zero = 0.f;
    float* dy = m_d0->get();
    float* dx = m_d1->get();
    for (int l = static_cast<int>(m_acts.size()) - 1; l >= 0; --l) {
      const int fi = m_widths[l], fo = m_widths[l + 1];
      const float* in = l == 0 ? x : m_acts[l - 1]->get();
      gpu::relu_backward_bias(dy, m_acts[l]->get(), grads() + m_b_off[l], n, fo,
                              l + 1 < static_cast<int>(m_acts.size()), m_stream);
      check(cublasSgemm(m_blas, CUBLAS_OP_N, CUBLAS_OP_T, fo, fi, n, &one, dy, fo, in, fi, &zero,
                        grads() + m_w_off[l], fo),
            "weight-gradient sgemm");
      if (l > 0)
        check(cublasSgemm(m_blas, CUBLAS_OP_T, CUBLAS_OP_N, fi, n, fo, &one, params() + m_w_off[l],
                          fo, dy, fo, &zero, dx, fi),
              "input-gradient sgemm");
      std::swap(dy, dx);
    }
  }

 private:
  cudaStream_t m_stream;
  cublasHandle_t m_blas;
  int m_max_batch;
  std::vector<int> m_widths;
  std::vector<std::size_t> m_w_off, m_b_off;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> m_acts;
  std::unique_ptr<DeviceBuffer<float>> m_params, m_grads, m_d0, m_d1;
};

// The optimiser of the CPU Optimizer (model.h) on the device: Chainer's MomentumSGD or Adam.
class GpuOptimizer {
 public:
  GpuOptimizer(const Options& o, std::size_t n_params, cudaStream_t stream)
      : m_kind(o.optimizer),
        m_lr(o.lr),
        m_momentum(o.momentum),
        m_n(n_params),
        m_m1(n_params),
        m_m2(o.optimizer == OptimizerKind::adam ? n_params : 1) {
    check(cudaMemsetAsync(m_m1.get(), 0, n_params * sizeof(float), stream), "memset");
    if (m_kind == OptimizerKind::adam)
      check(cudaMemsetAsync(m_m2.get(), 0, n_params * sizeof(float), stream), "memset");
  }
  void step(float* params, const float* grads, cudaStream_t stream) {
    if (m_kind == OptimizerKind::momentum) {
      gpu::momentum_step(params, m_m1.get(), grads, m_n, m_lr, m_momentum, stream);
      return;
    }
    ++m_t;
    const float step =
        m_lr * std::sqrt(1.f - std::pow(0.999f, float(m_t))) / (1.f - std::pow(0.9f, float(m_t)));
    gpu::adam_step(params, m_m1.get(), m_m2.get(), grads, m_n, step, stream);
  }

 private:
  OptimizerKind m_kind;
  float m_lr, m_momentum;
  std::size_t m_n;
  DeviceBuffer<float> m_m1, m_m2;  // momentum (or Adam's first moment); Adam's second moment
  std::int64_t m_t = 0;            // Adam steps taken
};

// Copies m normalised samples hx and their labels hy into the device batch x, y.
inline void upload_batch(const float* hx, const int* hy, int m, float* x, int* y,
                         cudaStream_t stream) {
  check(cudaMemcpyAsync(x, hx, std::size_t(m) * k_image_pixels * sizeof(float),
                        cudaMemcpyHostToDevice, stream),
        "upload");
  check(cudaMemcpyAsync(y, hy, std::size_t(m) * sizeof(int), cudaMemcpyHostToDevice, stream),
        "upload");
}

// This rank's (loss sum, correct) pair accumulated on the device at d, over count samples; zeroes
// the pair for the next stretch.
inline Sums take_sums_from(double* d, double count, cudaStream_t stream) {
  double h[2];
  check(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, stream), "download");
  check(cudaStreamSynchronize(stream), "sync");
  check(cudaMemsetAsync(d, 0, sizeof h, stream), "memset");
  return {h[0], h[1], count};
}

}  // namespace tune::trainer
