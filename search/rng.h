// A portable random source for samplers: std::mt19937_64 is specified bit for bit by the C++
// standard, but the std:: distributions are not, so the transforms to uniform and normal
// variates are written here. The same seed gives the same suggestions with any compiler or
// standard library. Not thread-safe; each sampler owns one.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <random>

namespace tune::search {

class Rng {
 public:
  // No seed: one from the OS (std::random_device), so unseeded studies differ run to run.
  explicit Rng(std::optional<std::uint64_t> seed = std::nullopt)
      : m_engine(seed ? *seed
                      : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {}

  void seed(std::uint64_t s) {
    m_engine.seed(s);
    m_has_spare = false;
  }
  std::uint64_t next_u64() { return m_engine(); }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(m_engine() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }

  // Uniform integer in [0, n) without modulo bias (Lemire's method); n > 0.
  std::uint64_t below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(m_engine()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(m_engine()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  // Standard normal by the Box-Muller transform (pairs, the second one kept for the next call).
  double normal() {
    if (m_has_spare) {
      m_has_spare = false;
      return m_spare;
    }
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    m_spare = r * std::sin(2.0 * std::numbers::pi * u2);
    m_has_spare = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 m_engine;
  double m_spare = 0.0;
  bool m_has_spare = false;
};

}  // namespace tune::search
