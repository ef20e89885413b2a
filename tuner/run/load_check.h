// Load that is not the job's: whether a trial was measured while other work used the machine's
// CPUs (issue 36), and waiting for the machine to be quiet before it is measured again.
// Pure functions, and a wait that samples through a seam; thread-safe.
// Design: docs/design-notes.md#tunerrunload_checkh
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/launch/machine_load.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// The study's limit, in CPUs' worth, for a trial whose ranks may use `usable_cpus` CPUs.
double load_limit(const LoadSpec& spec, double usable_cpus);

// What a trial's end adds about the load it ran under.
struct LoadJudgement {
  std::optional<double> external_cpus;   // none: not measured (no keeper, no /proc/stat)
  double uncertainty = 0;                // the reading's resolution, same unit
  std::optional<double> rank_cpu_share;  // mean CPU of one rank (1.0 = a whole CPU), probes
  double usable_cpus = 0;                // the CPUs its ranks may use
  // The CPUs the busy time was summed over: the union of the ranks' cpusets where the verdict
  // names them and the keeper sent each CPU's time (empty: every CPU tune may use).
  std::vector<int> cpus;
  double limit = 0;                      // load_limit(spec, usable_cpus)
  bool under_load = false;               // judged so (never when spec.check is false)
};

// From the launch's CPU figures and the probes' verdict (system attr probe_verdict: its "pus",
// each rank's "allowed_pus" and "mean_cpu_pct"; null when the probes did not run);
// `allowed_cpus` is the number of CPUs tune may use, the ranks' CPUs when the verdict does not
// say. The machine's busy time is that of the ranks' CPUs alone where both are known (a job
// bound to 4 cores of a 128-PU node is judged by those 4, against a limit from those 4).
LoadJudgement judge_load(const LoadSpec& spec, const std::optional<TrialCpu>& cpu,
                         const nlohmann::json& probe_verdict, int allowed_cpus);

// The user attrs it stores: k_attr_external_cpu, k_attr_rank_cpu_share, and
// k_attr_measured_under_load when under load (with "cpus", the CPUs judged, where a subset).
void add_load_attrs(const LoadJudgement& load, nlohmann::json& user_attrs);

// "measured under load: 1.9 CPUs of other work (limit 0.25)", for the live line.
std::string load_note(const LoadJudgement& load);

// Waiting for a quiet machine: `sample` measures the CPUs' worth other work used over its next
// step (it takes the step's time: half a second when live), none when it cannot read; quiet is
// two steps in a row at or under `limit`. Prints "tune: waiting for the machine to be quiet: 1.9
// CPUs busy outside the study (trial 3 was measured under that load)" once, when it has to wait
// (`trial_number` is the trial measured under load); stops at `budget_s` or when `stop()` says
// so. Returns the seconds waited (its caller keeps the budget) and whether the machine was quiet
// at the end; a budget of 0 waits for nothing and is not quiet.
struct QuietWait {
  bool quiet = false;
  bool said = false;  // the waiting line was printed
  double waited_s = 0;
  std::optional<double> last_cpus;  // the last step's external load
};
using LoadSample = std::function<std::optional<double>()>;
QuietWait wait_until_quiet(const LoadSample& sample, double step_s, double limit, double budget_s,
                           int trial_number, std::ostream& out, const std::function<bool()>& stop);

// The live sampler: the busy CPU time of `cpus` (empty: every CPU tune may use) less tune's own
// over `step_s` seconds.
LoadSample live_load_sample(double step_s, std::vector<int> cpus = {});

// `load:` as the study file says, unless the environment says TUNE_LOAD_CHECK=off (or 0, false):
// then the load is recorded and never judged, as for `load: off` (test suites that share a busy
// machine, where the tests judge other things).
LoadSpec effective_load_spec(const LoadSpec& spec);

}  // namespace tune::tuner
