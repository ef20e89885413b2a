// The arithmetic of 1-bit gradient compression with error feedback (Seide et al. 2014), with
// AVX2 where the CPU has it. Pure functions on caller-owned buffers; thread-safe.
// Design: docs/design-notes.md#trainerone_bith
#pragma once

#include <cstddef>
#include <cstdint>

namespace tune::trainer {

// Bytes one rank sends for a bucket of n elements.
inline std::size_t one_bit_bytes(std::size_t n) { return sizeof(float) + (n + 7) / 8; }

// Lanes of the scale's sum: element i of a bucket goes into lane i % k_one_bit_lanes.
inline constexpr std::size_t k_one_bit_lanes = 16;

// v = g + residual; scale = mean |v| (summed in double, element i into lane i % 16, then lane
// 2j + (2j+1) into j until one is left: an order fixed by the code, not by the vector width, that
// the tests recompute bit for bit); out gets scale and sign(v), and
// residual becomes v - scale * sign(v) (sign(0) = +), so what compression drops is sent later.
// Pass 1 writes v into residual while summing |v|; pass 2 packs the bits and writes the residual.
void one_bit_encode(const float* g, float* residual, std::size_t n, std::uint8_t* out);

// out[i] = sum over the ranks r (in rank order) of scale_r * sign_r(i), from `ranks` encoded
// buckets of n elements laid out one_bit_bytes(n) apart in `in`. One pass over out.
void one_bit_decode(const std::uint8_t* in, int ranks, float* out, std::size_t n);

}  // namespace tune::trainer
