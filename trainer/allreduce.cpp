#include "trainer/allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "trainer/one_bit.h"

namespace tune::trainer {
namespace {

inline void add(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}
inline void add(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  add_half(dst, src, n);
}

template <typename T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  if constexpr (std::is_same_v<T, std::uint16_t>) return MPI_UINT16_T;
  return MPI_BYTE;
}

void half_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  add_half(static_cast<std::uint16_t*>(inout), static_cast<const std::uint16_t*>(in),
           std::size_t(*len));
}

// MPI counts are int; large buffers go in pieces.
constexpr std::size_t k_max_count = std::size_t(1) << 30;

}  // namespace

Communicator::Communicator(MPI_Comm comm) : m_comm(comm) {
  MPI_Comm_rank(comm, &m_rank);
  MPI_Comm_size(comm, &m_size);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &m_node);
  int node_rank = 0;
  MPI_Comm_rank(m_node, &node_rank);
  MPI_Comm_split(comm, node_rank == 0 ? 0 : MPI_UNDEFINED, m_rank, &m_leaders);
  MPI_Op_create(&half_sum_op, 1, &m_half_sum);
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (m_leaders != MPI_COMM_NULL) MPI_Comm_free(&m_leaders);
  if (m_node != MPI_COMM_NULL) MPI_Comm_free(&m_node);
  if (m_half_sum != MPI_OP_NULL) MPI_Op_free(&m_half_sum);
}

void Communicator::complete(MPI_Request* requests, int n) {
  if (!m_polite) {
    MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
    return;
  }
  for (int done = 0;;) {
    MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(k_poll_us));
  }
}

template <typename Blocking, typename Start>
void Communicator::collective(Blocking&& blocking, Start&& start) {
  if (!m_polite) {
    blocking();
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  start(&request);
  complete(&request, 1);
}

// to or from may be MPI_PROC_NULL: a plain receive or send.
template <typename T>
void Communicator::sendrecv(const T* send, std::size_t send_n, int to, T* recv, std::size_t recv_n,
                            int from, MPI_Comm comm) {
  const int sn = static_cast<int>(send_n), rn = static_cast<int>(recv_n);
  if (!m_polite) {
    MPI_Sendrecv(send, sn, mpi_type<T>(), to, 7, recv, rn, mpi_type<T>(), from, 7, comm,
                 MPI_STATUS_IGNORE);
    return;
  }
  MPI_Request r[2];
  MPI_Irecv(recv, rn, mpi_type<T>(), from, 7, comm, &r[0]);
  MPI_Isend(send, sn, mpi_type<T>(), to, 7, comm, &r[1]);
  complete(r, 2);
}

template <typename T>
void Communicator::allreduce(T* data, std::size_t n, Algorithm algo, T* scratch) {
  if (n == 0) return;
  if (m_transport.sum_float) {
    if constexpr (std::is_same_v<T, float>)
      m_transport.sum_float(data, n);
    else
      m_transport.sum_half(data, n);
    return;
  }
  switch (algo) {
    case Algorithm::mpi:
      for (std::size_t off = 0; off < n; off += k_max_count) {
        const int len = static_cast<int>(std::min(k_max_count, n - off));
        const MPI_Op op = std::is_same_v<T, float> ? MPI_SUM : m_half_sum;
        collective([&] { MPI_Allreduce(MPI_IN_PLACE, data + off, len, mpi_type<T>(), op, m_comm); },
                   [&](MPI_Request* r) {
                     MPI_Iallreduce(MPI_IN_PLACE, data + off, len, mpi_type<T>(), op, m_comm, r);
                   });
      }
      return;
    case Algorithm::ring:
      ring(data, n, m_comm, scratch);
      return;
    case Algorithm::rabenseifner:
      rabenseifner(data, n, scratch);
      return;
    case Algorithm::hierarchical:
      hierarchical(data, n, scratch);
      return;
    case Algorithm::nccl:
      throw std::logic_error("--allreduce nccl needs the GPU path's transport");
  }
}

// Ring: p-1 reduce-scatter steps then p-1 allgather steps; each rank sends 2(p-1)/p of the
// buffer in total, the bandwidth-optimal volume (this is what busbw normalises by).
template <typename T>
void Communicator::ring(T* data, std::size_t n, MPI_Comm comm, T* scratch) {
  int rank = 0, p = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  if (p == 1) return;
  auto off = [&](int i) { return n * std::size_t(i) / std::size_t(p); };
  auto len = [&](int i) { return off(i + 1) - off(i); };
  const int right = (rank + 1) % p, left = (rank + p - 1) % p;
  for (int s = 0; s < p - 1; ++s) {
    const int send_c = (rank - s + p) % p, recv_c = (rank - s - 1 + 2 * p) % p;
    sendrecv(data + off(send_c), len(send_c), right, scratch, len(recv_c), left, comm);
    add(data + off(recv_c), scratch, len(recv_c));
  }
  for (int s = 0; s < p - 1; ++s) {
    const int send_c = (rank + 1 - s + p) % p, recv_c = (rank - s + p) % p;
    sendrecv(data + off(send_c), len(send_c), right, data + off(recv_c), len(recv_c), left, comm);
  }
}

// Rabenseifner: recursive-halving reduce-scatter, recursive-doubling allgather over the largest
// power of two p2 <= p; the first 2(p-p2) ranks fold pairwise into one first and are sent the
// result at the end.
template <typename T>
void Communicator::rabenseifner(T* data, std::size_t n, T* scratch) {
  const int p = m_size, rank = m_rank;
  if (p == 1) return;
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const int r = p - p2;
  int nr = -1;
  if (rank < 2 * r) {
    if (rank % 2 == 0) {
      sendrecv<T>(nullptr, 0, MPI_PROC_NULL, scratch, n, rank + 1, m_comm);
      add(data, scratch, n);
      nr = rank / 2;
    } else {
      sendrecv<T>(data, n, rank - 1, nullptr, 0, MPI_PROC_NULL, m_comm);
    }
  } else {
    nr = rank - r;
  }
  if (nr >= 0) {
    auto real = [&](int v) { return v < r ? 2 * v : v + r; };
    auto off = [&](int i) { return n * std::size_t(i) / std::size_t(p2); };
    int lo = 0, hi = p2;
    for (int d = p2 / 2; d >= 1; d /= 2) {
      const int partner = nr ^ d, mid = lo + (hi - lo) / 2;
      const bool keep_low = (nr & d) == 0;
      const int keep_lo = keep_low ? lo : mid, keep_hi = keep_low ? mid : hi;
      const int give_lo = keep_low ? mid : lo, give_hi = keep_low ? hi : mid;
      sendrecv(data + off(give_lo), off(give_hi) - off(give_lo), real(partner), scratch,
               off(keep_hi) - off(keep_lo), real(partner), m_comm);
      add(data + off(keep_lo), scratch, off(keep_hi) - off(keep_lo));
      lo = keep_lo, hi = keep_hi;
    }
    for (int d = 1; d < p2; d *= 2) {
      const int partner = nr ^ d;
      const int mine = nr & ~(d - 1), theirs = partner & ~(d - 1);
      sendrecv(data + off(mine), off(mine + d) - off(mine), real(partner), data + off(theirs),
               off(theirs + d) - off(theirs), real(partner), m_comm);
    }
  }
  if (rank < 2 * r) {
    if (rank % 2 == 0)
      sendrecv<T>(data, n, rank + 1, nullptr, 0, MPI_PROC_NULL, m_comm);
    else
      sendrecv<T>(nullptr, 0, MPI_PROC_NULL, data, n, rank - 1, m_comm);
  }
}

// Hierarchical: only one rank per node crosses the network. The node reduce and broadcast run on
// the shared-memory communicator, where Open MPI's vader/sm transport copies through memory.
template <typename T>
void Communicator::hierarchical(T* data, std::size_t n, T* scratch) {
  const MPI_Op op = std::is_same_v<T, float> ? MPI_SUM : m_half_sum;
  int node_rank = 0;
  MPI_Comm_rank(m_node, &node_rank);
  for (std::size_t o = 0; o < n; o += k_max_count) {
    const int len = static_cast<int>(std::min(k_max_count, n - o));
    const void* in = node_rank == 0 ? MPI_IN_PLACE : data + o;
    collective(
        [&] { MPI_Reduce(in, data + o, len, mpi_type<T>(), op, 0, m_node); },
        [&](MPI_Request* r) { MPI_Ireduce(in, data + o, len, mpi_type<T>(), op, 0, m_node, r); });
  }
  if (m_leaders != MPI_COMM_NULL) ring(data, n, m_leaders, scratch);
  for (std::size_t o = 0; o < n; o += k_max_count) {
    const int len = static_cast<int>(std::min(k_max_count, n - o));
    collective([&] { MPI_Bcast(data + o, len, mpi_type<T>(), 0, m_node); },
               [&](MPI_Request* r) { MPI_Ibcast(data + o, len, mpi_type<T>(), 0, m_node, r); });
  }
}

void Communicator::allgather(const void* in, std::size_t bytes, void* out, Algorithm algo) {
  if (m_transport.gather) return m_transport.gather(in, bytes, out);
  auto* o = static_cast<std::uint8_t*>(out);
  if (algo == Algorithm::mpi || algo == Algorithm::hierarchical ||
      algo == Algorithm::rabenseifner) {
    const int b = static_cast<int>(bytes);
    collective(
        [&] { MPI_Allgather(in, b, MPI_BYTE, out, b, MPI_BYTE, m_comm); },
        [&](MPI_Request* r) { MPI_Iallgather(in, b, MPI_BYTE, out, b, MPI_BYTE, m_comm, r); });
    return;
  }
  // Ring allgather: p-1 steps, each forwarding the block received in the previous one.
  std::memcpy(o + std::size_t(m_rank) * bytes, in, bytes);
  const int p = m_size, right = (m_rank + 1) % p, left = (m_rank + p - 1) % p;
  for (int s = 0; s < p - 1; ++s) {
    const int send_b = (m_rank - s + p) % p, recv_b = (m_rank - s - 1 + 2 * p) % p;
    sendrecv(o + std::size_t(send_b) * bytes, bytes, right, o + std::size_t(recv_b) * bytes, bytes,
             left, m_comm);
  }
}

template void Communicator::allreduce<float>(float*, std::size_t, Algorithm, float*);
template void Communicator::allreduce<std::uint16_t>(std::uint16_t*, std::size_t, Algorithm,
                                                     std::uint16_t*);

GradientReducer::GradientReducer(Communicator& comm, std::size_t n, Algorithm algo, GradDtype dtype,
                                 double bucket_mb)
    : m_comm(comm), m_n(n), m_algo(algo), m_dtype(dtype) {
  const std::size_t elem = dtype == GradDtype::fp16 ? 2 : 4;
  m_bucket = std::clamp<std::size_t>(static_cast<std::size_t>(bucket_mb * 1024 * 1024 / elem), 1,
                                     std::max<std::size_t>(n, 1));
  m_scratch.resize(m_bucket);
  if (dtype == GradDtype::fp16) {
    m_half.resize(m_bucket);
    m_half_scratch.resize(m_bucket);
  }
  if (dtype == GradDtype::one_bit) {
    m_residual.assign(n, 0.f);
    const std::size_t bytes = one_bit_bytes(m_bucket);
    m_packed.resize(bytes);
    m_gathered.resize(bytes * std::size_t(comm.size()));
  }
}

void GradientReducer::reduce(float* grads, bool compress) {
  for (std::size_t off = 0; off < m_n; off += m_bucket) {
    const std::size_t len = std::min(m_bucket, m_n - off);
    float* g = grads + off;
    if (m_dtype == GradDtype::fp16) {
      float_to_half(g, m_half.data(), len);
      m_comm.allreduce(m_half.data(), len, m_algo, m_half_scratch.data());
      half_to_float(m_half.data(), g, len);
    } else if (m_dtype == GradDtype::one_bit && compress) {
      one_bit(g, len, off);
    } else {
      m_comm.allreduce(g, len, m_algo, m_scratch.data());
    }
  }
}

// Error feedback keeps what one step's signs drop for the next (one_bit.h has the arithmetic).
void GradientReducer::one_bit(float* g, std::size_t n, std::size_t offset) {
  const std::size_t bytes = one_bit_bytes(n);
  one_bit_encode(g, m_residual.data() + offset, n, m_packed.data());
  m_comm.allgather(m_packed.data(), bytes, m_gathered.data(), m_algo);
  one_bit_decode(m_gathered.data(), m_comm.size(), g, n);
}

}  // namespace tune::trainer
