// Samplers choose the next trial's parameters (Optuna's BaseSampler interface); suggest_all()
// runs one trial's calls in order. A sampler is used by one thread at a time.
// Design: docs/design-notes.md#searchsamplerh
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "search/trial.h"

namespace tune::search {

class Sampler {
 public:
  virtual ~Sampler() = default;

  // The joint space to sample in sample_relative(); empty for independent samplers.
  virtual SearchSpace infer_relative_search_space(const StudyView& study,
                                                  const FrozenTrial& trial) = 0;
  // Internal values for (a subset of) the relative space.
  virtual std::map<std::string, double> sample_relative(const StudyView& study,
                                                        const FrozenTrial& trial,
                                                        const SearchSpace& space) = 0;
  // One internal value for a parameter not covered by sample_relative().
  virtual double sample_independent(const StudyView& study, const FrozenTrial& trial,
                                    const std::string& name, const Distribution& dist) = 0;
  // Called before sampling a new trial (e.g. grid bookkeeping into system_attrs).
  virtual void before_trial(const StudyView& /*study*/, FrozenTrial& /*trial*/) {}
  // Called once a trial has reached a finished state.
  virtual void after_trial(const StudyView& /*study*/, const FrozenTrial& /*trial*/) {}
  // True when the sampler has nothing new left to suggest (a grid whose every point has been
  // run); the study then stops, as Optuna's GridSampler stops its study.
  virtual bool exhausted(const StudyView& /*study*/) const { return false; }
};

// Relative first, then independent for the rest, in the order of `space`. Returns internal
// values for every parameter of `space`; parameters already fixed in trial.params (enqueued
// trials) are kept as they are.
std::map<std::string, double> suggest_all(Sampler& sampler, const StudyView& study,
                                          FrozenTrial& trial, const SearchSpace& space);

// The `sampler.seed` option of any sampler's section: an integer >= 0, else an error naming it.
std::expected<std::uint64_t, std::string> seed_from_json(const nlohmann::json& value);

}  // namespace tune::search
