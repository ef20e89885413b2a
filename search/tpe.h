// The TPE sampler (Optuna 3.x's TPESampler): random startup trials, then the candidate that
// maximises l(x)/g(x). Seeded, a suggestion depends on the seed, history and trial number alone.
// One thread at a time.
// Design: docs/design-notes.md#searchtpeh
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "search/sampler.h"

namespace tune::search {

struct TpeOptions {
  std::optional<std::uint64_t> seed;  // none = seeded from the OS
  bool consider_prior = true;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  int n_startup_trials = 10;
  int n_ei_candidates = 24;
  bool multivariate = false;
  bool group = false;
  bool constant_liar = false;       // RUNNING trials count as bad (concurrent workers)
  bool constraints = true;          // use FrozenTrial::constraints as constrained TPE does
  bool normalized_kernels = false;  // true densities (see parzen_estimator.h); Optuna 3.1: off
  // The most observations the bad side's estimator g(x) is built from; 0: all (Optuna's
  // algorithm, whose cost per suggestion grows with the study). Over the cap, the newest half
  // are kept as they are and the older bad trials are thinned in order, each kept one standing
  // for its run of neighbours with their summed weight (tpe.cpp, thin_bad_side). Below it,
  // suggestions are exactly those of the uncapped sampler.
  int max_observations = 1000;
};

// From the `sampler:` JSON (type "tpe" plus the options above by Optuna's names). Unknown keys
// are an error naming the key.
std::expected<TpeOptions, std::string> tpe_options_from_json(const nlohmann::json& config);
std::unique_ptr<Sampler> make_tpe_sampler(const TpeOptions& options);

}  // namespace tune::search
