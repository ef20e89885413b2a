// fANOVA importance as Optuna 3.1's FanovaImportanceEvaluator: a random forest (scikit-learn's
// RandomForestRegressor defaults: bootstrap, all features tried at every split, MSE criterion,
// thresholds halfway between neighbouring values) on the raw internal values with categorical
// parameters one-hot encoded; then per tree the variance of the marginal prediction of each
// parameter (its encoded columns together) over the tree's split cells, as a fraction of the
// tree's total variance, averaged over trees and normalised to sum to one.
#include "search/importance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>

#include <fmt/format.h>

#include "search/rng.h"

namespace tune::search {
namespace {

struct Tree {
  std::vector<int> feature;  // -1 for a leaf
  std::vector<double> threshold;
  std::vector<int> left, right;
  std::vector<double> value;
};

class TreeBuilder {
 public:
  TreeBuilder(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
              int max_depth, Rng& rng)
      : m_x(x), m_y(y), m_max_depth(max_depth), m_rng(rng) {}

  Tree build(std::vector<std::size_t> samples) {
    grow(samples, 0);
    return std::move(m_tree);
  }

 private:
  int grow(std::vector<std::size_t>& samples, int depth) {
    const int node = static_cast<int>(m_tree.feature.size());
    double mean = 0.0;
    for (auto i : samples) mean += m_y[i];
    mean /= static_cast<double>(samples.size());
    m_tree.feature.push_back(-1);
    m_tree.threshold.push_back(0.0);
    m_tree.left.push_back(-1);
    m_tree.right.push_back(-1);
    m_tree.value.push_back(mean);
    double sse = 0.0;
    for (auto i : samples) sse += (m_y[i] - mean) * (m_y[i] - mean);
    if (samples.size() < 2 || depth >= m_max_depth || sse <= 1e-12 * (1.0 + mean * mean)) {
      return node;
    }
    // Best split over every feature, visited in a random order (ties go to the first found).
    const std::size_t n_features = m_x[0].size();
    std::vector<std::size_t> features(n_features);
    std::iota(features.begin(), features.end(), std::size_t{0});
    for (std::size_t i = n_features; i > 1; --i)
      std::swap(features[i - 1], features[m_rng.below(i)]);
    const double total = mean * static_cast<double>(samples.size());
    double best_gain = 1e-12 * (sse + 1e-300);
    int best_feature = -1;
    double best_threshold = 0.0;
    std::vector<std::size_t> order(samples);
    for (std::size_t f : features) {
      std::sort(order.begin(), order.end(),
                [&](std::size_t a, std::size_t b) { return m_x[a][f] < m_x[b][f]; });
      double left_sum = 0.0;
      const auto n = static_cast<double>(order.size());
      for (std::size_t k = 0; k + 1 < order.size(); ++k) {
        left_sum += m_y[order[k]];
        const double xv = m_x[order[k]][f], next = m_x[order[k + 1]][f];
        if (!(xv < next)) continue;
        const auto nl = static_cast<double>(k + 1);
        const double right_sum = total - left_sum;
        // SSE reduction = nl*ml^2 + nr*mr^2 - n*m^2.
        const double gain =
            left_sum * left_sum / nl + right_sum * right_sum / (n - nl) - total * total / n;
        if (gain > best_gain) {
          best_gain = gain;
          best_feature = static_cast<int>(f);
          best_threshold = 0.5 * (xv + next);
          if (best_threshold >= next) best_threshold = xv;
        }
      }
    }
    if (best_feature < 0) return node;
    std::vector<std::size_t> left, right;
    for (auto i : samples) {
      (m_x[i][static_cast<std::size_t>(best_feature)] <= best_threshold ? left : right)
          .push_back(i);
    }
    samples.clear();
    samples.shrink_to_fit();
    m_tree.feature[static_cast<std::size_t>(node)] = best_feature;
    m_tree.threshold[static_cast<std::size_t>(node)] = best_threshold;
    const int l = grow(left, depth + 1);
    m_tree.left[static_cast<std::size_t>(node)] = l;
    const int r = grow(right, depth + 1);
    m_tree.right[static_cast<std::size_t>(node)] = r;
    return node;
  }

  const std::vector<std::vector<double>>& m_x;
  const std::vector<double>& m_y;
  int m_max_depth;
  Rng& m_rng;
  Tree m_tree;
};

using Box = std::vector<std::pair<double, double>>;

double cardinality(const Box& box) {
  double c = 1.0;
  for (const auto& [lo, hi] : box) c *= hi - lo;
  return c;
}

// Optuna's _FanovaTree: node statistics (value, volume), split cells per feature, marginal
// variance of a feature set.
class FanovaTree {
 public:
  FanovaTree(Tree tree, const Box& bounds) : m_tree(std::move(tree)), m_bounds(bounds) {
    const std::size_t n_nodes = m_tree.feature.size();
    const std::size_t n_features = bounds.size();
    m_value.assign(n_nodes, 0.0);
    m_weight.assign(n_nodes, 0.0);
    std::vector<Box> boxes(n_nodes);
    boxes[0] = bounds;
    for (std::size_t node = 0; node < n_nodes; ++node) {
      if (m_tree.feature[node] < 0) {
        m_value[node] = m_tree.value[node];
        m_weight[node] = cardinality(boxes[node]);
      } else {
        const auto f = static_cast<std::size_t>(m_tree.feature[node]);
        Box l = boxes[node], r = boxes[node];
        l[f].second = m_tree.threshold[node];
        r[f].first = m_tree.threshold[node];
        boxes[static_cast<std::size_t>(m_tree.left[node])] = std::move(l);
        boxes[static_cast<std::size_t>(m_tree.right[node])] = std::move(r);
      }
    }
    m_active.assign(n_nodes, std::vector<bool>(n_features, false));
    for (std::size_t node = n_nodes; node-- > 0;) {
      if (m_tree.feature[node] < 0) continue;
      const auto l = static_cast<std::size_t>(m_tree.left[node]);
      const auto r = static_cast<std::size_t>(m_tree.right[node]);
      const double w = m_weight[l] + m_weight[r];
      m_value[node] = w > 0.0 ? (m_value[l] * m_weight[l] + m_value[r] * m_weight[r]) / w
                              : 0.5 * (m_value[l] + m_value[r]);
      m_weight[node] = w;
      for (std::size_t f = 0; f < n_features; ++f)
        m_active[node][f] = m_active[l][f] || m_active[r][f];
      m_active[node][static_cast<std::size_t>(m_tree.feature[node])] = true;
    }
    // Variance over the leaves, weighted by volume.
    double sw = 0.0, swv = 0.0;
    for (std::size_t node = 0; node < n_nodes; ++node) {
      if (m_tree.feature[node] >= 0) continue;
      sw += m_weight[node];
      swv += m_weight[node] * m_value[node];
    }
    const double mean = sw > 0.0 ? swv / sw : 0.0;
    double var = 0.0;
    for (std::size_t node = 0; node < n_nodes; ++node) {
      if (m_tree.feature[node] >= 0) continue;
      var += m_weight[node] * (m_value[node] - mean) * (m_value[node] - mean);
    }
    m_variance = sw > 0.0 ? var / sw : 0.0;
  }

  double variance() const { return m_variance; }

  double marginal_variance(const std::vector<std::size_t>& features) const {
    // Cells of each feature: between consecutive split thresholds (and the bounds).
    std::vector<std::vector<double>> mids(features.size()), sizes(features.size());
    for (std::size_t i = 0; i < features.size(); ++i) {
      std::vector<double> cuts;
      for (std::size_t node = 0; node < m_tree.feature.size(); ++node) {
        if (m_tree.feature[node] == static_cast<int>(features[i]))
          cuts.push_back(m_tree.threshold[node]);
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      cuts.insert(cuts.begin(), m_bounds[features[i]].first);
      cuts.push_back(m_bounds[features[i]].second);
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
        mids[i].push_back(0.5 * (cuts[k] + cuts[k + 1]));
        sizes[i].push_back(cuts[k + 1] - cuts[k]);
      }
    }
    std::vector<double> values, weights;
    std::vector<std::size_t> pick(features.size(), 0);
    std::vector<double> point(m_bounds.size(), std::nan(""));
    while (true) {
      double size = 1.0;
      for (std::size_t i = 0; i < features.size(); ++i) {
        point[features[i]] = mids[i][pick[i]];
        size *= sizes[i][pick[i]];
      }
      const auto [value, weight] = marginalised(point, features);
      values.push_back(value);
      weights.push_back(weight * size);
      std::size_t i = 0;
      for (; i < features.size(); ++i) {
        if (++pick[i] < mids[i].size()) break;
        pick[i] = 0;
      }
      if (i == features.size()) break;
    }
    double sw = 0.0, swv = 0.0;
    for (std::size_t k = 0; k < values.size(); ++k) {
      sw += weights[k];
      swv += weights[k] * values[k];
    }
    if (!(sw > 0.0)) return 0.0;
    const double mean = swv / sw;
    double var = 0.0;
    for (std::size_t k = 0; k < values.size(); ++k) {
      var += weights[k] * (values[k] - mean) * (values[k] - mean);
    }
    return std::max(var / sw, 0.0);
  }

 private:
  // The forest prediction at `point` averaged over every feature not in `features`.
  std::pair<double, double> marginalised(const std::vector<double>& point,
                                         const std::vector<std::size_t>& features) const {
    Box box(m_bounds.size(), {0.0, 1.0});
    for (auto f : features) box[f] = m_bounds[f];
    double sw = 0.0, swv = 0.0;
    std::vector<std::pair<std::size_t, Box>> stack;
    stack.emplace_back(0, box);
    while (!stack.empty()) {
      auto [node, b] = std::move(stack.back());
      stack.pop_back();
      const int f = m_tree.feature[node];
      if (f >= 0) {
        const auto fu = static_cast<std::size_t>(f);
        if (!std::isnan(point[fu])) {
          const double t = m_tree.threshold[node];
          if (point[fu] <= t) {
            b[fu].second = t;
            stack.emplace_back(static_cast<std::size_t>(m_tree.left[node]), std::move(b));
          } else {
            b[fu].first = t;
            stack.emplace_back(static_cast<std::size_t>(m_tree.right[node]), std::move(b));
          }
          continue;
        }
        bool any = false;
        for (auto a : features) any = any || m_active[node][a];
        if (any) {
          stack.emplace_back(static_cast<std::size_t>(m_tree.left[node]), b);
          stack.emplace_back(static_cast<std::size_t>(m_tree.right[node]), std::move(b));
          continue;
        }
      }
      const double w = m_weight[node] / cardinality(b);
      sw += w;
      swv += w * m_value[node];
    }
    return {sw > 0.0 ? swv / sw : 0.0, sw};
  }

  Tree m_tree;
  Box m_bounds;
  std::vector<double> m_value, m_weight;
  std::vector<std::vector<bool>> m_active;
  double m_variance = 0.0;
};

// The trials as the forest reads them: one column per numeric parameter, one per choice of a
// categorical one, and the objective.
struct Encoded {
  Box bounds;
  std::vector<std::vector<std::size_t>> columns;  // per parameter of the space
  std::vector<std::vector<double>> x;
  std::vector<double> y;
};

Encoded encode(const std::vector<FrozenTrial>& trials, const SearchSpace& space) {
  Encoded e;
  e.columns.resize(space.size());
  for (std::size_t p = 0; p < space.size(); ++p) {
    const auto& dist = space[p].second;
    if (is_single(dist)) continue;
    if (const auto* c = std::get_if<CategoricalDistribution>(&dist)) {
      for (std::size_t k = 0; k < c->choices.size(); ++k) {
        e.columns[p].push_back(e.bounds.size());
        e.bounds.emplace_back(0.0, 1.0);
      }
    } else if (const auto* f = std::get_if<FloatDistribution>(&dist)) {
      e.columns[p].push_back(e.bounds.size());
      e.bounds.emplace_back(f->low, f->high);
    } else {
      const auto& d = std::get<IntDistribution>(dist);
      e.columns[p].push_back(e.bounds.size());
      e.bounds.emplace_back(static_cast<double>(d.low), static_cast<double>(d.high));
    }
  }
  for (const auto& t : trials) {
    if (t.state != TrialState::complete || !t.value || !std::isfinite(*t.value)) continue;
    std::vector<double> row(e.bounds.size(), 0.0);
    bool ok = true;
    for (std::size_t p = 0; p < space.size() && ok; ++p) {
      auto it = t.params.find(space[p].first);
      if (it == t.params.end() || !contains(space[p].second, it->second)) {
        ok = false;
        break;
      }
      if (e.columns[p].empty()) continue;
      if (std::holds_alternative<CategoricalDistribution>(space[p].second)) {
        row[e.columns[p][static_cast<std::size_t>(it->second)]] = 1.0;
      } else {
        row[e.columns[p][0]] = it->second;
      }
    }
    if (!ok) continue;
    e.x.push_back(std::move(row));
    e.y.push_back(*t.value);
  }
  return e;
}

// Each parameter's share (summing to one when any varies) from a forest of `n_trees` fit to the
// rows `rows` of the encoded trials, each tree on its own bootstrap of them.
std::vector<double> forest_shares(const Encoded& e, const std::vector<std::size_t>& rows,
                                  int n_trees, int max_depth, Rng& rng) {
  std::vector<double> shares(e.columns.size(), 0.0);
  if (e.bounds.empty()) return shares;
  std::vector<FanovaTree> trees;
  const std::size_t n = rows.size();
  for (int i = 0; i < std::max(n_trees, 1); ++i) {
    std::vector<std::size_t> sample(n);
    for (auto& s : sample) s = rows[rng.below(n)];  // bootstrap
    TreeBuilder builder(e.x, e.y, std::max(max_depth, 1), rng);
    trees.emplace_back(builder.build(std::move(sample)), e.bounds);
  }
  double total = 0.0;
  for (std::size_t p = 0; p < e.columns.size(); ++p) {
    if (e.columns[p].empty()) continue;
    double sum = 0.0;
    int count = 0;
    for (const auto& tree : trees) {
      if (!(tree.variance() > 0.0)) continue;
      sum += tree.marginal_variance(e.columns[p]) / tree.variance();
      ++count;
    }
    shares[p] = count > 0 ? sum / count : 0.0;
    total += shares[p];
  }
  if (total > 0.0) {
    for (auto& s : shares) s /= total;
  }
  return shares;
}

// The value below which a fraction q of `v` lies (linear between order statistics).
double quantile_of(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(at));
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

}  // namespace

std::expected<std::vector<ImportanceShare>, std::string> fanova_importance_with_interval(
    const std::vector<FrozenTrial>& trials, const SearchSpace& space,
    const ImportanceOptions& options) {
  const Encoded e = encode(trials, space);
  if (e.y.size() < 2) {
    return std::unexpected(fmt::format(
        "parameter importance needs at least 2 COMPLETE trials with every parameter; found {}",
        e.y.size()));
  }
  std::vector<std::size_t> all(e.y.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  Rng rng(options.seed);
  const auto shares = forest_shares(e, all, options.n_trees, options.max_depth, rng);
  // The interval: forests fit to bootstrap resamples of the trials, each from its own stream so
  // that the main estimate above does not depend on how many there are.
  std::vector<std::vector<double>> resampled(space.size());
  Rng outer(splitmix64(options.seed ^ fnv1a("importance interval")));
  for (int b = 0; b < options.resamples; ++b) {
    std::vector<std::size_t> rows(e.y.size());
    for (auto& r : rows) r = outer.below(e.y.size());
    Rng inner(outer.next_u64());
    const auto s = forest_shares(e, rows, options.resample_trees, options.max_depth, inner);
    for (std::size_t p = 0; p < space.size(); ++p) resampled[p].push_back(s[p]);
  }
  std::vector<ImportanceShare> out;
  for (std::size_t p = 0; p < space.size(); ++p) {
    ImportanceShare share{space[p].first, shares[p], shares[p], shares[p]};
    if (!resampled[p].empty()) {
      const double tail = (1.0 - options.interval) / 2.0;
      share.low = std::min(shares[p], quantile_of(resampled[p], tail));
      share.high = std::max(shares[p], quantile_of(resampled[p], 1.0 - tail));
    }
    out.push_back(std::move(share));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.share > b.share; });
  return out;
}

std::expected<std::vector<std::pair<std::string, double>>, std::string> fanova_importance(
    const std::vector<FrozenTrial>& trials, const SearchSpace& space,
    const ImportanceOptions& options) {
  ImportanceOptions plain = options;
  plain.resamples = 0;
  auto shares = fanova_importance_with_interval(trials, space, plain);
  if (!shares) return std::unexpected(shares.error());
  std::vector<std::pair<std::string, double>> out;
  for (auto& s : *shares) out.emplace_back(std::move(s.name), s.share);
  return out;
}

}  // namespace tune::search
