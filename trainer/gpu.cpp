// The --device cuda path (see gpu.h), built into the plugin libtune_trainer_gpu.so together with
// gpu_kernels.cu; device.cpp in the executable loads it. Only tune_trainer_gpu_plugin() is
// exported (the target compiles with hidden visibility).
#include "trainer/gpu.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "trainer/allreduce.h"
#include "trainer/data.h"
#include "trainer/gpu_kernels.h"
#include "trainer/log_report.h"
#include "trainer/model.h"
#include "trainer/run_common.h"

namespace tune::trainer {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("--device cuda: {}: {}", what, cudaGetErrorString(e)));
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("--device cuda: {}: cuBLAS status {}", what, int(e)));
}
void check(ncclResult_t e, const char* what) {
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

// Sums the gradients over the ranks after each step: on the device with NCCL (fp32, or fp16
// converted on the device) for --allreduce nccl, else through the host and the CPU
// GradientReducer (any --grad-dtype).
class GradientSum {
 public:
  GradientSum(const Options& o, std::size_t n_params, int rank, int world, MPI_Comm comm)
      : m_n(n_params) {
    if (o.allreduce == Algorithm::nccl) {
      ncclUniqueId id;
      if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
      check(ncclCommInitRank(&m_nccl, world, id, rank), "ncclCommInitRank");
      if (o.grad_dtype == GradDtype::fp16)
        m_half = std::make_unique<DeviceBuffer<std::uint16_t>>(n_params);
    } else {
      m_cpu_comm = std::make_unique<Communicator>(comm);
      m_cpu_reducer = std::make_unique<GradientReducer>(*m_cpu_comm, n_params, o.allreduce,
                                                        o.grad_dtype, o.bucket_mb);
      m_host_grads.resize(n_params);
    }
  }
  // Not a destructor: after an error the plugin aborts every rank instead of tearing NCCL down.
  void destroy() {
    if (m_nccl) ncclCommDestroy(m_nccl);
    m_nccl = nullptr;
  }

  // grads (device) becomes the sum over ranks; compress: past --warm-start (1-bit only).
  void sum(float* grads, bool compress, cudaStream_t stream) {
    if (m_nccl && !m_half) {
      check(ncclAllReduce(grads, grads, m_n, ncclFloat, ncclSum, m_nccl, stream), "ncclAllReduce");
    } else if (m_nccl) {
      gpu::to_half(grads, m_half->get(), m_n, stream);
      check(ncclAllReduce(m_half->get(), m_half->get(), m_n, ncclHalf, ncclSum, m_nccl, stream),
            "ncclAllReduce");
      gpu::from_half(m_half->get(), grads, m_n, stream);
    } else {
      check(cudaMemcpyAsync(m_host_grads.data(), grads, m_n * sizeof(float), cudaMemcpyDeviceToHost,
                            stream),
            "download");
      check(cudaStreamSynchronize(stream), "sync");
      m_cpu_reducer->reduce(m_host_grads.data(), compress);
      check(cudaMemcpyAsync(grads, m_host_grads.data(), m_n * sizeof(float), cudaMemcpyHostToDevice,
                            stream),
            "upload");
    }
  }

 private:
  std::size_t m_n;
  ncclComm_t m_nccl = nullptr;
  std::unique_ptr<DeviceBuffer<std::uint16_t>> m_half;
  std::unique_ptr<Communicator> m_cpu_comm;
  std::unique_ptr<GradientReducer> m_cpu_reducer;
  std::vector<float> m_host_grads;
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
void upload_batch(const float* hx, const int* hy, int m, float* x, int* y, cudaStream_t stream) {
  check(cudaMemcpyAsync(x, hx, std::size_t(m) * k_image_pixels * sizeof(float),
                        cudaMemcpyHostToDevice, stream),
        "upload");
  check(cudaMemcpyAsync(y, hy, std::size_t(m) * sizeof(int), cudaMemcpyHostToDevice, stream),
        "upload");
}

// This rank's (loss sum, correct) pair accumulated on the device at d, over count samples; zeroes
// the pair for the next stretch.
Sums take_sums(double* d, double count, cudaStream_t stream) {
  double h[2];
  check(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, stream), "download");
  check(cudaStreamSynchronize(stream), "sync");
  check(cudaMemsetAsync(d, 0, sizeof h, stream), "memset");
  return {h[0], h[1], count};
}

std::expected<int, std::string> device_count() {
  int n = 0;
  // No driver, no device or a driver too old all mean the same to a user: nothing to run on.
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
    return std::unexpected(std::string("--device cuda: no CUDA device"));
  return n;
}

int train_on_gpu(const Options& o, MPI_Comm comm) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  std::string error;
  if (o.model != ModelKind::mlp)
    error = "--device cuda: only --model mlp runs on the GPU";
  else if (o.double_buffering)
    error = "--device cuda: --double-buffering is CPU-only";
  else if (o.allreduce == Algorithm::nccl && o.grad_dtype == GradDtype::one_bit)
    error =
        "--grad-dtype 1bit needs a CPU --allreduce (mpi|ring|rabenseifner|hierarchical), not nccl";
  std::optional<RunSetup> setup = set_up_run(o, error, rank, world, comm);
  if (!setup) return 1;
  const Dataset& train = setup->data.first;
  const Dataset& val = setup->data.second;
  std::optional<LogReport>& log = setup->log;

  // One rank per device on each node.
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  check(cudaSetDevice(local_rank % *device_count()), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasHandle_t blas;
  check(cublasCreate(&blas), "cublasCreate");
  check(cublasSetStream(blas, stream), "cublasSetStream");

  GpuMlp model(o, stream, blas);
  const std::size_t n_params = model.num_params();
  GpuOptimizer optimizer(o, n_params, stream);

  GradientSum gradient_sum(o, n_params, rank, world, comm);

  DataIterator iterator(train, o.batch_size, rank, world, o.iterator_workers, o.prefetch, o.augment,
                        o.seed);
  const std::int64_t per_epoch = iterator.batches_per_epoch(),
                     global_batch = std::int64_t(o.batch_size) * world;
  const std::int64_t total = total_iterations(o, per_epoch);
  const float scale = 1.f / float(global_batch);
  DeviceBuffer<float> x(std::size_t(o.batch_size) * k_image_pixels);
  DeviceBuffer<int> y(std::size_t(o.batch_size));
  DeviceBuffer<double> sums(4);  // train loss, train correct, val loss, val correct
  check(cudaMemsetAsync(sums.get(), 0, 4 * sizeof(double), stream), "memset");

  // This rank's validation share on the device; returns the sums over all ranks.
  auto evaluate = [&] {
    const std::int64_t count = for_each_validation_batch(
        val, o.batch_size, rank, world, [&](const float* hx, const int* hy, int m) {
          upload_batch(hx, hy, m, x.get(), y.get(), stream);
          model.forward(x.get(), m);
          model.loss(y.get(), m, 0.f, sums.get() + 2, false);
        });
    return take_sums(sums.get() + 2, double(count), stream).global(comm);
  };

  check(cudaStreamSynchronize(stream), "sync");
  MPI_Barrier(comm);
  const auto t0 = Clock::now();
  double eval_seconds = 0;
  std::int64_t interval_count = 0;
  for (std::int64_t it = 0; it < total; ++it) {
    const Batch& batch = iterator.next();
    upload_batch(batch.x.data(), batch.y.data(), static_cast<int>(batch.y.size()), x.get(), y.get(),
                 stream);
    model.forward(x.get(), o.batch_size);
    model.loss(y.get(), o.batch_size, scale, sums.get(), true);
    model.backward(x.get(), o.batch_size);
    interval_count += o.batch_size;
    gradient_sum.sum(model.grads(), it * global_batch >= o.warm_start, stream);
    optimizer.step(model.params(), model.grads(), stream);
    const bool last = it + 1 == total;
    if (!o.benchmark && ((it + 1) % o.log_interval == 0 || last)) {
      const auto te = Clock::now();
      const Sums tr = take_sums(sums.get(), double(interval_count), stream).global(comm);
      interval_count = 0;
      const Sums va = evaluate();
      eval_seconds += seconds_since(te);
      const double elapsed = seconds_since(t0);
      if (log)
        log->append(interval_entry(it + 1, per_epoch, global_batch, tr, va, elapsed, eval_seconds));
    }
  }
  // Without --benchmark the sums were taken at each log and this reads zeros, which it ignores.
  const Sums run = take_sums(sums.get(), double(interval_count), stream);
  MPI_Barrier(comm);
  finish_run(o, log, run, total, per_epoch, global_batch, seconds_since(t0), eval_seconds,
             " on CUDA", rank, world, comm);
  gradient_sum.destroy();
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  return 0;
}

int plugin_device_count(char* error, std::size_t capacity) {
  const auto n = device_count();
  if (n) return *n;
  if (capacity > 0) std::snprintf(error, capacity, "%s", n.error().c_str());
  return 0;
}

// Same handling as main's for the CPU path: one line, then abort every rank.
int plugin_run_training(const Options* o, MPI_Comm comm) {
  try {
    return train_on_gpu(*o, comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune-trainer: error: %s\n", e.what());
    MPI_Abort(comm, 1);
  }
  return 1;
}

constexpr GpuPlugin k_plugin = {k_gpu_plugin_abi, sizeof(Options), plugin_device_count,
                                plugin_run_training};

}  // namespace
}  // namespace tune::trainer

const tune::trainer::GpuPlugin* tune_trainer_gpu_plugin() { return &tune::trainer::k_plugin; }
