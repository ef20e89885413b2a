// Which trial `tune export` writes and what it says of it: the best, or the baseline when the
// best's lead is within the noise, or `--trial N`; the value named is the setting's believed one.
// Pure functions over a StudyView; thread-safe.
// Design: docs/design-notes.md#tunerexportexport_choiceh
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
