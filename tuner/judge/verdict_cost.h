// What a trial's queueing cost the job, by the job's own figure: whether a comparable trial
// with smaller pools beat it beyond the noise. Pure functions over a StudyView; thread-safe.
// Design: docs/design-notes.md#tunerjudgeverdict_costh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"
#include "tuner/judge/noise.h"

namespace tune::tuner {

struct VerdictCost {
  int trial = -1;
  bool flagged = false;  // observed oversubscribed
  // Flagged, and its CPU time shows the queue cost (spin-waiting or preemption beyond time
  // slicing, probes/queue_cost.h): the verdict's claim that the queue slowed the job.
  bool costly = false;
  // The ranks' own threads' share of their runnable time that got no CPU over the measured
  // window (the verdict's sustained figure, else the worst cpuset's), and their helpers' (the
  // knobs' other threads); none where the verdict did not measure run-queue delays.
  std::optional<double> main_wait_share, helper_wait_share;
  int comparable = 0;  // comparable trials (same placement and non-pool parameters, smaller pools)
  int against = -1;    // the fastest of them; -1 when there is none: the cost is not judged
  std::vector<std::string> smaller_pools;  // the pools smaller in `against` ("blas", ...)
  std::optional<NoiseLead> lead;           // `against`'s lead over the trial
  bool noise_known = false;
  bool slowed = false;  // `against` is better beyond the noise (or by 10% with the noise unknown)
  double ratio = 1;     // how many times better `against` is (1 on an absolute scale)
};

// One per trial that ran its work (verdict_counts), completed with a value, is no re-run, was
// measured on a quiet machine (ranking.h trusted_run) and carries an observed verdict.
std::map<int, VerdictCost> verdict_costs(const search::StudyView& study);

// The parameters of the study that size pools (see above), by name.
std::vector<std::string> pool_parameters(const search::StudyView& study);

// "the ranks' own threads waited 66% of their runnable time (their helpers 80%); the fastest
// comparable trial, #7 (smaller blas), was 1.02x: within the noise, no measurable cost";
// "... #7 (smaller blas) was 1.35x better, beyond the noise: the queueing cost throughput";
// without a comparable trial, "...; no comparable trial (the same but for smaller pools): the
// cost is not measured". "" when there is nothing to say (no figure and no comparable trial).
std::string verdict_cost_text(const VerdictCost& cost);

}  // namespace tune::tuner
