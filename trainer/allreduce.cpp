#include "trainer/allreduce.h"

#include <immintrin.h>
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace tune::trainer {
namespace {

// IEEE binary16 by hand for CPUs without F16C: round to nearest even, overflow to infinity,
// subnormals kept, NaN stays NaN.
}  // namespace

std::uint16_t half_from_float_scalar(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN / inf
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {                        // below 2^-14: subnormal half (or zero)
    if (abs < 0x33000000u) return sign;           // below half the smallest subnormal: +-0
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    const std::uint32_t v = mant >> shift, rest = mant & ((1u << shift) - 1),
                        halfway = 1u << (shift - 1);
    return sign | static_cast<std::uint16_t>(v + (rest > halfway || (rest == halfway && (v & 1))));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits; a carry
  // out of the mantissa correctly bumps the exponent.
  const std::uint32_t v = (abs - 0x38000000u) >> 13, rest = abs & 0x1fffu;
  return sign | static_cast<std::uint16_t>(v + (rest > 0x1000u || (rest == 0x1000u && (v & 1))));
}

float half_to_float_scalar(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
                      mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  return std::bit_cast<float>(sign) + (sign ? -1.f : 1.f) * static_cast<float>(mant) * 0x1p-24f;
}

namespace {

// F16C (vcvtps2ph/vcvtph2ps, 8 lanes) where the CPU has it; chosen once at run time.
__attribute__((target("avx,f16c"))) void to_half_f16c(const float* in, std::uint16_t* out,
                                                      std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = half_from_float_scalar(in[i]);
}

__attribute__((target("avx,f16c"))) void from_half_f16c(const std::uint16_t* in, float* out,
                                                        std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = half_to_float_scalar(in[i]);
}

// Accumulate in float, round once per step, as NCCL does for half.
__attribute__((target("avx,f16c"))) void add_half_f16c(std::uint16_t* dst, const std::uint16_t* src,
                                                       std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dst + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i)
    dst[i] = half_from_float_scalar(half_to_float_scalar(dst[i]) + half_to_float_scalar(src[i]));
}

const bool k_has_f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");

void to_half(const float* in, std::uint16_t* out, std::size_t n) {
  if (k_has_f16c) return to_half_f16c(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = half_from_float_scalar(in[i]);
}

void from_half(const std::uint16_t* in, float* out, std::size_t n) {
  if (k_has_f16c) return from_half_f16c(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float_scalar(in[i]);
}

void add_half(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  if (k_has_f16c) return add_half_f16c(dst, src, n);
  for (std::size_t i = 0; i < n; ++i)
    dst[i] = half_from_float_scalar(half_to_float_scalar(dst[i]) + half_to_float_scalar(src[i]));
}

inline void add(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}
inline void add(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  add_half(dst, src, n);
}

template <typename T>
MPI_Datatype mpi_type() {
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_UINT16_T;
}

void half_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  add_half(static_cast<std::uint16_t*>(inout), static_cast<const std::uint16_t*>(in),
           std::size_t(*len));
}

// MPI counts are int; large buffers go in pieces.
constexpr std::size_t k_max_count = std::size_t(1) << 30;

template <typename T>
void sendrecv(const T* send, std::size_t send_n, int to, T* recv, std::size_t recv_n, int from,
              MPI_Comm comm) {
  MPI_Sendrecv(send, static_cast<int>(send_n), mpi_type<T>(), to, 7, recv, static_cast<int>(recv_n),
               mpi_type<T>(), from, 7, comm, MPI_STATUS_IGNORE);
}

}  // namespace

void float_to_half(const float* in, std::uint16_t* out, std::size_t n) { to_half(in, out, n); }
void half_to_float(const std::uint16_t* in, float* out, std::size_t n) { from_half(in, out, n); }

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

template <typename T>
void Communicator::allreduce(T* data, std::size_t n, Algorithm algo, T* scratch) {
  if (n == 0) return;
  switch (algo) {
    case Algorithm::mpi:
      for (std::size_t off = 0; off < n; off += k_max_count) {
        const std::size_t len = std::min(k_max_count, n - off);
        MPI_Allreduce(MPI_IN_PLACE, data + off, static_cast<int>(len), mpi_type<T>(),
                      std::is_same_v<T, float> ? MPI_SUM : m_half_sum, m_comm);
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
      throw std::logic_error("--allreduce nccl runs on the GPU path only");
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
      MPI_Recv(scratch, static_cast<int>(n), mpi_type<T>(), rank + 1, 8, m_comm, MPI_STATUS_IGNORE);
      add(data, scratch, n);
      nr = rank / 2;
    } else {
      MPI_Send(data, static_cast<int>(n), mpi_type<T>(), rank - 1, 8, m_comm);
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
      MPI_Send(data, static_cast<int>(n), mpi_type<T>(), rank + 1, 9, m_comm);
    else
      MPI_Recv(data, static_cast<int>(n), mpi_type<T>(), rank - 1, 9, m_comm, MPI_STATUS_IGNORE);
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
    MPI_Reduce(node_rank == 0 ? MPI_IN_PLACE : data + o, data + o, len, mpi_type<T>(), op, 0,
               m_node);
  }
  if (m_leaders != MPI_COMM_NULL) ring(data, n, m_leaders, scratch);
  for (std::size_t o = 0; o < n; o += k_max_count)
    MPI_Bcast(data + o, static_cast<int>(std::min(k_max_count, n - o)), mpi_type<T>(), 0, m_node);
}

void Communicator::allgather(const void* in, std::size_t bytes, void* out, Algorithm algo) {
  auto* o = static_cast<std::uint8_t*>(out);
  if (algo == Algorithm::mpi || algo == Algorithm::hierarchical ||
      algo == Algorithm::rabenseifner) {
    MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE,
                  m_comm);
    return;
  }
  // Ring allgather: p-1 steps, each forwarding the block received in the previous one.
  std::memcpy(o + std::size_t(m_rank) * bytes, in, bytes);
  const int p = m_size, right = (m_rank + 1) % p, left = (m_rank + p - 1) % p;
  for (int s = 0; s < p - 1; ++s) {
    const int send_b = (m_rank - s + p) % p, recv_b = (m_rank - s - 1 + 2 * p) % p;
    MPI_Sendrecv(o + std::size_t(send_b) * bytes, static_cast<int>(bytes), MPI_BYTE, right, 10,
                 o + std::size_t(recv_b) * bytes, static_cast<int>(bytes), MPI_BYTE, left, 10,
                 m_comm, MPI_STATUS_IGNORE);
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
    const std::size_t bytes = sizeof(float) + (m_bucket + 7) / 8;
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

namespace {

// k_signs[b][k] is +1 when bit k of b is set, else -1: unpacking a byte becomes 8 independent
// multiply-adds the compiler vectorises, instead of 8 shifts and branches.
const std::array<std::array<float, 8>, 256> k_signs = [] {
  std::array<std::array<float, 8>, 256> t{};
  for (int b = 0; b < 256; ++b) {
    for (int k = 0; k < 8; ++k) t[b][k] = ((b >> k) & 1) ? 1.f : -1.f;
  }
  return t;
}();

}  // namespace

// 1-bit with error feedback: v = g + residual; send sign(v) and scale = mean|v|; keep
// residual = v - scale*sign(v) for the next step, so what compression drops is sent later.
// The scale is summed in double in four interleaved lanes (element i into lane i % 4, lanes added
// pairwise at the end): four dependency chains instead of one, in an order fixed by the code, not
// by the vector width (the tests recompute it bit for bit).
void GradientReducer::one_bit(float* g, std::size_t n, std::size_t offset) {
  float* res = m_residual.data() + offset;
  for (std::size_t i = 0; i < n; ++i) g[i] += res[i];
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i4 = 0;
  for (; i4 + 4 <= n; i4 += 4) {
    for (std::size_t k = 0; k < 4; ++k) lane[k] += std::fabs(g[i4 + k]);
  }
  for (; i4 < n; ++i4) lane[i4 % 4] += std::fabs(g[i4]);
  const double abs_sum = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  const float scale = static_cast<float>(abs_sum / double(n));
  const std::size_t n_bytes = (n + 7) / 8;
  const std::size_t bytes = sizeof(float) + n_bytes;
  std::uint8_t* bits = m_packed.data() + sizeof(float);
  std::memcpy(m_packed.data(), &scale, sizeof scale);
  const std::size_t full = n / 8;
  for (std::size_t j = 0; j < full; ++j) {
    const float* v = g + 8 * j;
    unsigned b = 0;
    for (unsigned k = 0; k < 8; ++k) b |= unsigned(v[k] >= 0.f) << k;
    bits[j] = static_cast<std::uint8_t>(b);
  }
  if (full < n_bytes) {
    unsigned b = 0;
    for (std::size_t i = 8 * full; i < n; ++i) b |= unsigned(g[i] >= 0.f) << (i - 8 * full);
    bits[full] = static_cast<std::uint8_t>(b);
  }
  for (std::size_t i = 0; i < n; ++i) res[i] = g[i] - (g[i] >= 0.f ? scale : -scale);
  m_comm.allgather(m_packed.data(), bytes, m_gathered.data(), m_algo);
  std::fill(g, g + n, 0.f);
  for (int r = 0; r < m_comm.size(); ++r) {
    const std::uint8_t* block = m_gathered.data() + std::size_t(r) * bytes;
    float s = 0;
    std::memcpy(&s, block, sizeof s);
    const std::uint8_t* b = block + sizeof(float);
    for (std::size_t j = 0; j < full; ++j) {
      const float* sign = k_signs[b[j]].data();
      float* out = g + 8 * j;
      for (int k = 0; k < 8; ++k) out[k] += sign[k] * s;
    }
    for (std::size_t i = 8 * full; i < n; ++i) g[i] += ((b[full] >> (i - 8 * full)) & 1) ? s : -s;
  }
}

}  // namespace tune::trainer
