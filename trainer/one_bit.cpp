#include "trainer/one_bit.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace tune::trainer {
namespace {

const bool k_has_avx2 = __builtin_cpu_supports("avx2");

float scale_of(const std::uint8_t* block) {
  float s = 0;
  std::memcpy(&s, block, sizeof s);
  return s;
}

// The scalar reference of pass 1 from element `from` on, adding into the lanes.
void sum_abs_scalar(const float* g, float* residual, std::size_t from, std::size_t n,
                    double lane[k_one_bit_lanes]) {
  for (std::size_t i = from; i < n; ++i) {
    residual[i] += g[i];
    lane[i % k_one_bit_lanes] += std::fabs(residual[i]);
  }
}

// The scalar reference of pass 2 from element `from` (a multiple of 8) on.
void pack_scalar(float* residual, std::size_t from, std::size_t n, float scale,
                 std::uint8_t* bits) {
  for (std::size_t j = from / 8; 8 * j < n; ++j) {
    unsigned b = 0;
    for (std::size_t i = 8 * j; i < n && i < 8 * j + 8; ++i) {
      const bool positive = residual[i] >= 0.f;
      b |= unsigned(positive) << (i - 8 * j);
      residual[i] -= positive ? scale : -scale;
    }
    bits[j] = static_cast<std::uint8_t>(b);
  }
}

// Adds scale_r * sign_r(i) for elements [from, n) of every rank, rank by rank per element.
void decode_scalar(const std::uint8_t* in, int ranks, float* out, std::size_t from, std::size_t n) {
  const std::size_t stride = one_bit_bytes(n);
  for (std::size_t i = from; i < n; ++i) {
    float acc = 0.f;
    for (int r = 0; r < ranks; ++r) {
      const std::uint8_t* block = in + std::size_t(r) * stride;
      const float s = scale_of(block);
      acc += ((block[sizeof(float) + i / 8] >> (i % 8)) & 1) ? s : -s;
    }
    out[i] = acc;
  }
}

// Pass 1, 16 elements a step: accumulator q holds lanes 4q..4q+3, so lane k sums the elements
// = k mod 16 in ascending order, exactly the scalar order, in four independent add chains (one
// chain was bound by the add latency, about a cycle an element).
__attribute__((target("avx2"))) std::size_t sum_abs_avx2(const float* g, float* residual,
                                                         std::size_t n,
                                                         double lane[k_one_bit_lanes]) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                    _mm256_setzero_pd()};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int h = 0; h < 2; ++h) {
      float* r = residual + i + 8 * h;
      const __m256 v = _mm256_add_ps(_mm256_loadu_ps(r), _mm256_loadu_ps(g + i + 8 * h));
      _mm256_storeu_ps(r, v);
      const __m256 a = _mm256_and_ps(v, abs_mask);
      acc[2 * h] = _mm256_add_pd(acc[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
      acc[2 * h + 1] = _mm256_add_pd(acc[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
    }
  }
  for (int q = 0; q < 4; ++q) _mm256_storeu_pd(lane + 4 * q, acc[q]);
  return i;
}

// Pass 2, 8 lanes: one byte of signs and 8 residuals per step.
__attribute__((target("avx2"))) std::size_t pack_avx2(float* residual, std::size_t n, float scale,
                                                      std::uint8_t* bits) {
  const __m256 zero = _mm256_setzero_ps(), plus = _mm256_set1_ps(scale),
               minus = _mm256_set1_ps(-scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(residual + i);
    const __m256 positive = _mm256_cmp_ps(v, zero, _CMP_GE_OQ);
    bits[i / 8] = static_cast<std::uint8_t>(_mm256_movemask_ps(positive));
    _mm256_storeu_ps(residual + i, _mm256_sub_ps(v, _mm256_blendv_ps(minus, plus, positive)));
  }
  return i;
}

// The decode, 8 lanes: each byte of each rank becomes a lane mask selecting +scale or -scale.
__attribute__((target("avx2"))) std::size_t decode_avx2(const std::uint8_t* in, int ranks,
                                                        float* out, std::size_t n) {
  const std::size_t stride = one_bit_bytes(n);
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int r = 0; r < ranks; ++r) {
      const std::uint8_t* block = in + std::size_t(r) * stride;
      const __m256 s = _mm256_set1_ps(scale_of(block));
      const __m256i b = _mm256_set1_epi32(block[sizeof(float) + i / 8]);
      const __m256 set =
          _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(b, lane_bit), lane_bit));
      acc = _mm256_add_ps(acc, _mm256_blendv_ps(_mm256_sub_ps(_mm256_setzero_ps(), s), s, set));
    }
    _mm256_storeu_ps(out + i, acc);
  }
  return i;
}

// Lane 2j + lane 2j+1 into lane j, until one is left.
double sum_lanes(double lane[k_one_bit_lanes]) {
  for (std::size_t width = k_one_bit_lanes / 2; width >= 1; width /= 2)
    for (std::size_t j = 0; j < width; ++j) lane[j] = lane[2 * j] + lane[2 * j + 1];
  return lane[0];
}

}  // namespace

void one_bit_encode(const float* g, float* residual, std::size_t n, std::uint8_t* out) {
  double lane[k_one_bit_lanes] = {};
  const std::size_t done = k_has_avx2 ? sum_abs_avx2(g, residual, n, lane) : 0;
  sum_abs_scalar(g, residual, done, n, lane);
  const double abs_sum = sum_lanes(lane);
  const float scale = n > 0 ? static_cast<float>(abs_sum / double(n)) : 0.f;
  std::memcpy(out, &scale, sizeof scale);
  std::uint8_t* bits = out + sizeof(float);
  const std::size_t packed = k_has_avx2 ? pack_avx2(residual, n, scale, bits) : 0;
  pack_scalar(residual, packed, n, scale, bits);
}

void one_bit_decode(const std::uint8_t* in, int ranks, float* out, std::size_t n) {
  const std::size_t done = k_has_avx2 ? decode_avx2(in, ranks, out, n) : 0;
  decode_scalar(in, ranks, out, done, n);
}

}  // namespace tune::trainer
