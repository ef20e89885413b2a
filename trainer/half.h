// IEEE binary16 ("half") conversion and summation for the fp16 wire format: round to nearest
// even, overflow to infinity, subnormals kept, NaN stays NaN. Vectorised with F16C (8 lanes) where
// the CPU has it, chosen once at run time; the scalar versions serve other CPUs and vector tails
// and are the reference the tests compare against. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tune::trainer {

void float_to_half(const float* in, std::uint16_t* out, std::size_t n);
void half_to_float(const std::uint16_t* in, float* out, std::size_t n);
// dst[i] = half(float(dst[i]) + float(src[i])): accumulate in float, round once, as NCCL does.
void add_half(std::uint16_t* dst, const std::uint16_t* src, std::size_t n);
std::uint16_t half_from_float_scalar(float f);
float half_to_float_scalar(std::uint16_t h);

}  // namespace tune::trainer
