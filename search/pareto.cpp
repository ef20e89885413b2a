#include "search/pareto.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tune::search {
namespace {

constexpr double k_eps = 1e-12;  // Optuna's EPS

// Points strictly inside the reference box; the others bound no volume.
Losses inside(const Losses& points, std::span<const double> reference) {
  Losses out;
  out.reserve(points.size());
  for (const auto& p : points) {
    bool in = true;
    for (std::size_t d = 0; d < reference.size() && in; ++d) in = p[d] < reference[d];
    if (in) out.push_back(p);
  }
  return out;
}

double hypervolume_2d(Losses points, std::span<const double> reference) {
  std::sort(points.begin(), points.end());
  double volume = 0.0;
  double floor = reference[1];  // the lowest second coordinate swept so far
  for (const auto& p : points) {
    if (p[1] >= floor) continue;  // dominated by a point already swept
    volume += (reference[0] - p[0]) * (floor - p[1]);
    floor = p[1];
  }
  return volume;
}

// The points no other dominates (duplicates kept once).
Losses nondominated(const Losses& points) {
  Losses out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool beaten = false;
    for (std::size_t j = 0; j < points.size() && !beaten; ++j) {
      beaten = j != i && (dominates(points[j], points[i]) || (j < i && points[j] == points[i]));
    }
    if (!beaten) out.push_back(points[i]);
  }
  return out;
}

// WFG: the volume is the sum of each point's exclusive part against the points after it, and that
// part is its box less the volume of those points limited to its box.
double hypervolume_wfg(Losses points, std::span<const double> reference) {
  if (points.empty()) return 0.0;
  if (reference.size() == 2) return hypervolume_2d(std::move(points), reference);
  // Sorted on the last coordinate, the limited sets stay small.
  std::sort(points.begin(), points.end(),
            [](const auto& a, const auto& b) { return a.back() < b.back(); });
  double volume = 0.0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    double box = 1.0;
    for (std::size_t d = 0; d < reference.size(); ++d) box *= reference[d] - points[i][d];
    Losses limited;
    limited.reserve(points.size() - i - 1);
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      std::vector<double> q(points[j].size());
      for (std::size_t d = 0; d < q.size(); ++d) q[d] = std::max(points[i][d], points[j][d]);
      limited.push_back(std::move(q));
    }
    volume += box - hypervolume_wfg(nondominated(limited), reference);
  }
  return volume;
}

}  // namespace

std::vector<double> to_losses(std::span<const double> values,
                              std::span<const Direction> directions) {
  std::vector<double> out(values.begin(), values.end());
  for (std::size_t d = 0; d < out.size() && d < directions.size(); ++d) {
    if (directions[d] == Direction::maximize) out[d] = -out[d];
  }
  return out;
}

bool dominates(std::span<const double> a, std::span<const double> b) {
  bool better = false;
  for (std::size_t d = 0; d < a.size(); ++d) {
    if (a[d] > b[d]) return false;
    if (a[d] < b[d]) better = true;
  }
  return better;
}

std::vector<int> nondomination_ranks(const Losses& points, std::size_t enough) {
  const std::size_t n = points.size();
  std::vector<int> ranks(n, std::numeric_limits<int>::max());
  std::vector<std::size_t> unranked(n);
  std::iota(unranked.begin(), unranked.end(), std::size_t{0});
  std::size_t ranked = 0;
  for (int rank = 0; !unranked.empty() && ranked < enough; ++rank) {
    std::vector<std::size_t> front, rest;
    for (std::size_t i : unranked) {
      const bool beaten = std::ranges::any_of(
          unranked, [&](std::size_t j) { return dominates(points[j], points[i]); });
      (beaten ? rest : front).push_back(i);
    }
    for (std::size_t i : front) ranks[i] = rank;
    ranked += front.size();
    unranked = std::move(rest);
  }
  return ranks;
}

double hypervolume(const Losses& points, std::span<const double> reference) {
  if (reference.empty()) return 0.0;
  return hypervolume_wfg(nondominated(inside(points, reference)), reference);
}

std::vector<double> reference_point(const Losses& points) {
  if (points.empty()) return {};
  std::vector<double> ref(points.front().size(), -HUGE_VAL);
  for (const auto& p : points) {
    for (std::size_t d = 0; d < ref.size(); ++d) ref[d] = std::max(ref[d], p[d]);
  }
  for (double& r : ref) {
    r = std::max(1.1 * r, 0.9 * r);
    if (r == 0.0) r = k_eps;
  }
  return ref;
}

std::vector<double> hypervolume_contributions(const Losses& points,
                                              std::span<const double> reference) {
  const double all = hypervolume(points, reference);
  std::vector<double> out(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    Losses others = points;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    out[i] = all - hypervolume(others, reference);
  }
  return out;
}

std::vector<std::size_t> select_by_hypervolume(const Losses& points, std::size_t k,
                                               std::span<const double> reference) {
  std::vector<std::size_t> chosen;
  std::vector<bool> taken(points.size(), false);
  Losses selected;
  double selected_volume = 0.0;
  while (chosen.size() < std::min(k, points.size())) {
    std::size_t best = points.size();
    double best_gain = -HUGE_VAL;
    double best_volume = 0.0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (taken[i]) continue;
      selected.push_back(points[i]);
      const double volume = hypervolume(selected, reference);
      selected.pop_back();
      if (volume - selected_volume > best_gain) {
        best_gain = volume - selected_volume;
        best_volume = volume;
        best = i;
      }
    }
    taken[best] = true;
    chosen.push_back(best);
    selected.push_back(points[best]);
    selected_volume = best_volume;
  }
  return chosen;
}

std::vector<double> objective_values(const FrozenTrial& trial) {
  if (!trial.values.empty()) return trial.values;
  if (trial.value) return {*trial.value};
  return {};
}

std::vector<const FrozenTrial*> pareto_front(std::span<const FrozenTrial* const> trials,
                                             std::span<const Direction> directions) {
  std::vector<const FrozenTrial*> usable;
  Losses losses;
  for (const FrozenTrial* t : trials) {
    const auto values = objective_values(*t);
    if (values.size() != directions.size()) continue;
    usable.push_back(t);
    losses.push_back(to_losses(values, directions));
  }
  const auto ranks = nondomination_ranks(losses, 1);
  std::vector<const FrozenTrial*> front;
  for (std::size_t i = 0; i < usable.size(); ++i) {
    if (ranks[i] == 0) front.push_back(usable[i]);
  }
  std::ranges::stable_sort(front, {}, &FrozenTrial::number);
  return front;
}

std::vector<const FrozenTrial*> best_trials(const StudyView& study) {
  std::vector<const FrozenTrial*> complete;
  for (const auto& t : study.trials()) {
    if (t.state == TrialState::complete) complete.push_back(&t);
  }
  const auto directions = study.directions();
  return pareto_front(complete, directions);
}

}  // namespace tune::search
