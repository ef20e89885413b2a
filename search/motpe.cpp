#include "search/motpe.h"

#include <algorithm>
#include <numeric>

namespace tune::search::detail {
namespace {

constexpr double k_eps = 1e-12;  // Optuna's EPS

Losses rows_of(const Losses& losses, std::span<const std::size_t> idx) {
  Losses out;
  out.reserve(idx.size());
  for (std::size_t i : idx) out.push_back(losses[i]);
  return out;
}

// The split without constraints: whole fronts while they fit, then the best subset of the next.
std::vector<std::size_t> pick_below(const Losses& losses, std::size_t n_below) {
  const auto ranks = nondomination_ranks(losses, n_below);
  std::vector<std::size_t> below;
  for (int rank = 0; below.size() < n_below; ++rank) {
    std::vector<std::size_t> front;
    for (std::size_t i = 0; i < losses.size(); ++i) {
      if (ranks[i] == rank) front.push_back(i);
    }
    if (front.empty()) break;
    if (below.size() + front.size() <= n_below) {
      below.insert(below.end(), front.begin(), front.end());
      continue;
    }
    const Losses rows = rows_of(losses, front);
    for (std::size_t k : select_by_hypervolume(rows, n_below - below.size(), reference_point(rows)))
      below.push_back(front[k]);
  }
  return below;
}

}  // namespace

void split_multi_objective(const Losses& losses, std::size_t n_below,
                           std::span<const double> violations, std::vector<std::size_t>& below,
                           std::vector<std::size_t>& above) {
  const std::size_t n = losses.size();
  n_below = std::min(n_below, n);
  below.clear();
  if (!violations.empty()) {
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::ranges::stable_sort(idx, {}, [&](std::size_t i) { return violations[i]; });
    if (n_below == n || violations[idx[n_below]] > 0.0) {
      below.assign(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n_below));
    } else {
      std::vector<std::size_t> feasible;
      for (std::size_t i = 0; i < n; ++i) {
        if (violations[i] == 0.0) feasible.push_back(i);
      }
      for (std::size_t k : pick_below(rows_of(losses, feasible), n_below))
        below.push_back(feasible[k]);
    }
  } else {
    below = pick_below(losses, n_below);
  }
  std::ranges::sort(below);
  std::vector<bool> is_below(n, false);
  for (std::size_t i : below) is_below[i] = true;
  above.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_below[i]) above.push_back(i);
  }
}

std::vector<double> below_weights(const Losses& losses, std::span<const std::size_t> below,
                                  std::span<const double> violations) {
  std::vector<std::size_t> feasible;
  for (std::size_t k = 0; k < below.size(); ++k) {
    if (violations.empty() || violations[below[k]] == 0.0) feasible.push_back(k);
  }
  std::vector<double> weights(below.size(), k_eps);
  if (feasible.size() == 1) weights[feasible[0]] = 1.0;
  if (feasible.size() < 2) return weights;
  Losses rows;
  for (std::size_t k : feasible) rows.push_back(losses[below[k]]);
  auto contributions = hypervolume_contributions(rows, reference_point(rows));
  for (double& c : contributions) c += k_eps;
  const double top = *std::ranges::max_element(contributions);
  for (std::size_t j = 0; j < feasible.size(); ++j) {
    weights[feasible[j]] = std::clamp(contributions[j] / top, 0.0, 1.0);
  }
  return weights;
}

}  // namespace tune::search::detail
