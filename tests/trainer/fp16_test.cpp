// IEEE half conversion: the run-time-dispatched (F16C) path and the portable scalar path agree
// with the compiler's _Float16 on every half value and on random floats, including rounding
// ties, overflow, subnormals and NaN.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "trainer/allreduce.h"

namespace tune::trainer {
namespace {

std::uint16_t reference_half(float f) {
  return std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
}

bool same_half(std::uint16_t a, std::uint16_t b) {
  const bool a_nan = (a & 0x7c00) == 0x7c00 && (a & 0x3ff),
             b_nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
  return a_nan || b_nan ? a_nan == b_nan : a == b;
}

TEST(Fp16, KnownValues) {
  struct Case {
    float f;
    std::uint16_t h;
  };
  const Case cases[] = {{0.f, 0x0000},
                        {-0.f, 0x8000},
                        {1.f, 0x3c00},
                        {-2.f, 0xc000},
                        {65504.f, 0x7bff},
                        {65519.f, 0x7bff},
                        {65520.f, 0x7c00},
                        {1e9f, 0x7c00},
                        {0x1p-24f, 0x0001},
                        {0x1p-25f, 0x0000},
                        {0x1.8p-25f, 0x0001},
                        {0x1p-14f, 0x0400},
                        {1.f + 0x1p-11f, 0x3c00},
                        {1.f + 0x3p-11f, 0x3c02},
                        {std::numeric_limits<float>::infinity(), 0x7c00}};
  for (const Case& c : cases) {
    std::uint16_t vec = 0;
    float_to_half(&c.f, &vec, 1);
    EXPECT_EQ(half_from_float_scalar(c.f), c.h) << c.f;
    EXPECT_EQ(vec, c.h) << c.f;
  }
  EXPECT_TRUE(std::isnan(half_to_float_scalar(half_from_float_scalar(std::nanf("")))));
}

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  std::vector<std::uint16_t> all(65536), back(65536);
  std::vector<float> wide(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  half_to_float(all.data(), wide.data(), all.size());
  float_to_half(wide.data(), back.data(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const float ref = static_cast<float>(std::bit_cast<_Float16>(all[i]));
    const float scalar = half_to_float_scalar(all[i]);
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(wide[i]) && std::isnan(scalar)) << i;
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(wide[i]), std::bit_cast<std::uint32_t>(ref)) << i;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(scalar), std::bit_cast<std::uint32_t>(ref)) << i;
    ASSERT_EQ(back[i], all[i]) << i;
    ASSERT_EQ(half_from_float_scalar(ref), all[i]) << i;
  }
}

TEST(Fp16, RandomFloatsRoundLikeTheCompiler) {
  std::mt19937 rng(5);
  std::vector<float> in(100003);
  for (auto& f : in) {
    // Random bit patterns cover every exponent (subnormal halves, overflow, NaN) uniformly.
    f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
  }
  std::vector<std::uint16_t> out(in.size());
  float_to_half(in.data(), out.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(same_half(out[i], reference_half(in[i]))) << std::hexfloat << in[i];
    ASSERT_TRUE(same_half(half_from_float_scalar(in[i]), reference_half(in[i])))
        << std::hexfloat << in[i];
  }
}

}  // namespace
}  // namespace tune::trainer
