#include "tuner/cli/confirm.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>

#include "tuner/base/trial_attrs.h"
#include "tuner/cli/subcommands.h"
#include "tuner/judge/summary.h"
#include "tuner/probing/probe_hooks.h"
#include "tuner/report/report.h"
#include "tuner/report/report_cells.h"
#include "tuner/run/baselines.h"
#include "tuner/storage/study_cache.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

namespace {

// The fixed_params of each trial the plan re-runs, by its number.
Result<std::map<int, nlohmann::json>> fixed_params_by_number(const search::StudyView& study,
                                                             const ConfirmPlan& plan,
                                                             const search::SearchSpace& space) {
  const auto& trials = study.trials();
  std::map<int, nlohmann::json> fixed;
  for (int n : plan.originals) {
    const auto& trial = *std::find_if(trials.begin(), trials.end(),
                                      [&](const FrozenTrial& t) { return t.number == n; });
    auto f = fixed_params_of(trial, space);
    if (!f) return std::unexpected(f.error());
    fixed[n] = std::move(*f);
  }
  return fixed;
}

void print_plan(std::ostream& out, const std::string& study_name, int repeats,
                const ConfirmPlan& plan, const search::StudyView& study, int waiting_before) {
  std::string who;
  const auto* baseline = find_baseline(study);
  const auto* rule = best_rule_trial(ranked_trials(study));
  for (int n : plan.originals) {
    if (!who.empty()) who += ", ";
    who += fmt::format("#{}", n);
    if (baseline && baseline->number == n) who += " (baseline)";
    if (rule && rule->number == n)
      who += fmt::format(" (best rule: {})", fmt::join(rules_of(*rule), ", "));
  }
  if (!plan.originals.empty())
    out << fmt::format("confirm '{}': {} re-runs each of {}, interleaved: {} trials\n", study_name,
                       repeats, who, plan.order.size());
  if (!plan.note.empty()) out << "note: " << plan.note << '\n';
  if (waiting_before > 0)
    out << fmt::format("note: {} trial(s) already waiting in the study run first\n",
                       waiting_before);
}

// Enqueues the plan's re-runs as WAITING trials, each naming its original and its round.
Result<void> enqueue_reruns(Storage& storage, const StudyCache& study, const ConfirmPlan& plan,
                            const std::map<int, nlohmann::json>& fixed) {
  const auto& trials = study.trials();
  std::vector<int> round(static_cast<std::size_t>(trials.empty() ? 0 : trials.back().number + 1));
  for (int n : plan.order) {
    const int r = round.at(static_cast<std::size_t>(n))++;
    auto t = storage.create_trial(
        study.study().study_id, TrialState::waiting,
        {{k_attr_fixed_params, fixed.at(n)}, {k_attr_rerun_of, n}, {k_attr_rerun_round, r}});
    if (!t) return std::unexpected(t.error().message);
  }
  return {};
}

// The runner for `trials` waiting trials: pruner off, probes on when the study file asks.
Result<std::unique_ptr<StudyRunner>> open_rerun_runner(StudySpec spec,
                                                       const ConfirmOptions& options, int trials,
                                                       std::ostream& out) {
  RunOptions run_options;
  run_options.trials = trials;
  run_options.storage_override = options.storage_override;
  run_options.quiet = options.quiet;
  run_options.prune = false;  // a re-measurement runs whole, or its median means nothing
  auto runner = StudyRunner::open(std::move(spec), run_options);
  if (!runner && runner.error().study_file_changed) throw BadInput(runner.error().message);
  if (!runner) return std::unexpected(runner.error().message);
  if (const auto probes = attach_probes(**runner); probes.warning)
    out << "warning: " << *probes.warning << "; re-runs go without probes\n";
  return std::move(*runner);
}

void print_confirmed(std::ostream& out, StudyRunner& runner, const ConfirmPlan& plan) {
  ReportOptions report_options;
  report_options.importance = false;
  const auto data =
      build_report(runner.cache(), runner.spec().name, runner.spec().space, report_options);
  out << "\nconfirmed (median of the re-runs; the search run in brackets):\n";
  for (int n : plan.originals) {
    for (const auto& r : data.trials) {
      if (r.number != n || r.rerun_of) continue;
      out << fmt::format("  #{:<4} {:>12}  n={} ({} failed)  [{}]{}\n", n,
                         r.median ? format_value(*r.median) : "-", r.rerun_values.size(),
                         r.reruns_failed, r.value ? format_value(*r.value) : "-",
                         role_text(r).empty() ? "" : "  " + role_text(r));
    }
  }
  if (data.best) out << fmt::format("best: #{} ({})\n", data.best->number, data.best_basis);
  if (data.speedup) out << "speedup over baseline: " << speedup_text(*data.speedup) << '\n';
  if (data.rule_speedup)
    out << fmt::format("speedup over the best rule #{} ({}): {}\n", data.best_rule->number,
                       fmt::join(data.best_rule->rules, ", "), speedup_text(*data.rule_speedup));
  // What the re-runs say of the noise, as the summary at the end of `tune` says it.
  print_noise(out, runner.cache());
}

}  // namespace

Result<RunTotals> run_confirm(StudySpec spec, const ConfirmOptions& options, std::ostream& out) {
  if (spec.directions.size() > 1)  // its top trials by one objective would hide the trade-off
    return std::unexpected(
        fmt::format("{}: tune confirm ranks trials by one objective; this study has {}", spec.file,
                    spec.directions.size()));
  const std::string url = storage_url_for(spec, options.storage_override);
  auto opened = open_existing_study(url, "", spec.name, OpenMode::read_write);  // adds trials
  if (!opened) return std::unexpected(opened.error());
  if (opened->cache->direction() != spec.direction)
    return std::unexpected(
        fmt::format("{}: direction differs from the stored study '{}'", spec.file, spec.name));
  auto plan = plan_confirm(*opened->cache, options.top, options.repeats);
  if (!plan) return std::unexpected(plan.error());
  auto fixed = fixed_params_by_number(*opened->cache, *plan, spec.space);
  if (!fixed) return std::unexpected(fixed.error());
  const auto& trials = opened->cache->trials();
  const int waiting_before =
      static_cast<int>(std::count_if(trials.begin(), trials.end(), [](const FrozenTrial& t) {
        return t.state == TrialState::waiting;
      }));
  print_plan(out, spec.name, options.repeats, *plan, *opened->cache, waiting_before);
  int retries = 0;
  if (plan->retry_baseline) {
    const auto& failed = *std::find_if(trials.begin(), trials.end(), [&](const FrozenTrial& t) {
      return t.number == *plan->retry_baseline;
    });
    auto made = enqueue_retry(*opened->storage, opened->cache->study().study_id, failed);
    if (!made) return std::unexpected(made.error());
    retries = *made ? 1 : 0;  // else one waits already, counted in waiting_before
  }
  if (auto e = enqueue_reruns(*opened->storage, *opened->cache, *plan, *fixed); !e)
    return std::unexpected(e.error());

  auto runner =
      open_rerun_runner(std::move(spec), options,
                        waiting_before + retries + static_cast<int>(plan->order.size()), out);
  if (!runner) return std::unexpected(runner.error());
  install_interrupt_handlers();
  auto totals = (*runner)->run(out);
  if (!totals) return std::unexpected(totals.error());
  print_confirmed(out, **runner, *plan);
  return *totals;
}

}  // namespace tune::tuner
