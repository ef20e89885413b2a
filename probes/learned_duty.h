// Predictions that learn: each thread group's duty cycle measured by earlier trials of a study,
// keyed by predicted thread count and cpuset size, so an idle pool stops counting as busy.
// Plain values; not thread-safe while add() runs.
// Design: docs/design-notes.md#probeslearned_dutyh
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/predict.h"
#include "probes/sustained.h"

namespace tune::probes {

inline constexpr int k_duty_record_schema_version = 1;

// One trial's record: {"schema_version": 1, "pus": 2, "groups": {"openmp": {"predicted_threads":
// 1, "threads": 1.0, "runnable": 0.42, "cpu": 0.31, "load": 0.42}, ...}}. Predicted counts and
// cpuset are those of the prediction's first rank (the ranks of one node are launched alike).
nlohmann::json duty_record(const Prediction* predicted,
                           const std::map<std::string, DutyCycle>& measured);

class LearnedDuty {
 public:
  // Adds one trial's record; records of another schema or shape are skipped (false).
  bool add(const nlohmann::json& record);
  int trials() const { return m_trials; }
  // What was measured for `threads` threads of `group` on a `pus`-PU cpuset (the order of
  // fallbacks above); nullopt when the group was never measured.
  std::optional<double> load(const std::string& group, int threads, int pus) const;
  // "other" (the threads the monitor cannot name) for `threads` unnamed threads on a `pus`-PU
  // cpuset, and how many of them it covers (the rest keep the prior's count); nullopt when
  // nothing was measured on that size.
  struct Other {
    double load = 0;
    int threads = 0;
  };
  std::optional<Other> other(int threads, int pus) const;
  // Groups measured at all.
  std::vector<std::string> groups() const;

 private:
  // group -> (cpuset PUs, predicted threads) -> loads measured, sorted
  std::map<std::string, std::map<std::pair<int, int>, std::vector<double>>> m_loads;
  int m_trials = 0;
};

// Re-counts `prediction`'s groups with what was learned (nothing changes without a trial) and
// summarizes it again.
void apply_learned_duty(const Topology& topo, Prediction& prediction, const LearnedDuty& learned,
                        double ratio);

}  // namespace tune::probes
