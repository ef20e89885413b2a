// The first guess (issue 39): from the baseline run's probe verdict, a split of each rank's
// cores between the pools the study can size, that removes the contention the probes measured.
// The runner enqueues it right after the baselines (tuner/run/runner.cpp), `tune guess` prints
// it, and bench/ judges it against recorded grids. docs/probes.md ("The first guess") has the
// model with a worked example:
//
//   contended  the verdict says oversubscribed: the ranks' own threads waited W >= 25% of their
//              runnable time for a CPU (probes::SustainedOptions::main_wait_share) AND asked for
//              more than 1.2x the PUs (its demand test, so another job's queue is not blamed on
//              the settings). Else no change. The runner makes the guess from a baseline
//              measured on a quiet machine only (its quiet re-run, run/first_guess_step.h).
//   budget     b = physical cores of the node / local ranks (at least 1).
//   demand     per rank, over the verdict's measured window: each thread group's mean threads x
//              runnable share (CPUs' worth it asked for, running or queued; duty_cycles);
//              compute = main + OpenMP + BLAS + OpenCV in the rank, workers = the processes the
//              rank started (DataLoader workers) + iterator workers.
//   split      workers = b x workers / (compute + workers), 0 when that is below 0.5 (the
//              loading then runs in the rank); the main compute pool (torch intra-op, OpenMP,
//              BLAS) = b - workers, at least 1; OpenCV/TBB pools 1; so busy threads <= b.
//   binding    a rank of one busy thread is bound to its core; more: the package or NUMA node
//              when a rank gets a whole one, else unbound (as the cores_per_rank rule).
//   predicted  a rough estimate, the baseline's value x: cores / CPUs the job used, where it
//              used < 90% of the node's cores (it gains at most what it left idle); else each
//              rank's demand / b (its threads asked for that many CPUs' worth and got b).
// Values are fitted into the parameters' domains as the rules fit theirs (study/rules.h).
//
// Pure functions of their arguments; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/distribution.h"
#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/study/rules.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

struct FirstGuess {
  bool change = false;  // the guess differs from the setting as run
  std::map<std::string, search::ParamValue>
      params;                          // every parameter (the baseline's if no change)
  double speedup = 1;                  // predicted factor over the baseline
  std::optional<double> predicted;     // in the objective's units, when the baseline has a value
  std::vector<std::string> reasoning;  // lines for people, in the study's parameter names
  bool threads_changed = false;        // the pools' split changed (not only a kernel)
  bool kernel_changed = false;         // a kernel parameter set (add_kernel_guess)
};

// The setting as run: the study's first `enqueue:` entry, a parameter it leaves out at null
// where null is one of its choices. An error names the study file when there is none.
Result<std::map<std::string, search::ParamValue>> baseline_params(const StudySpec& spec);

// A stored trial's parameter values (external), each by the distribution it was stored with.
std::map<std::string, search::ParamValue> trial_params(const search::FrozenTrial& trial);

// What the guess is made from, as a stored baseline trial holds it: its `probe_verdict`, its
// parameter values, and its value when it completed.
struct GuessBasis {
  nlohmann::json verdict;
  std::map<std::string, search::ParamValue> params;
  std::optional<double> value;
};
// nullopt when the trial has no verdict object (it did not run with the probes).
std::optional<GuessBasis> guess_basis(const search::FrozenTrial& baseline);

// The guess for `spec` from the baseline's stored `probe_verdict` (probes::Verdict::to_json),
// its parameter values and its value (nullopt: none measured; no `predicted` then). An error
// names what the verdict lacks (no duty cycles, no measured window).
Result<FirstGuess> first_guess(const StudySpec& spec, const RuleMachine& machine,
                               const nlohmann::json& verdict,
                               const std::map<std::string, search::ParamValue>& baseline,
                               std::optional<double> baseline_value);

// The kernel part of the guess: where the baseline's ranks spent their CPU time in an OpenBLAS
// that runs a kernel older than the CPU (or one the environment forced), by its stored
// `probe_libraries` and its verdict's CPU time per library, and the study has a kernel
// parameter with checked choices, the best of them (the first: choices are ordered best first)
// is set and said; the guess then changes. "Where the time is": libopenblas is the library with
// the most samples in some rank, or holds at least `k_kernel_time_share` of one. Nothing is
// changed when the libraries or the CPU time were not recorded.
inline constexpr double k_kernel_time_share = 0.2;
void add_kernel_guess(const StudySpec& spec, const nlohmann::json& libraries,
                      const nlohmann::json& verdict, FirstGuess& guess);

// {"change": bool, "params": {name: value}, "predicted": number|null, "reasoning": [str]}:
// `tune guess --json` and the trial's attributes.
nlohmann::json first_guess_json(const FirstGuess& guess);

// "threads=1 workers=0 (predicted 1.27x: ...)": the changed parameters and the factor, one line.
std::string first_guess_line(const FirstGuess& guess,
                             const std::map<std::string, search::ParamValue>& baseline);

}  // namespace tune::tuner
