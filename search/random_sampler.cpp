#include "search/random_sampler.h"

#include <algorithm>
#include <cmath>

namespace tune::search {
namespace {

class RandomSampler final : public Sampler {
 public:
  explicit RandomSampler(std::optional<std::uint64_t> seed) : m_streams(seed, "random") {}

  SearchSpace infer_relative_search_space(const StudyView&, const FrozenTrial&) override {
    return {};
  }
  std::map<std::string, double> sample_relative(const StudyView&, const FrozenTrial&,
                                                const SearchSpace&) override {
    return {};
  }
  // One stream per (trial number, parameter): the draw does not depend on which other
  // parameters were drawn before it, nor on what this object drew for earlier trials.
  double sample_independent(const StudyView&, const FrozenTrial& trial, const std::string& name,
                            const Distribution& dist) override {
    Rng rng = m_streams.stream(trial.number, name);
    return sample_uniform(rng, dist);
  }

 private:
  TrialStreams m_streams;
};

}  // namespace

double sample_uniform(Rng& rng, const Distribution& dist) {
  return std::visit(
      Overloaded{
          [&](const FloatDistribution& d) {
            if (d.log) {
              const double v = std::exp(rng.uniform(std::log(d.low), std::log(d.high)));
              return std::clamp(v, d.low, d.high);
            }
            if (d.step) {
              // Every grid point equally likely, as Optuna's widened-then-rounded draw gives.
              const auto n =
                  static_cast<std::uint64_t>(std::floor((d.high - d.low) / *d.step + 1e-8));
              return std::min(d.low + static_cast<double>(rng.below(n + 1)) * *d.step, d.high);
            }
            return std::min(rng.uniform(d.low, d.high), d.high);
          },
          [&](const IntDistribution& d) {
            if (d.log) {
              // Log-uniform over [low - 0.5, high + 0.5], rounded: each integer gets the mass of
              // its own log-interval, as Optuna's transform does.
              const double v = std::exp(rng.uniform(std::log(d.low - 0.5), std::log(d.high + 0.5)));
              return std::clamp(std::round(v), static_cast<double>(d.low),
                                static_cast<double>(d.high));
            }
            const auto n = static_cast<std::uint64_t>((d.high - d.low) / d.step);
            return static_cast<double>(d.low +
                                       static_cast<std::int64_t>(rng.below(n + 1)) * d.step);
          },
          [&](const CategoricalDistribution& d) {
            return static_cast<double>(rng.below(d.choices.size()));
          },
      },
      dist);
}

std::unique_ptr<Sampler> make_random_sampler(std::optional<std::uint64_t> seed) {
  return std::make_unique<RandomSampler>(seed);
}

}  // namespace tune::search
