// Predictions that learn: what earlier trials of a study measured about each thread group, and
// a prediction re-counted with it, so an idle pool stops counting as busy.
//
// Each trial stores one record (duty_record, the trial's "probe_duty_cycles" system attr): for
// each group, the threads the prediction gave it and the runnable threads per rank the monitor
// measured over the measured window (threads x runnable duty cycle, probes/sustained.h), and the
// PUs of the rank's cpuset. A later prediction counts a group of n threads on a cpuset of p PUs
// as the median load that earlier trials measured for n threads of that group on p PUs; else as
// n x the median per-thread duty measured on p PUs; else the median for n threads on any cpuset;
// else n x the per-thread duty anywhere; a group never measured keeps the prior rules' count.
// The cpuset is part of the key because a pool's duty depends on it: libgomp stops spinning when
// its team has more threads than the PUs it may use (measured: an OpenMP pool of 2 on a 1-PU
// cpuset is runnable 0% of the time, on 2 PUs 60%). Threads the model does not name
// (MPI's progress threads, a pool the model did not predict) are added at their median measured
// load on that cpuset size with as many unnamed threads predicted, else with the most below that
// (the threads beyond keep their prior count), else with the fewest above, less one runnable
// thread per thread too many. Keyed by the predicted count, not the measured one: OpenBLAS starts
// its threads at load and a later openblas_set_num_threads(1) leaves them idle, so "1 thread alive,
// predicted 0" is the case the key must keep apart.
//
// Once learned, a cpuset is predicted oversubscribed as the observed verdict judges it: load
// above `ratio` x PUs (the monitor's oversubscribed_ratio), so prediction and observation
// compare like with like.
//
// Plain values; not thread-safe while add() runs.
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
