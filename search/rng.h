// A portable random source for samplers (xoshiro256**: the same draws with any standard
// library) and TrialStreams, fresh engines derived from (seed, trial number, what is drawn).
// Not thread-safe: a Rng is owned by one caller; TrialStreams is immutable.
// Design: docs/design-notes.md#searchrngh
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <random>
#include <string_view>

namespace tune::search {

// 64 bits from the OS, for unseeded samplers.
inline std::uint64_t entropy_seed() {
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}

// splitmix64's output function: a bijection on 64-bit words whose outputs for neighbouring
// inputs look independent, so mixing in a trial number keeps distinct numbers distinct.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// FNV-1a over the bytes: a portable key for parameter names and stream purposes.
constexpr std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

class Rng {
 public:
  // No seed: one from the OS, so unseeded uses differ run to run.
  explicit Rng(std::optional<std::uint64_t> seed = std::nullopt) {
    this->seed(seed ? *seed : entropy_seed());
  }

  // The state is four consecutive outputs of splitmix64 from s, as xoshiro's authors advise;
  // never all zero, since splitmix64 is a bijection.
  void seed(std::uint64_t s) {
    for (std::uint64_t& word : m_state) {
      word = splitmix64(s);
      s += 0x9E3779B97F4A7C15ULL;
    }
    m_has_spare = false;
  }

  std::uint64_t next_u64() {
    const std::uint64_t result = std::rotl(m_state[1] * 5, 7) * 9;
    const std::uint64_t t = m_state[1] << 17;
    m_state[2] ^= m_state[0];
    m_state[3] ^= m_state[1];
    m_state[1] ^= m_state[2];
    m_state[0] ^= m_state[3];
    m_state[2] ^= t;
    m_state[3] = std::rotl(m_state[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }

  // Uniform integer in [0, n) without modulo bias (Lemire's method); n > 0.
  std::uint64_t below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next_u64()) * n;
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
  std::uint64_t m_state[4] = {};
  double m_spare = 0.0;
  bool m_has_spare = false;
};

// The random streams of one sampler: stream(number, key) is a function of the study seed, the
// sampler's purpose, the trial number and the key (a parameter name, or the names of a joint
// space) alone. A sampler asks for its stream inside each call instead of keeping an engine, so
// a suggestion depends on (seed, history, trial number) only: the same in a fresh run, after
// any number of resumes and in any worker. Unseeded, the base comes from the OS once, at
// construction, so each process explores on its own.
class TrialStreams {
 public:
  // purpose tells apart the streams of different uses under one seed (e.g. TPE's startup draws
  // and its candidate draws); seed: the study's, or none for one from the OS.
  TrialStreams(std::optional<std::uint64_t> seed, std::string_view purpose)
      : m_base(splitmix64(splitmix64(seed ? *seed : entropy_seed()) ^ fnv1a(purpose))) {}

  // The engine of trial `number` for `key`; each call starts the same stream afresh.
  Rng stream(std::int64_t number, std::string_view key = {}) const {
    const std::uint64_t s =
        splitmix64(splitmix64(m_base ^ static_cast<std::uint64_t>(number)) ^ fnv1a(key));
    return Rng(s);
  }

  // A key for a fixed per-study choice (e.g. the grid's visiting order): the seed alone.
  std::uint64_t base() const { return m_base; }

 private:
  std::uint64_t m_base;
};

}  // namespace tune::search
