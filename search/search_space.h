// The intersection search space of a study (Optuna's IntersectionSearchSpace): the parameters
// every finished COMPLETE or PRUNED trial has, which the joint samplers model.
// Owned by one sampler; not thread-safe.
// Design: docs/design-notes.md#searchsearch_spaceh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"

namespace tune::search {

// Same type, bounds, log flag, step and choices.
bool same_distribution(const Distribution& a, const Distribution& b);

// True when a stored internal value can stand for an observation of `dist`: not NaN, within the
// bounds, a valid choice index. A value stored under an older, wider range is not, and models
// skip it like a missing parameter (Optuna does not guard against it).
bool usable_value(const Distribution& dist, double v);

class IntersectionSearchSpace {
 public:
  // Folds in the finished trials not seen yet.
  void update(const StudyView& study);
  // The intersection so far, non-single distributions only, in name order; empty before the
  // first finished trial.
  SearchSpace get() const;

 private:
  std::vector<bool> m_seen;
  std::optional<std::map<std::string, Distribution>> m_intersection;
  ChangeCursor m_cursor;  // the study's change log, read up to here
};

}  // namespace tune::search
