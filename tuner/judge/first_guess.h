// The first guess (issue 39): from the baseline's probe verdict, a split of each rank's cores
// between the pools the study can size that removes the contention the probes measured (model
// and worked example: docs/probes.md, "The first guess"). Pure functions; thread-safe.
// Design: docs/design-notes.md#tunerjudgefirst_guessh
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

// The kernel part of the guess: where the baseline's ranks spent their CPU time in a library
// (OpenBLAS, oneDNN) that runs a kernel older than the CPU (or one the environment forced), by
// its stored `probe_libraries` and its verdict's CPU time per library, and the study has a kernel
// parameter of that library with checked choices, the best of them (the first: choices are
// ordered best first) is set and said; the guess then changes. "Where the time is": the library
// (libopenblas, libdnnl; oneDNN's generated kernels, anonymous memory, counted as its own) has
// the most samples in some rank, or holds at least `k_kernel_time_share` of one. Nothing is changed
// when the libraries or the CPU time were not recorded.
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
