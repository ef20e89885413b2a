#include "trainer/half.h"

#include <immintrin.h>

#include <bit>

namespace tune::trainer {

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

}  // namespace

void float_to_half(const float* in, std::uint16_t* out, std::size_t n) {
  if (k_has_f16c) return to_half_f16c(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = half_from_float_scalar(in[i]);
}

void half_to_float(const std::uint16_t* in, float* out, std::size_t n) {
  if (k_has_f16c) return from_half_f16c(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float_scalar(in[i]);
}

void add_half(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  if (k_has_f16c) return add_half_f16c(dst, src, n);
  for (std::size_t i = 0; i < n; ++i)
    dst[i] = half_from_float_scalar(half_to_float_scalar(dst[i]) + half_to_float_scalar(src[i]));
}

}  // namespace tune::trainer
