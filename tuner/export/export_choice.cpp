#include "tuner/export/export_choice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tuner/judge/attempts.h"
#include "tuner/judge/noise.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/summary.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;
using search::TrialState;

using Failure = std::unexpected<ExportChoiceError>;

Failure bad_input(std::string message) {
  return Failure({ExportChoiceError::Kind::bad_input, std::move(message)});
}

// "1.037x the baseline", or on the absolute scale "better than the baseline by 0.31".
std::string lead_words(const NoiseLead& lead) {
  if (lead.ratio) return fmt::format("{:.3f}x the baseline", *lead.ratio);
  return fmt::format("{} than the baseline by {}", lead.difference >= 0 ? "better" : "worse",
                     format_short(std::abs(lead.difference)));
}

// Shown to beat the baseline: the noise model's lead is beyond the noise, the right way round.
bool shown_better(const NoiseLead& lead) {
  return lead.verdict == NoiseVerdict::beyond && lead.difference > 0;
}

// How a lead that is not shown better stands, as the end of a sentence about the trial.
std::string not_shown_words(const NoiseLead& lead) {
  switch (lead.verdict) {
    case NoiseVerdict::within:
      return fmt::format("is within the noise of the baseline (trial {})", lead.other);
    case NoiseVerdict::unknown:
      return fmt::format(
          "was not judged against the noise, which is unknown, so it is not shown to beat the "
          "baseline (trial {})",
          lead.other);
    case NoiseVerdict::beyond:
      break;
  }
  return fmt::format("is worse than the baseline (trial {}) beyond the noise", lead.other);
}

// Why the trial has no lead over the baseline: none enqueued, or the baseline did not complete
// (or is a trial that is not ranked).
std::string no_baseline_words(const search::StudyView& study, const FrozenTrial* baseline) {
  if (baseline == nullptr)
    return "the study enqueued no baseline (add `enqueue:` with the defaults)";
  if (const auto* first = first_baseline_trial(study))
    if (auto problem = baseline_problem(attempts_at(study, *first)); !problem.empty())
      return problem;
  if (baseline->state == search::TrialState::complete && measured_under_load(*baseline))
    return fmt::format("the baseline trial #{} was measured under load", baseline->number);
  return fmt::format("the baseline trial #{} did not complete ({})", baseline->number,
                     search::to_string(baseline->state));
}

// The best's lead decides: within the noise, the baseline is written instead.
void choose_by_lead(const search::StudyView& study, const FrozenTrial& best, ExportChoice& c) {
  const FrozenTrial* baseline = find_baseline(study);
  if (baseline != nullptr && baseline->number == best.number) {
    c.notes.push_back(
        "The best trial is the baseline: no setting tried beat the one the study started from.");
    return;
  }
  const auto noise = assess_noise(study, {.candidate = best.number});
  if (!noise.over_baseline) {
    const auto why = no_baseline_words(study, baseline);
    c.warning = fmt::format(
        "the best (trial {}) was not compared with a baseline: {}; exporting it", best.number, why);
    c.notes.push_back(fmt::format("The best trial, not compared with a baseline: {}.", why));
    return;
  }
  const auto& lead = *noise.over_baseline;
  if (shown_better(lead)) {
    c.notes.push_back(fmt::format("The best trial: against the baseline (trial #{}) {}.",
                                  lead.other, lead_text(lead)));
    return;
  }
  if (lead.verdict == NoiseVerdict::within) {
    c.trial = baseline;
    c.warning = fmt::format(
        "the best (trial {}, {}) is within the noise of the baseline: exporting the baseline "
        "(trial {}); pass --trial {} to export the best anyway",
        best.number, lead_words(lead), lead.other, best.number);
    c.notes.push_back(
        fmt::format("The baseline, not the best: the best, trial #{}, against it: {}. `tune export "
                    "--trial {}` writes it anyway; `tune confirm STUDY` re-measures both.",
                    best.number, lead_text(lead), best.number));
    return;
  }
  c.warning = fmt::format("the best (trial {}, {}) {}: exporting it", best.number, lead_words(lead),
                          not_shown_words(lead));
  c.notes.push_back(fmt::format(
      "The best trial, not shown to beat the baseline (trial #{}): {}. `tune confirm STUDY` "
      "re-measures both.",
      lead.other, lead_text(lead)));
}

// A trial the user picked: written whatever its lead; the header and stderr say how it stands.
void describe_pick(const search::StudyView& study, const FrozenTrial& picked, ExportChoice& c) {
  const FrozenTrial* baseline = find_baseline(study);
  if (baseline != nullptr && baseline->number == picked.number) {
    c.notes.push_back(fmt::format(
        "Trial #{} (--trial), the baseline: the setting the study started from.", picked.number));
    return;
  }
  const auto noise = assess_noise(study, {.candidate = picked.number});
  if (!noise.over_baseline) {
    const auto why = no_baseline_words(study, baseline);
    c.warning = fmt::format("trial {} was not compared with a baseline: {}; exporting it as asked",
                            picked.number, why);
    c.notes.push_back(
        fmt::format("Trial #{} (--trial), not compared with a baseline: {}.", picked.number, why));
    return;
  }
  const auto& lead = *noise.over_baseline;
  if (shown_better(lead)) {
    c.notes.push_back(fmt::format("Trial #{} (--trial): against the baseline (trial #{}) {}.",
                                  picked.number, lead.other, lead_text(lead)));
    return;
  }
  c.warning = fmt::format("trial {} ({}) {}: exporting it as asked", picked.number,
                          lead_words(lead), not_shown_words(lead));
  c.notes.push_back(
      fmt::format("Trial #{} (--trial), not shown to beat the baseline (trial #{}): {}.",
                  picked.number, lead.other, lead_text(lead)));
}

}  // namespace

std::expected<ExportChoice, ExportChoiceError> choose_export_trial(const search::StudyView& study,
                                                                   const std::string& study_name,
                                                                   std::optional<int> trial) {
  ExportChoice c;
  const bool multi = study.is_multi_objective();
  if (trial) {
    const auto& trials = study.trials();
    const auto it = std::find_if(trials.begin(), trials.end(),
                                 [&](const FrozenTrial& t) { return t.number == *trial; });
    if (it == trials.end())
      return bad_input(fmt::format("--trial {}: no such trial in study '{}' ({} trials)", *trial,
                                   study_name, trials.size()));
    if (const auto of = rerun_of(*it))
      return bad_input(fmt::format(
          "--trial {}: trial #{} is a re-run of trial #{} (its run counts toward #{}'s value); "
          "export --trial {}",
          *trial, *trial, *of, *of, *of));
    if (it->state != TrialState::complete)
      return bad_input(fmt::format(
          "--trial {}: trial #{} did not complete ({}); pick a COMPLETE trial (`tune trials "
          "STUDY` lists them)",
          *trial, *trial, search::to_string(it->state)));
    c.trial = &*it;
    if (!multi) describe_pick(study, *it, c);
  } else if (multi) {
    const auto front = front_trials(study);
    if (front.empty())
      return Failure({ExportChoiceError::Kind::nothing_yet,
                      fmt::format("study '{}' has no completed trial to export yet", study_name)});
    std::vector<int> numbers;
    for (const auto* t : front) numbers.push_back(t->number);
    return bad_input(fmt::format(
        "study '{}' has {} objectives and no single best trial: pick one of its Pareto front "
        "with --trial N (front: {})",
        study_name, study.directions().size(), fmt::join(numbers, ", ")));
  } else {
    const FrozenTrial* best = best_trial(study);
    if (best == nullptr)
      return Failure({ExportChoiceError::Kind::nothing_yet,
                      fmt::format("study '{}' has no completed trial to export yet", study_name)});
    c.trial = best;
    choose_by_lead(study, *best, c);
    // Said in the script's header, and on the terminal.
    if (best_measured_under_load(study, *best)) {
      c.notes.insert(c.notes.begin(), fmt::format("The best trial, {}.", k_best_under_load_text));
      if (c.warning.empty())
        c.warning = fmt::format("the best (trial {}) was {}", best->number, k_best_under_load_text);
    }
  }
  if (!multi) c.value = setting_value(study, c.trial->params);
  return c;
}

std::string measured_text(const ExportChoice& choice, const std::string& objective) {
  const std::string name = objective.empty() ? "value" : objective;
  if (!choice.value) {
    if (choice.trial && choice.trial->value)
      return fmt::format("{} = {} (one run)", name, format_value(*choice.trial->value));
    return "no value";
  }
  const auto& v = *choice.value;
  std::string how;
  if (v.runs == 1) {
    how = v.reruns == 1 ? "one run: its one re-run" : "one run, not re-measured";
  } else if (v.trials.size() == 1) {
    how = fmt::format("median of {} runs: its re-runs", v.runs);
  } else {
    how = fmt::format("median of {} runs of this setting, by trials #{}", v.runs,
                      fmt::join(v.trials, ", #"));
    if (v.reruns > 0) how += fmt::format(" ({} of them re-runs)", v.reruns);
  }
  return fmt::format("{} = {} ({})", name, format_value(v.value), how);
}

}  // namespace tune::tuner
