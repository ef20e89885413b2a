#include "search/grid_sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "search/random_sampler.h"
#include "search/rng.h"

namespace tune::search {
namespace {

// More points than this is a study that cannot finish; the study file should list values.
constexpr std::size_t k_max_grid_points = 10'000'000;
constexpr const char* k_grid_attr = "grid_id";

std::expected<std::vector<double>, std::string> derive_axis(const std::string& name,
                                                            const Distribution& dist) {
  return std::visit(
      Overloaded{
          [&](const FloatDistribution& d) -> std::expected<std::vector<double>, std::string> {
            if (!d.step) {
              return std::unexpected(fmt::format(
                  "sampler.search_space: parameter '{}' is continuous; give it a step or list its "
                  "values under sampler.search_space.{}",
                  name, name));
            }
            std::vector<double> axis;
            for (double k = 0;; ++k) {
              const double v = d.low + k * *d.step;
              if (v > d.high + 1e-8 * *d.step || axis.size() > k_max_grid_points) break;
              axis.push_back(std::min(v, d.high));
            }
            return axis;
          },
          [&](const IntDistribution& d) -> std::expected<std::vector<double>, std::string> {
            std::vector<double> axis;
            for (std::int64_t v = d.low; v <= d.high && axis.size() <= k_max_grid_points;
                 v += d.step) {
              axis.push_back(static_cast<double>(v));
            }
            return axis;
          },
          [&](const CategoricalDistribution& d) -> std::expected<std::vector<double>, std::string> {
            std::vector<double> axis;
            for (std::size_t i = 0; i < d.choices.size(); ++i)
              axis.push_back(static_cast<double>(i));
            return axis;
          },
      },
      dist);
}

// A keyed bijection of [0, n): a 4-round Feistel network on the smallest even number of bits
// that holds n, walked along its cycle until the image falls below n. O(1) memory, so a grid of
// millions of points gets a random order without a table of them.
class Permutation {
 public:
  Permutation(std::uint64_t n, std::uint64_t key)
      : m_n(n), m_half_bits(std::max(1, (static_cast<int>(std::bit_width(n - 1)) + 1) / 2)) {
    m_mask = (std::uint64_t{1} << m_half_bits) - 1;
    for (auto& k : m_keys) k = key = splitmix64(key);
  }

  std::uint64_t operator()(std::uint64_t i) const {
    do {
      i = encrypt(i);
    } while (i >= m_n);
    return i;
  }

 private:
  std::uint64_t encrypt(std::uint64_t x) const {
    std::uint64_t left = x >> m_half_bits, right = x & m_mask;
    for (std::uint64_t k : m_keys) {
      const std::uint64_t next = left ^ (splitmix64(right ^ k) & m_mask);
      left = right;
      right = next;
    }
    return (left << m_half_bits) | right;
  }

  std::uint64_t m_n;
  int m_half_bits;
  std::uint64_t m_mask = 0;
  std::uint64_t m_keys[4] = {};
};

class GridSampler final : public Sampler {
 public:
  GridSampler(SearchSpace space, std::vector<std::vector<double>> axes, std::size_t n_points,
              std::optional<std::uint64_t> seed)
      : m_space(std::move(space)),
        m_axes(std::move(axes)),
        m_n_points(n_points),
        m_streams(seed, "grid"),
        m_order(n_points, m_streams.base()),
        m_fallback(make_random_sampler(seed)) {}

  SearchSpace infer_relative_search_space(const StudyView&, const FrozenTrial&) override {
    return m_space;
  }

  std::map<std::string, double> sample_relative(const StudyView&, const FrozenTrial& trial,
                                                const SearchSpace&) override {
    std::map<std::string, double> out;
    auto it = trial.system_attrs.find(k_grid_attr);
    if (it == trial.system_attrs.end() || !it->is_number_integer()) return out;
    std::size_t id = it->get<std::size_t>();
    // Mixed-radix decoding, last parameter fastest (itertools.product's order).
    for (std::size_t p = m_space.size(); p-- > 0;) {
      out[m_space[p].first] = m_axes[p][id % m_axes[p].size()];
      id /= m_axes[p].size();
    }
    return out;
  }

  double sample_independent(const StudyView& study, const FrozenTrial& trial,
                            const std::string& name, const Distribution& dist) override {
    // Only reached for enqueued trials that fix some parameters: the rest come from the grid's
    // values for that parameter when it has any.
    for (std::size_t p = 0; p < m_space.size(); ++p) {
      if (m_space[p].first == name) {
        Rng rng = m_streams.stream(trial.number, name);
        return m_axes[p][rng.below(m_axes[p].size())];
      }
    }
    return m_fallback->sample_independent(study, trial, name, dist);
  }

  void before_trial(const StudyView& study, FrozenTrial& trial) override {
    if (trial.system_attrs.contains(k_grid_attr) ||
        trial.system_attrs.contains(k_fixed_params_attr)) {
      return;
    }
    const auto [finished, running] = visited(study);
    // Trial n starts at position n of the seeded order: a sequential study walks the order
    // point by point, a resumed one carries on where it stopped, and workers that start
    // trials at the same moment (so that none sees the others' RUNNING trials yet) hold
    // different numbers and so start from different points (they can still meet where enqueued
    // trials took points out of order; whoever sees the other's trial then steps past it).
    const std::size_t start =
        trial.number < 0 ? 0 : static_cast<std::size_t>(trial.number) % m_n_points;
    std::size_t id = 0;
    if (finished.size() + running.size() < m_n_points) {
      id = next_free(start,
                     [&](std::size_t i) { return !finished.contains(i) && !running.contains(i); });
    } else if (finished.size() < m_n_points) {
      // Only points another worker is running now are left: share one of those.
      id = next_free(start, [&](std::size_t i) { return !finished.contains(i); });
    } else {
      id = m_order(start);
    }
    trial.system_attrs[k_grid_attr] = id;
  }

  bool exhausted(const StudyView& study) const override {
    const auto [finished, running] = visited(study);
    return finished.size() + running.size() >= m_n_points;
  }

 private:
  // Which grid points have finished and which are running (and not finished): by the trial's
  // grid_id, or, for enqueued trials, by parameters that land exactly on a grid point. Costs one
  // look per trial, never one per grid point, so huge grids stay cheap.
  std::pair<std::unordered_set<std::size_t>, std::unordered_set<std::size_t>> visited(
      const StudyView& study) const {
    std::unordered_set<std::size_t> finished, running;
    for (const auto& t : study.trials()) {
      if (t.state != TrialState::running && !t.is_finished()) continue;
      if (auto id = grid_id_of(t)) (t.is_finished() ? finished : running).insert(*id);
    }
    std::erase_if(running, [&](std::size_t id) { return finished.contains(id); });
    return {std::move(finished), std::move(running)};
  }

  // The first point in the seeded order, from position `start` on (wrapping round), for which
  // is_free() holds; the caller knows there is one.
  template <class IsFree>
  std::size_t next_free(std::size_t start, IsFree is_free) const {
    for (std::size_t k = 0; k < m_n_points; ++k) {
      std::size_t position = start + k;
      if (position >= m_n_points) position -= m_n_points;
      const auto id = static_cast<std::size_t>(m_order(position));
      if (is_free(id)) return id;
    }
    return static_cast<std::size_t>(m_order(start));
  }

  std::optional<std::size_t> grid_id_of(const FrozenTrial& t) const {
    if (auto it = t.system_attrs.find(k_grid_attr); it != t.system_attrs.end()) {
      if (it->is_number_integer() && it->get<std::size_t>() < m_n_points)
        return it->get<std::size_t>();
    }
    std::size_t id = 0;
    for (std::size_t p = 0; p < m_space.size(); ++p) {
      auto v = t.params.find(m_space[p].first);
      if (v == t.params.end()) return std::nullopt;
      std::optional<std::size_t> index;
      for (std::size_t i = 0; i < m_axes[p].size(); ++i) {
        if (m_axes[p][i] == v->second) index = i;
      }
      if (!index) return std::nullopt;
      id = id * m_axes[p].size() + *index;
    }
    return id;
  }

  SearchSpace m_space;
  std::vector<std::vector<double>> m_axes;  // internal values per parameter, in m_space order
  std::size_t m_n_points;
  TrialStreams m_streams;  // the order's key (seed alone), enqueued trials' draws per trial
  Permutation m_order;     // position -> grid point: the visiting order, the same in every worker
  std::unique_ptr<Sampler> m_fallback;
};

}  // namespace

std::expected<std::unique_ptr<Sampler>, std::string> make_grid_sampler(const nlohmann::json& config,
                                                                       const SearchSpace& space) {
  std::optional<std::uint64_t> seed;
  const nlohmann::json* listed = nullptr;
  for (const auto& [key, value] : config.items()) {
    if (key == "type") continue;
    if (key == "seed") {
      auto parsed = seed_from_json(value);
      if (!parsed) return std::unexpected(parsed.error());
      seed = *parsed;
    } else if (key == "search_space") {
      if (!value.is_object()) {
        return std::unexpected("sampler.search_space: must map parameter names to lists of values");
      }
      listed = &value;
    } else {
      return std::unexpected(fmt::format(
          "sampler.{}: unknown option for the grid sampler (known: seed, search_space)", key));
    }
  }
  if (listed) {
    for (const auto& [name, values] : listed->items()) {
      bool known = false;
      for (const auto& entry : space) known = known || entry.first == name;
      if (!known) {
        return std::unexpected(
            fmt::format("sampler.search_space.{}: not a parameter of the study", name));
      }
    }
  }
  std::vector<std::vector<double>> axes;
  std::size_t n_points = 1;
  for (const auto& [name, dist] : space) {
    std::vector<double> axis;
    if (listed && listed->contains(name)) {
      const auto& values = (*listed)[name];
      if (!values.is_array() || values.empty()) {
        return std::unexpected(
            fmt::format("sampler.search_space.{}: must be a non-empty list of values", name));
      }
      for (const auto& v : values) {
        auto internal = to_internal(dist, param_value_from_json(v));
        if (!internal) {
          return std::unexpected(
              fmt::format("sampler.search_space.{}: {}", name, internal.error()));
        }
        axis.push_back(*internal);
      }
    } else {
      auto derived = derive_axis(name, dist);
      if (!derived) return std::unexpected(derived.error());
      axis = std::move(*derived);
    }
    n_points *= axis.size();
    if (n_points > k_max_grid_points) {
      return std::unexpected(
          fmt::format("sampler: the grid has more than {} points; list fewer values under "
                      "sampler.search_space",
                      k_max_grid_points));
    }
    axes.push_back(std::move(axis));
  }
  return std::make_unique<GridSampler>(space, std::move(axes), n_points, seed);
}

}  // namespace tune::search
