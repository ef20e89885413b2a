// The GP sampler: Bayesian optimisation with a Gaussian-process surrogate (gp.h) and expected
// improvement (gp_acquisition.h), as Optuna 4's GPSampler, for studies of expensive trials.
// Seeded, a suggestion depends on the seed, history and trial number alone. One thread at a time.
// Design: docs/design-notes.md#searchgp_samplerh
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "search/sampler.h"

namespace tune::search {

struct GpOptions {
  std::optional<std::uint64_t> seed;  // none = seeded from the OS
  int n_startup_trials = 5;           // random trials before the first model (bench: 5 over 3, 10)
  bool constant_liar = true;          // RUNNING trials of other workers count as the worst value
  bool constraints = true;            // model FrozenTrial::constraints (feasibility)
  // Observations the model keeps, which bounds the cost per suggestion (bench: ~12 ms CPU
  // against ~18 ms with 100; median regret at 100 trials still below a third of Optuna's TPE
  // on 6 of 8 objectives, and at most 0.6x on the others).
  int max_trials = 80;
  // How values are shaped before standardising: "log" (log1p of the distance to the best over
  // the distance from the best to the lower quartile: cliffs and outliers shrink, differences
  // among good trials stay), "rank" (normal scores of the ranks, a Gaussian copula) or "none".
  // In bench/search (10 seeds, 50 trials) log had the lower median regret than none on 7 of 8
  // objectives and than rank on 7 of 8.
  std::string warp = "log";
  // Finished trials after which TPE suggests every parameter (the same TPE that samples the
  // conditional ones, learning from the whole history); 0: the GP to the end. A GP's suggestion
  // costs 10-25 ms and its model sees max_trials observations however long the study; TPE's
  // costs about a millisecond and sees a thousand. Optuna's sampler table recommends a GP for
  // budgets of 10-100 trials and TPE for 100-1,000 and beyond. In bench/search (3 seeds, 1,000
  // trials) the hand-over at 200 was at or below the GP alone at 300, 500 and 1,000 trials on
  // every objective (docs/samplers-and-noise.md, "Long studies").
  int tpe_after = 200;
};

// From the `sampler:` JSON (type "gp" plus the options above). Unknown keys are an error naming
// the key.
std::expected<GpOptions, std::string> gp_options_from_json(const nlohmann::json& config);
std::unique_ptr<Sampler> make_gp_sampler(const GpOptions& options);

}  // namespace tune::search
