#include "search/gp_acquisition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>
#include <variant>

#include "search/normal_math.h"

namespace tune::search::detail {
namespace {

constexpr double k_neg_inf = -std::numeric_limits<double>::infinity();

// The grid neighbour of an encoded numeric value one step up (sign > 0) or down, when the
// coordinate step `delta` rounds back onto the same grid point.
double step_neighbour(const EncodedDim& dim, double u, double sign, double delta) {
  const double moved = encode(dim, decode(dim, u + sign * delta));
  if (moved != u || dim.step <= 0.0) return moved;
  const double v = decode(dim, u) + sign * dim.step;
  if (v < dim.low - 1e-9 || v > dim.high + 1e-9) return u;
  return encode(dim, std::clamp(v, dim.low, dim.high));
}

struct Scored {
  double score;
  std::vector<double> x;
};

// Greedy coordinate ascent: each round tries a step up and down in every numeric dimension and
// every other choice of every categorical one, takes the best move, and halves the step when
// nothing improves.
void local_search(const Acquisition& acquisition, const std::vector<EncodedDim>& dims,
                  Scored& point, int max_steps) {
  double delta = 0.1;
  const std::size_t d = dims.size();
  std::vector<std::pair<std::size_t, double>> moves;  // (dimension, new value), in order
  std::vector<double> xs, scores;
  for (int step = 0; step < max_steps && delta >= 1e-3; ++step) {
    moves.clear();
    auto consider = [&](std::size_t j, double value) {
      if (value != point.x[j]) moves.emplace_back(j, value);
    };
    for (std::size_t j = 0; j < d; ++j) {
      if (dims[j].categorical) {
        for (std::size_t c = 0; c < dims[j].n_choices; ++c) consider(j, static_cast<double>(c));
      } else {
        consider(j, step_neighbour(dims[j], point.x[j], 1.0, delta));
        consider(j, step_neighbour(dims[j], point.x[j], -1.0, delta));
      }
    }
    // Every move scored in one batch, then taken in order: the first best wins, as when each
    // was scored in turn.
    xs.clear();
    for (const auto& [j, value] : moves) {
      xs.insert(xs.end(), point.x.begin(), point.x.end());
      xs[xs.size() - d + j] = value;
    }
    acquisition.score_many(xs, moves.size(), scores);
    double best_score = point.score;
    std::size_t best_dim = d;
    double best_value = 0.0;
    for (std::size_t m = 0; m < moves.size(); ++m) {
      if (scores[m] > best_score) {
        best_score = scores[m];
        best_dim = moves[m].first;
        best_value = moves[m].second;
      }
    }
    if (best_dim == d) {
      delta *= 0.5;
      continue;
    }
    point.x[best_dim] = best_value;
    point.score = best_score;
  }
}

}  // namespace

EncodedDim encoded_dim(const Distribution& dist) {
  EncodedDim dim;
  if (const auto* c = std::get_if<CategoricalDistribution>(&dist)) {
    dim.categorical = true;
    dim.n_choices = c->choices.size();
    return dim;
  }
  if (const auto* f = std::get_if<FloatDistribution>(&dist)) {
    dim.low = f->low;
    dim.high = f->high;
    dim.log = f->log;
    dim.step = f->step ? *f->step : 0.0;
  } else {
    const auto& i = std::get<IntDistribution>(dist);
    dim.low = static_cast<double>(i.low);
    dim.high = static_cast<double>(i.high);
    dim.log = i.log;
    dim.step = static_cast<double>(i.step);
  }
  const double pad = 0.5 * dim.step;
  dim.lo = dim.log ? std::log(dim.low - pad) : dim.low - pad;
  dim.hi = dim.log ? std::log(dim.high + pad) : dim.high + pad;
  return dim;
}

double encode(const EncodedDim& dim, double internal) {
  if (dim.categorical) return internal;
  const double t = dim.log ? std::log(internal) : internal;
  return dim.hi > dim.lo ? (t - dim.lo) / (dim.hi - dim.lo) : 0.5;
}

double decode(const EncodedDim& dim, double u) {
  if (dim.categorical) {
    return std::clamp(std::round(u), 0.0, static_cast<double>(dim.n_choices) - 1.0);
  }
  const double t = dim.lo + std::clamp(u, 0.0, 1.0) * (dim.hi - dim.lo);
  double v = dim.log ? std::exp(t) : t;
  if (dim.step > 0.0) v = dim.low + std::round((v - dim.low) / dim.step) * dim.step;
  return std::clamp(v, dim.low, dim.high);
}

double log_expected_improvement(double mean, double variance, double best) {
  const double sigma = std::sqrt(variance);
  const double z = (best - mean) / sigma;
  if (z > -6.0) {
    const double phi = std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
    return std::log(sigma) + std::log(std::max(z * ndtr(z) + phi, 1e-300));
  }
  // z Phi(z) + phi(z) = phi(z) / z^2 (1 - 3/z^2 + 15/z^4 - ...) as z -> -inf (the asymptotic
  // series of Mills' ratio), kept in logs; the next term is below 1e-3 here.
  const double w = 1.0 / (z * z);
  return std::log(sigma) - 0.5 * z * z - 0.5 * std::log(2.0 * std::numbers::pi) -
         2.0 * std::log(-z) + std::log1p(w * (-3.0 + 15.0 * w));
}

double Acquisition::operator()(std::span<const double> x) const {
  std::vector<double> score;
  score_many(x, 1, score);
  return score[0];
}

void Acquisition::score_many(std::span<const double> xs, std::size_t m,
                             std::vector<double>& scores) const {
  scores.assign(m, 0.0);
  std::vector<double> mean(m), variance(m);
  if (has_best) {
    objective->predict_many(xs, mean, variance);
    for (std::size_t i = 0; i < m; ++i)
      scores[i] = log_expected_improvement(mean[i], variance[i], best);
  }
  for (std::size_t c = 0; c < constraints.size(); ++c) {
    constraints[c]->predict_many(xs, mean, variance);
    for (std::size_t i = 0; i < m; ++i)
      scores[i] += log_ndtr((thresholds[c] - mean[i]) / std::sqrt(variance[i]));
  }
}

std::vector<double> maximise_acquisition(const Acquisition& acquisition,
                                         const std::vector<EncodedDim>& dims,
                                         const std::vector<std::vector<double>>& incumbents,
                                         Rng& rng, const AcquisitionSearch& search) {
  const std::size_t d = dims.size();
  // Every point is drawn first and scored after, in one batch: the draws do not depend on the
  // scores, so the pool is the one a point-by-point scoring would build.
  std::vector<Scored> pool;
  auto add = [&](std::vector<double> x) { pool.push_back({0.0, std::move(x)}); };
  for (int k = 0; k < search.n_random; ++k) {
    std::vector<double> x(d);
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = dims[j].categorical ? static_cast<double>(rng.below(dims[j].n_choices))
                                 : encode(dims[j], decode(dims[j], rng.uniform()));
    }
    add(std::move(x));
  }
  for (const auto& incumbent : incumbents) {
    for (int k = 0; k < search.n_neighbours; ++k) {
      std::vector<double> x = incumbent;
      const double sigma = k % 2 == 0 ? 0.05 : 0.2;
      for (std::size_t j = 0; j < d; ++j) {
        if (rng.uniform() * static_cast<double>(d) > 2.0) continue;  // ~2 dimensions moved
        x[j] = dims[j].categorical ? static_cast<double>(rng.below(dims[j].n_choices))
                                   : encode(dims[j], decode(dims[j], x[j] + sigma * rng.normal()));
      }
      add(std::move(x));
    }
  }
  std::vector<double> xs, scores;
  xs.reserve(pool.size() * d);
  for (const Scored& p : pool) xs.insert(xs.end(), p.x.begin(), p.x.end());
  acquisition.score_many(xs, pool.size(), scores);
  for (std::size_t i = 0; i < pool.size(); ++i)
    pool[i].score = std::isnan(scores[i]) ? k_neg_inf : scores[i];
  // The best distinct points, refined; ties keep the earlier point (stable).
  std::stable_sort(pool.begin(), pool.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  std::vector<Scored> starts;
  for (auto& p : pool) {
    if (static_cast<int>(starts.size()) >= search.n_local_starts) break;
    const bool seen =
        std::any_of(starts.begin(), starts.end(), [&](const Scored& s) { return s.x == p.x; });
    if (!seen) starts.push_back(std::move(p));
  }
  std::size_t best = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    local_search(acquisition, dims, starts[i], search.max_local_steps);
    if (starts[i].score > starts[best].score) best = i;
  }
  return starts.empty() ? std::vector<double>(d, 0.5) : starts[best].x;
}

}  // namespace tune::search::detail
