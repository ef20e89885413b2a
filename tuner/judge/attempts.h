// The attempts at a baseline or rule trial: the trial the study enqueued when it was created and
// the re-runs tune enqueued after one did not complete (system attr k_attr_retry_of, each naming
// the attempt it follows), the setting's one value coming from the first that completed. Pure
// functions over a StudyView, linear in its trials; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"

namespace tune::tuner {

struct Attempts {
  std::vector<const search::FrozenTrial*> trials;  // the enqueued trial, then each re-run of it

  // The one that stands for the setting: the first that completed, else the last.
  const search::FrozenTrial* standing() const;
  // The last two failed with the same reason and tune cut neither short (an interrupt, the
  // study's --time-limit, a dead tune): a third run would fail alike, so none is enqueued.
  bool failed_for_good() const;
  // The last attempt failed, not for good: the next `tune` runs the setting again.
  bool to_retry() const;
};

// The baseline's first trial: the lowest-numbered enqueued trial (system attr "fixed_params") that
// is not a re-run, nor a re-run of an attempt, nor a rule baseline the study's `enqueue:` does not
// give (k_attr_rule_only); nullptr when the study enqueued none.
const search::FrozenTrial* first_baseline_trial(const search::StudyView& study);

// The attempts at the baseline, and at each rule baseline (system attr k_attr_rules), in the
// order of their first trials; the baseline's come first.
std::vector<Attempts> baseline_attempts(const search::StudyView& study);

// The attempts whose first trial is `first`.
Attempts attempts_at(const search::StudyView& study, const search::FrozenTrial& first);

// What the reports and exports say of a baseline that never completed: why, and what to do
// ("failed twice with the same reason: ...; fix it, then `tune confirm` ..."); "" when it did.
std::string baseline_problem(const Attempts& attempts);

}  // namespace tune::tuner
