// The --device cuda path (see gpu.h), built into the plugin libtune_trainer_gpu.so together with
// gpu_kernels.cu; device.cpp in the executable loads it. Only tune_trainer_gpu_plugin() is
// exported (the target compiles with hidden visibility).
//
// The loop is the CPU path's (driver.h); the GpuBackend below computes forward and backward on
// the device and updates the model in one of two ways:
//   - on the device: plain synchronous SGD with --allreduce nccl (fp32, or fp16 converted on the
//     device), the momentum/Adam step as a kernel;
//   - through host copies, for every other setting (--double-buffering, --sync block, 1bit, the
//     CPU allreduce algorithms): the gradients are downloaded, the CPU update rule (sync.h) runs
//     on them exactly as on the CPU path, and the parameters are uploaded. With --allreduce nccl
//     its collectives go through NCCL (NcclTransport), 1-bit's allgather included.
#include "trainer/gpu.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "trainer/allreduce.h"
#include "trainer/driver.h"
#include "trainer/gpu_parts.h"
#include "trainer/one_bit.h"
#include "trainer/sync.h"

namespace tune::trainer {
namespace {

ncclComm_t init_nccl(int rank, int world, MPI_Comm comm) {
  ncclUniqueId id;
  if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclComm_t nccl = nullptr;
  check(ncclCommInitRank(&nccl, world, id, rank), "ncclCommInitRank");
  return nccl;
}

// NCCL for a Communicator's collectives on host buffers: each call copies to the device, reduces
// or gathers there on its own stream and copies back. Called by whichever thread reduces (the
// comm thread with --double-buffering), hence the cudaSetDevice in each call.
class NcclTransport {
 public:
  NcclTransport(ncclComm_t nccl, int device, int rank, int world, std::size_t n)
      : m_nccl(nccl),
        m_device(device),
        m_rank(rank),
        m_buffer(std::max(n * sizeof(float), one_bit_bytes(n) * std::size_t(world))) {
    check(cudaStreamCreate(&m_stream), "cudaStreamCreate");
  }
  ~NcclTransport() { cudaStreamDestroy(m_stream); }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  Transport transport() {
    return {[this](float* d, std::size_t n) { sum(d, n, sizeof(float), ncclFloat); },
            [this](std::uint16_t* d, std::size_t n) { sum(d, n, 2, ncclHalf); },
            [this](const void* in, std::size_t bytes, void* out) { gather(in, bytes, out); }};
  }

 private:
  void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    check(cudaMemcpyAsync(to, from, bytes, kind, m_stream), "copy");
  }
  void sum(void* data, std::size_t n, std::size_t elem, ncclDataType_t type) {
    check(cudaSetDevice(m_device), "cudaSetDevice");
    copy(m_buffer.get(), data, n * elem, cudaMemcpyHostToDevice);
    check(ncclAllReduce(m_buffer.get(), m_buffer.get(), n, type, ncclSum, m_nccl, m_stream),
          "ncclAllReduce");
    copy(data, m_buffer.get(), n * elem, cudaMemcpyDeviceToHost);
    check(cudaStreamSynchronize(m_stream), "sync");
  }
  void gather(const void* in, std::size_t bytes, void* out) {
    check(cudaSetDevice(m_device), "cudaSetDevice");
    std::uint8_t* mine = m_buffer.get() + std::size_t(m_rank) * bytes;
    copy(mine, in, bytes, cudaMemcpyHostToDevice);
    check(ncclAllGather(mine, m_buffer.get(), bytes, ncclUint8, m_nccl, m_stream), "ncclAllGather");
    int world = 0;
    check(ncclCommCount(m_nccl, &world), "ncclCommCount");
    copy(out, m_buffer.get(), bytes * std::size_t(world), cudaMemcpyDeviceToHost);
    check(cudaStreamSynchronize(m_stream), "sync");
  }

  ncclComm_t m_nccl;
  int m_device, m_rank;
  DeviceBuffer<std::uint8_t> m_buffer;
  cudaStream_t m_stream = nullptr;
};

// The update through host copies (see the top of the file).
struct HostUpdate {
  HostUpdate(const Options& o, MPI_Comm comm, std::size_t n)
      : communicator(comm),
        optimizer(o.optimizer, n, o.lr, o.momentum),
        reducer(communicator, n, o.allreduce, o.grad_dtype, o.bucket_mb),
        rule(make_update_rule(o, reducer, communicator, optimizer, n)) {}
  Communicator communicator;
  Optimizer optimizer;
  GradientReducer reducer;
  std::unique_ptr<UpdateRule> rule;
  Weights weights;
};

// The CUDA backend of run_loop (driver.h).
class GpuBackend {
 public:
  GpuBackend(const Options& o, MPI_Comm comm, const Dataset& val, int device);
  ~GpuBackend();
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  void train(const Batch& batch, bool compress);
  Sums take_sums();
  Sums evaluate();
  void finish();
  // After a finished run only: after an error the plugin aborts every rank instead of tearing
  // NCCL down (a destroy can wait for peers that are gone).
  void close_nccl();

 private:
  void upload_params();
  void device_step();

  const Options& m_o;
  MPI_Comm m_comm;
  const Dataset& m_val;
  int m_rank = 0, m_world = 1;
  cudaStream_t m_stream = nullptr;
  cublasHandle_t m_blas = nullptr;
  std::optional<GpuMlp> m_model;
  std::optional<GpuOptimizer> m_optimizer;  // on the device path
  ncclComm_t m_nccl = nullptr;
  std::optional<NcclTransport> m_transport;
  std::optional<HostUpdate> m_host;  // on the host path
  std::optional<DeviceBuffer<std::uint16_t>> m_half;
  std::optional<DeviceBuffer<float>> m_x;
  std::optional<DeviceBuffer<int>> m_y;
  std::optional<DeviceBuffer<double>> m_sums;  // train loss, train correct, val loss, val correct
  float m_scale = 1.f;
  double m_count = 0;
};

GpuBackend::GpuBackend(const Options& o, MPI_Comm comm, const Dataset& val, int device)
    : m_o(o), m_comm(comm), m_val(val) {
  MPI_Comm_rank(comm, &m_rank);
  MPI_Comm_size(comm, &m_world);
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaStreamCreate(&m_stream), "cudaStreamCreate");
  check(cublasCreate(&m_blas), "cublasCreate");
  check(cublasSetStream(m_blas, m_stream), "cublasSetStream");
  m_model.emplace(o, m_stream, m_blas);
  const std::size_t n = m_model->num_params();
  const bool on_device = o.allreduce == Algorithm::nccl && o.sync == SyncKind::sgd &&
                         !o.double_buffering && o.grad_dtype != GradDtype::one_bit;
  if (o.allreduce == Algorithm::nccl) m_nccl = init_nccl(m_rank, m_world, comm);
  if (on_device) {
    m_optimizer.emplace(o, n, m_stream);
    if (o.grad_dtype == GradDtype::fp16) m_half.emplace(n);
    m_scale = 1.f / float(o.batch_size * m_world);
  } else {
    m_host.emplace(o, comm, n);
    if (m_nccl) {
      m_transport.emplace(m_nccl, device, m_rank, m_world, n);
      m_host->communicator.set_transport(m_transport->transport());
    }
    m_host->weights.params.resize(n);
    m_host->weights.grads.resize(n);
    check(cudaMemcpy(m_host->weights.params.data(), m_model->params(), n * sizeof(float),
                     cudaMemcpyDeviceToHost),
          "download parameters");
    m_scale = m_host->rule->grad_scale(o.batch_size);
  }
  m_x.emplace(std::size_t(o.batch_size) * k_image_pixels);
  m_y.emplace(std::size_t(o.batch_size));
  m_sums.emplace(4);
  check(cudaMemsetAsync(m_sums->get(), 0, 4 * sizeof(double), m_stream), "memset");
  check(cudaStreamSynchronize(m_stream), "sync");
}

GpuBackend::~GpuBackend() {
  m_host.reset();  // its comm thread may use the transport
  m_transport.reset();
  cublasDestroy(m_blas);
  cudaStreamDestroy(m_stream);
}

void GpuBackend::close_nccl() {
  m_host.reset();
  m_transport.reset();
  if (m_nccl) ncclCommDestroy(m_nccl);
  m_nccl = nullptr;
}

void GpuBackend::upload_params() {
  const auto& p = m_host->weights.params;
  check(cudaMemcpyAsync(m_model->params(), p.data(), p.size() * sizeof(float),
                        cudaMemcpyHostToDevice, m_stream),
        "upload parameters");
}

void GpuBackend::device_step() {
  const std::size_t n = m_model->num_params();
  float* g = m_model->grads();
  if (!m_half) {
    check(ncclAllReduce(g, g, n, ncclFloat, ncclSum, m_nccl, m_stream), "ncclAllReduce");
  } else {
    gpu::to_half(g, m_half->get(), n, m_stream);
    check(ncclAllReduce(m_half->get(), m_half->get(), n, ncclHalf, ncclSum, m_nccl, m_stream),
          "ncclAllReduce");
    gpu::from_half(m_half->get(), g, n, m_stream);
  }
  m_optimizer->step(m_model->params(), g, m_stream);
}

void GpuBackend::train(const Batch& batch, bool compress) {
  const int n = m_o.batch_size;
  upload_batch(batch.x.data(), batch.y.data(), n, m_x->get(), m_y->get(), m_stream);
  m_model->forward(m_x->get(), n);
  m_model->loss(m_y->get(), n, m_scale, m_sums->get(), true);
  m_model->backward(m_x->get(), n);
  m_count += n;
  if (!m_host) return device_step();
  Weights& w = m_host->weights;
  check(cudaMemcpyAsync(w.grads.data(), m_model->grads(), w.grads.size() * sizeof(float),
                        cudaMemcpyDeviceToHost, m_stream),
        "download gradients");
  check(cudaStreamSynchronize(m_stream), "sync");
  m_host->rule->step(w, compress);
  upload_params();
}

Sums GpuBackend::take_sums() {
  const Sums s = take_sums_from(m_sums->get(), m_count, m_stream);
  m_count = 0;
  return s;
}

// This rank's validation share on the device (the agreed model uploaded first on the host path),
// summed over all ranks.
Sums GpuBackend::evaluate() {
  std::int64_t count = 0;
  auto on_device = [&] {
    if (m_host) upload_params();
    count = for_each_validation_batch(m_val, m_o.batch_size, m_rank, m_world,
                                      [&](const float* hx, const int* hy, int m) {
                                        upload_batch(hx, hy, m, m_x->get(), m_y->get(), m_stream);
                                        m_model->forward(m_x->get(), m);
                                        m_model->loss(m_y->get(), m, 0.f, m_sums->get() + 2, false);
                                      });
  };
  if (m_host) {
    m_host->rule->evaluate(m_host->weights, on_device);
    upload_params();  // training goes on from the rule's own point
  } else {
    on_device();
  }
  return take_sums_from(m_sums->get() + 2, double(count), m_stream).global(m_comm);
}

void GpuBackend::finish() {
  if (!m_host) return;
  m_host->rule->finish(m_host->weights);
  upload_params();
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
  const auto devices = device_count();
  std::string error;
  if (!devices)
    error = devices.error();
  else if (o.model != ModelKind::mlp)
    error = "--device cuda: only --model mlp runs on the GPU";
  std::optional<RunSetup> setup = set_up_run(o, error, rank, world, comm);
  if (!setup) return 1;
  // One rank per device on each node.
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  GpuBackend backend(o, comm, setup->data.second, local_rank % *devices);
  DataIterator iterator(setup->data.first, o.batch_size, rank, world, o.iterator_workers,
                        o.prefetch, o.augment, o.seed);
  run_loop(o, comm, *setup, iterator, backend, " on CUDA");
  backend.close_nccl();
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
