// Gradient allreduce: own ring and Rabenseifner algorithms, a hierarchical variant and
// MPI_Allreduce; fp32, fp16 or 1-bit on the wire, one bucket of bucket_mb at a time.
// Not thread-safe: one thread makes all MPI calls through a Communicator and GradientReducer.
// Design: docs/design-notes.md#trainerallreduceh
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "trainer/half.h"
#include "trainer/options.h"

namespace tune::trainer {

// Another transport for the collectives of a Communicator (the GPU path plugs NCCL in): when set,
// allreduce and allgather go through it, whatever the Algorithm.
struct Transport {
  std::function<void(float*, std::size_t)> sum_float;           // in place, over ranks
  std::function<void(std::uint16_t*, std::size_t)> sum_half;    // IEEE half bits
  std::function<void(const void*, std::size_t, void*)> gather;  // bytes per rank, rank order
};

class Communicator {
 public:
  explicit Communicator(MPI_Comm comm);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return m_rank; }
  int size() const { return m_size; }
  MPI_Comm comm() const { return m_comm; }
  // Polite waits: nonblocking calls completed by MPI_Test every k_poll_us, sleeping in between.
  void set_polite(bool polite) { m_polite = polite; }
  void set_transport(Transport transport) { m_transport = std::move(transport); }

  // In place: data[i] = sum over ranks. T is float (fp32) or std::uint16_t (IEEE half bits).
  // scratch must hold n elements. Algorithm::nccl is not handled here (GPU path).
  template <typename T>
  void allreduce(T* data, std::size_t n, Algorithm algo, T* scratch);

  // Every rank's `bytes` bytes, concatenated in rank order into out (size()*bytes).
  void allgather(const void* in, std::size_t bytes, void* out, Algorithm algo);

 private:
  static constexpr int k_poll_us = 20;
  void complete(MPI_Request* requests, int n);
  template <typename Blocking, typename Start>
  void collective(Blocking&& blocking, Start&& start);
  template <typename T>
  void sendrecv(const T* send, std::size_t send_n, int to, T* recv, std::size_t recv_n, int from,
                MPI_Comm comm);
  template <typename T>
  void ring(T* data, std::size_t n, MPI_Comm comm, T* scratch);
  template <typename T>
  void rabenseifner(T* data, std::size_t n, T* scratch);
  template <typename T>
  void hierarchical(T* data, std::size_t n, T* scratch);

  MPI_Comm m_comm, m_node = MPI_COMM_NULL, m_leaders = MPI_COMM_NULL;
  int m_rank = 0, m_size = 1;
  bool m_polite = false;
  Transport m_transport;
  MPI_Op m_half_sum = MPI_OP_NULL;
};

class GradientReducer {
 public:
  GradientReducer(Communicator& comm, std::size_t n, Algorithm algo, GradDtype dtype,
                  double bucket_mb);
  // Replaces grads[0..n) with the sum over ranks. With compress == false a 1-bit reducer sends
  // fp32 (the warm start); the residual is only used while compressing.
  void reduce(float* grads, bool compress = true);
  std::size_t bucket_elems() const { return m_bucket; }
  const std::vector<float>& residual() const { return m_residual; }

 private:
  void one_bit(float* g, std::size_t n, std::size_t offset);

  Communicator& m_comm;
  std::size_t m_n, m_bucket;
  Algorithm m_algo;
  GradDtype m_dtype;
  std::vector<float> m_scratch;
  std::vector<std::uint16_t> m_half, m_half_scratch;
  std::vector<float> m_residual;
  std::vector<std::uint8_t> m_packed, m_gathered;
};

}  // namespace tune::trainer
