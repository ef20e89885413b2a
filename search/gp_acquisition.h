// The GP sampler's encoded space and its acquisition function (log expected improvement times
// the probability of feasibility), private to search/. Plain values and pure functions; the
// caller owns the models.
// Design: docs/design-notes.md#searchgp_acquisitionh
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "search/distribution.h"
#include "search/gp.h"
#include "search/rng.h"

namespace tune::search::detail {

struct EncodedDim {
  bool categorical = false;
  std::size_t n_choices = 0;  // categorical
  bool log = false;           // numeric: encoded in log space
  double lo = 0.0, hi = 1.0;  // numeric: the (transformed) interval mapped onto [0, 1]
  double low = 0.0, high = 0.0, step = 0.0;  // numeric: internal bounds and grid (0: none)
};

EncodedDim encoded_dim(const Distribution& dist);
double encode(const EncodedDim& dim, double internal);
// Internal value of an encoded one: clamped, rounded onto the step grid.
double decode(const EncodedDim& dim, double u);

double log_expected_improvement(double mean, double variance, double best);

// What is maximised. Without a feasible incumbent (has_best false) only the feasibility term
// counts: the search looks for the feasible region first.
struct Acquisition {
  const GaussianProcess* objective = nullptr;
  double best = 0.0;  // best standardised objective value of a feasible trial (minimised)
  bool has_best = false;
  std::vector<const GaussianProcess*> constraints;  // each models a standardised constraint
  std::vector<double> thresholds;                   // feasible where the constraint <= this
  double operator()(std::span<const double> x) const;  // a batch of one
  // The value at each of the m points of `xs` (m rows of d, row-major) into `scores`, the
  // models' predictions made in batches (GaussianProcess::predict_many).
  void score_many(std::span<const double> xs, std::size_t m, std::vector<double>& scores) const;
};

struct AcquisitionSearch {
  int n_random = 512;      // uniform points scored first
  int n_neighbours = 32;   // per incumbent, perturbed copies
  int n_local_starts = 5;  // best distinct points refined by the local search
  int max_local_steps = 40;
};

// The encoded point with the best acquisition value found. incumbents: encoded points to search
// around (the best observed first). Deterministic given rng's state.
std::vector<double> maximise_acquisition(const Acquisition& acquisition,
                                         const std::vector<EncodedDim>& dims,
                                         const std::vector<std::vector<double>>& incumbents,
                                         Rng& rng, const AcquisitionSearch& search);

}  // namespace tune::search::detail
