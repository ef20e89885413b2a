// Which trial `tune export` writes, and what it says about it: an export ships what the study
// showed. By default the best trial (tuner/judge/ranking.h), unless the noise model
// (tuner/judge/noise.h) finds its lead over the baseline within the noise, the very verdict the
// report prints as "within the noise": then the baseline's setting, and the first line on stderr
// and the script's header say why and how to write the best anyway (`--trial N`). A best whose
// lead could not be judged (the noise is unknown, no baseline, a baseline that did not complete)
// is written, with a line saying so. `--trial N` writes trial N, any completed trial that is not
// a re-run; when N is not shown to beat the baseline, the header and stderr say that too.
//
// The value named is the setting's believed value (tuner/judge/reruns.h, setting_value): the
// median of its runs and how many, never one lucky run's. Pure functions over a StudyView;
// thread-safe.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"
#include "tuner/judge/reruns.h"

namespace tune::tuner {

struct ExportChoice {
  const search::FrozenTrial* trial = nullptr;  // the trial written; points into the view
  // The setting's believed value; none for a multi-objective study.
  std::optional<SettingValue> value;
  // The line `tune export` prints first on stderr, without "tune: "; "" = nothing to say (the
  // trial written is the best and beats the baseline beyond the noise, or is the baseline).
  std::string warning;
  // Sentences for the script's header, after its first line: why this trial, and how it
  // compares with the baseline.
  std::vector<std::string> notes;
};

// Errors carry their kind: `bad_input` (a --trial that is missing, unfinished or a re-run; a
// multi-objective study without --trial) is exit 2, `nothing_yet` (no completed trial) exit 1.
struct ExportChoiceError {
  enum class Kind { bad_input, nothing_yet };
  Kind kind = Kind::bad_input;
  std::string message;  // one line, naming the trial
};

// The trial to write: `trial` (--trial N), else the best or, when the best is within the noise
// of the baseline, the baseline. `study_name` is for the messages.
std::expected<ExportChoice, ExportChoiceError> choose_export_trial(
    const search::StudyView& study, const std::string& study_name, std::optional<int> trial);

// The header's "Measured:" text of a single-objective choice: "elapsed_time = 7.9 (median of 5
// runs: its re-runs)", "... (median of 6 runs of this setting, by trials #3, #9 (5 of them
// re-runs))" or "... (one run, not re-measured)". `objective` names the value ("" = "value").
std::string measured_text(const ExportChoice& choice, const std::string& objective);

}  // namespace tune::tuner
