#include "tuner/report/report_model.h"


#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "probes/cpu_profile.h"
#include "probes/library_report.h"
#include "search/importance.h"
#include "tuner/base/stats.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/attempts.h"
#include "tuner/judge/reruns.h"
#include "tuner/report/report_cells.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;
using search::TrialState;

std::string kind_of(const search::Distribution& dist) {
  if (std::holds_alternative<search::FloatDistribution>(dist)) return "float";
  if (std::holds_alternative<search::IntDistribution>(dist)) return "int";
  return "categorical";
}

ParamAxis axis_of(const std::string& name, const search::Distribution& dist) {
  ParamAxis a;
  a.name = name;
  a.kind = kind_of(dist);
  if (const auto* f = std::get_if<search::FloatDistribution>(&dist)) {
    a.low = f->low;
    a.high = f->high;
    a.log = f->log;
  } else if (const auto* i = std::get_if<search::IntDistribution>(&dist)) {
    a.low = static_cast<double>(i->low);
    a.high = static_cast<double>(i->high);
    a.log = i->log;
  } else {
    for (const auto& c : std::get<search::CategoricalDistribution>(dist).choices)
      a.choices.push_back(search::param_value_to_string(c));
  }
  return a;
}

// The probe verdict line of a trial: the observed diagnosis, else the prediction's summary; and
// whether its CPUs were oversubscribed, as the live line says it (prediction_quality.h).
void read_probe(const FrozenTrial& t, ReportTrial& r) {
  r.oversubscribed = cpu_verdict(t).oversubscribed;
  if (auto it = t.system_attrs.find(k_attr_probe_verdict); it != t.system_attrs.end()) {
    r.cpu_time = probes::read_cpu_time(*it).line();
    if (it->is_object()) r.probe = it->value("diagnosis", std::string());
  }
  if (auto it = t.system_attrs.find(k_attr_probe_prediction);
      r.probe.empty() && it != t.system_attrs.end() && it->is_object()) {
    const auto summary = it->value("summary", std::string());
    if (!summary.empty()) r.probe = "predicted: " + summary;
  }
  // What the libraries said, where it costs: a kernel older than the CPU, two OpenMP runtimes.
  if (auto it = t.system_attrs.find(k_attr_probe_libraries); it != t.system_attrs.end()) {
    const auto libraries = probes::LibrariesSummary::from_json(*it);
    const std::string clause = libraries ? libraries->verdict_clause() : "";
    if (!clause.empty()) r.probe += (r.probe.empty() ? "" : "; ") + clause;
  }
}

std::string fail_reason_of(const FrozenTrial& t) {
  for (const auto* attrs : {&t.system_attrs, &t.user_attrs}) {
    if (auto it = attrs->find(k_attr_fail_reason); it != attrs->end() && it->is_string())
      return it->get<std::string>();
  }
  return "";
}

ReportTrial make_trial(const FrozenTrial& t, const search::SearchSpace& space,
                       std::optional<std::chrono::system_clock::time_point> origin) {
  ReportTrial r;
  r.number = t.number;
  r.state = t.state;
  // A re-measured trial shows its own run (its stored value is the believed one); a re-run,
  // stored as PRUNED so that Optuna does not rank it, shows as the measurement it is (judge/reruns.h).
  r.value = search_value(t);
  r.values = t.values;
  r.feasible = t.is_feasible();
  r.rerun_of = rerun_of(t);
  if (r.rerun_of) {
    if (const auto v = rerun_value(t)) {
      r.state = TrialState::complete;
      r.value = v;
    }
  }
  for (const auto& [name, dist] : space) {
    const auto p = t.params.find(name);
    if (p == t.params.end()) continue;
    const auto d = t.distributions.find(name);
    const auto external =
        search::to_external(d != t.distributions.end() ? d->second : dist, p->second);
    r.params.push_back({name, search::param_value_to_json(external), format_param_value(external)});
  }
  if (auto it = t.user_attrs.find(k_attr_wall_time); it != t.user_attrs.end() && it->is_number())
    r.wall_s = it->get<double>();
  if (origin && t.datetime_start) {
    r.start_s = std::chrono::duration<double>(*t.datetime_start - *origin).count();
    if (t.datetime_complete)
      r.end_s = std::chrono::duration<double>(*t.datetime_complete - *origin).count();
  }
  r.fail_reason = fail_reason_of(t);
  if (auto it = t.user_attrs.find(k_attr_external_cpu); it != t.user_attrs.end() && it->is_number())
    r.external_cpus = it->get<double>();
  r.under_load = measured_under_load(t);
  r.rules = rules_of(t);
  if (auto it = t.system_attrs.find(k_attr_first_guess); it != t.system_attrs.end())
    r.first_guess = it->is_boolean() && it->get<bool>();
  if (auto it = t.user_attrs.find(k_attr_programs); it != t.user_attrs.end())
    r.programs = programs_from_json(*it);
  read_probe(t, r);
  return r;
}

// The space to report on: the study file's, else every parameter the trials carry, in the
// order they first appear.
search::SearchSpace effective_space(const search::StudyView& study,
                                    const search::SearchSpace& given) {
  if (!given.empty()) return given;
  search::SearchSpace space;
  for (const auto& t : study.trials()) {
    for (const auto& [name, dist] : t.distributions) {
      const bool known =
          std::any_of(space.begin(), space.end(), [&](const auto& p) { return p.first == name; });
      if (!known) space.emplace_back(name, dist);
    }
  }
  return space;
}

// The search trials (re-runs left out) and their report rows with the re-runs folded
// in as repeats, by trial number.
struct SearchTrials {
  explicit SearchTrials(std::vector<search::Direction> directions) : view(std::move(directions)) {}
  search::VectorStudyView view;
  std::map<int, ReportTrial> by_number;
};

// Fills data.trials (every trial, number order) and data.reruns; returns the search
// trials with their repeats, medians and failed re-runs counted.
SearchTrials fold_reruns(const search::StudyView& study, const search::SearchSpace& space,
                         ReportData& data) {
  std::optional<std::chrono::system_clock::time_point> origin;
  for (const auto& t : study.trials()) {
    if (t.datetime_start && (!origin || *t.datetime_start < *origin)) origin = t.datetime_start;
  }
  SearchTrials folded(study.directions());
  for (const auto& t : study.trials()) {
    auto r = make_trial(t, space, origin);
    data.trials.push_back(r);
    if (r.rerun_of) {
      ++data.reruns;
      continue;
    }
    folded.view.mutable_trials().push_back(t);
    folded.by_number.emplace(t.number, std::move(r));
  }
  for (const auto& r : data.trials) {
    if (!r.rerun_of) continue;
    const auto it = folded.by_number.find(*r.rerun_of);
    if (it == folded.by_number.end()) continue;
    if (r.under_load) continue;  // not one of its values (ranking.h); listed in under_load
    if (r.state == TrialState::complete && r.value) {
      it->second.rerun_values.push_back(*r.value);
    } else if (r.state != TrialState::running && r.state != TrialState::waiting) {
      ++it->second.reruns_failed;
    }
  }
  for (auto& [number, r] : folded.by_number) {
    if (!r.rerun_values.empty()) r.median = median(r.rerun_values);
  }
  // The copies in data.trials get the folded repeats too (the JSON lists them with each trial).
  for (auto& r : data.trials) {
    if (auto it = folded.by_number.find(r.number); it != folded.by_number.end() && !r.rerun_of)
      r = it->second;
  }
  return folded;
}

// A trial's believed value: the median of its re-runs, else its own run's.
std::optional<double> believed(const ReportTrial& r) { return r.median ? r.median : r.value; }

// The first guess's trial, its prediction and reasoning as the runner stored them, and what it
// measured; factors are "x the baseline" (a time's ratio inverted for a minimized objective).
std::optional<GuessSummary> guess_summary(const search::StudyView& study, const ReportData& data,
                                          const std::map<int, ReportTrial>& by_number) {
  if (data.multi_objective()) return std::nullopt;
  for (const auto& t : study.trials()) {
    const auto found = by_number.find(t.number);  // re-runs are folded, not listed
    if (found == by_number.end() || !found->second.first_guess) continue;
    GuessSummary g;
    g.number = t.number;
    const ReportTrial& r = found->second;
    for (const auto& p : r.params) {
      const bool same =
          data.baseline && std::ranges::any_of(data.baseline->params, [&](const ReportParam& b) {
            return b.name == p.name && b.value == p.value;
          });
      if (!same)
        g.changed += fmt::format("{}{}={}", g.changed.empty() ? "" : " ", p.name, p.short_text);
    }
    if (auto p = t.system_attrs.find(k_attr_guess_predicted);
        p != t.system_attrs.end() && p->is_number())
      g.predicted = p->get<double>();
    if (auto why = t.system_attrs.find(k_attr_guess_reasoning);
        why != t.system_attrs.end() && why->is_array())
      for (const auto& line : *why)
        if (line.is_string()) g.reasoning.push_back(line.get<std::string>());
    if (r.state == search::TrialState::complete) g.measured = believed(r);
    const auto base = data.baseline ? believed(*data.baseline) : std::nullopt;
    const auto factor = [&](double v) {
      return data.direction == "maximize" ? v / *base : *base / v;
    };
    if (base && *base > 0) {
      if (g.predicted && *g.predicted > 0) g.predicted_factor = factor(*g.predicted);
      if (g.measured && *g.measured > 0) g.measured_factor = factor(*g.measured);
    }
    return g;
  }
  return std::nullopt;
}

// The trials measured under load, with the quiet re-runs that stand for each.
std::vector<LoadedTrial> loaded_trials(const search::StudyView& study) {
  std::vector<LoadedTrial> out;
  for (const auto& t : study.trials()) {
    if (!measured_under_load(t)) continue;
    const auto& attr = t.user_attrs.at(k_attr_measured_under_load);
    LoadedTrial l;
    l.number = t.number;
    l.rerun_of = rerun_of(t);
    if (attr.is_object()) {
      l.external_cpus = attr.value("external_cpus", 0.0);
      l.limit = attr.value("limit", 0.0);
    }
    if (auto it = t.user_attrs.find(k_attr_rank_cpu_share);
        it != t.user_attrs.end() && it->is_number())
      l.rank_cpu_share = it->get<double>();
    if (!l.rerun_of) {
      for (const auto& r : study.trials())
        if (rerun_of(r) == t.number && trusted_run(r) && rerun_value(r))
          l.quiet_reruns.push_back(r.number);
    }
    out.push_back(std::move(l));
  }
  return out;
}

// The best trial is the ranking rules' (tuner/judge/ranking.h), as in `tune best` and the live
// line: the first ranked trial by its stored value, which for a re-measured trial is the median
// of its re-runs. Sets data.best and data.best_basis.
void choose_best(const std::vector<const FrozenTrial*>& ranked, const SearchTrials& folded,
                 ReportData& data) {
  const ReportTrial* best = ranked.empty() ? nullptr : &folded.by_number.at(ranked.front()->number);
  if (best != nullptr && best->median) {
    const auto [lo, hi] = std::minmax_element(best->rerun_values.begin(), best->rerun_values.end());
    data.best_basis = fmt::format("best median of {} re-runs", best->rerun_values.size());
    // How far apart its re-measurements lie, relative to their median: how far to trust it.
    if (best->rerun_values.size() > 1 && *best->median != 0)
      data.best_basis +=
          fmt::format(" (spread {:.1f}%)", 100 * (*hi - *lo) / std::abs(*best->median));
  } else if (best != nullptr) {
    data.best_basis = "best single run";
  }
  if (best != nullptr) {
    data.best = *best;
    data.best->baseline = data.baseline && data.baseline->number == best->number;
  }
}

// A multi-objective study: the Pareto front of the search trials in place of a best trial (one
// objective's ranking would hide the trade-off the user asked to see).
void add_front(const SearchTrials& folded, ReportData& data) {
  const auto directions = folded.view.directions();
  data.directions.clear();
  for (std::size_t i = 0; i < directions.size(); ++i) {
    data.directions.emplace_back(directions[i] == search::Direction::maximize ? "maximize"
                                                                              : "minimize");
    if (data.objectives.size() <= i) data.objectives.push_back(fmt::format("objective {}", i));
  }
  // The header's one line: "minimize objective 0, maximize objective 1".
  data.direction = objectives_text(data);
  data.objective.clear();
  for (const auto* t : front_trials(folded.view))
    data.front.push_back(folded.by_number.at(t->number));
  data.best.reset();
  data.best_basis = "none: a multi-objective study has a Pareto front, not one best trial";
  data.top.clear();
  data.speedup.reset();
  data.speedup_note = "a multi-objective study has no single best trial to compare";
  // The HTML's charts read one value per trial: the first objective's (each objective's
  // importance is in importance_by_objective).
  if (!data.importance.empty()) data.importance_note += "; of the first objective";
}

// The speedup of data.best over `other` (the baseline, the best rule), or `note` saying why there
// is none. Each side stands on its believed value (ranking.h): the median of its re-runs, else
// its one run; the interval and the verdict are the noise model's lead over it (noise.h).
// `what` names the other side in the texts: "baseline", "best rule".
std::optional<SpeedupEstimate> estimate_speedup(search::Direction direction, const ReportData& data,
                                                const ReportTrial& other,
                                                const std::optional<NoiseLead>& lead,
                                                const std::string& what, std::string& note) {
  if (!data.best) {
    note = "no completed trial";
    return std::nullopt;
  }
  if (other.under_load && !other.median) {
    note = fmt::format(
        "the {} trial #{} was measured under load and no re-run measured it without: no "
        "speedup against it",
        what, other.number);
    return std::nullopt;
  }
  if (!other.value && !other.median) {
    note =
        fmt::format("the {} trial #{} did not complete ({})", what, other.number,
                    other.fail_reason.empty() ? search::to_string(other.state) : other.fail_reason);
    return std::nullopt;
  }
  const double best = *believed(*data.best), base = *believed(other);
  if (!(best > 0) || !(base > 0)) {
    note = "objective values are not all positive: no ratio";
    return std::nullopt;
  }
  SpeedupEstimate s;
  // Speedup > 1 means better: time ratio base/best when minimizing, best/base otherwise.
  s.ratio = direction == search::Direction::maximize ? best / base : base / best;
  const auto runs = [](const ReportTrial& r) {
    return r.median ? static_cast<int>(r.rerun_values.size()) : 1;
  };
  s.n_best = runs(*data.best);
  s.n_baseline = runs(other);
  if (data.best->median && other.median) {
    s.basis = fmt::format("medians of {} + {} re-runs", s.n_best, s.n_baseline);
  } else if (data.best->median) {
    s.basis = fmt::format("median of {} re-runs against one run", s.n_best);
  } else if (other.median) {
    s.basis = fmt::format("one run against a median of {} re-runs", s.n_baseline);
  } else {
    s.basis = "single runs";
  }
  if (data.best->number == other.number) {
    s.note = fmt::format("the {} is the best trial", what);
    return s;
  }
  if (lead && lead->ratio) {
    s.ci_low = lead->low;
    s.ci_high = lead->high;
    s.ci_method = lead->method;
    s.verdict = lead->verdict;
  }
  switch (s.verdict) {
    case NoiseVerdict::beyond:
      break;
    case NoiseVerdict::within:
      s.note = fmt::format("within the noise: not shown to be faster than the {}", what);
      break;
    case NoiseVerdict::unknown:
      s.note =
          "not judged against the noise, which is unknown: measure it with `tune confirm STUDY "
          "--repeats 5`";
      break;
  }
  return s;
}

// The speedups over the baseline and over the best rule baseline (data.speedup, rule_speedup).
void estimate_speedups(search::Direction direction, ReportData& data) {
  if (!data.baseline) {
    data.speedup_note =
        "no baseline: the study enqueued no trial (add `enqueue:` with the defaults)";
  } else {
    data.speedup = estimate_speedup(direction, data, *data.baseline, data.noise.over_baseline,
                                    "baseline", data.speedup_note);
  }
  if (!data.best_rule) {
    data.rule_speedup_note = "no rule baseline completed (`rules:` in the study file)";
  } else {
    data.rule_speedup =
        estimate_speedup(direction, data, *data.best_rule, data.noise.over_best_rule, "best rule",
                         data.rule_speedup_note);
    if (data.rule_speedup && data.rule_speedup->verdict != NoiseVerdict::beyond && data.best &&
        data.best->number != data.best_rule->number)
      data.rule_speedup->note +=
          fmt::format("; the best rule: {}", fmt::join(data.best_rule->rules, ", "));
  }
}

// fANOVA parameter importance over the completed search trials, of objective `objective` (its
// value in each trial's values; none: the single objective). Shares and how they were computed,
// or empty shares and why not.
std::pair<std::vector<search::ImportanceShare>, std::string> importance_of(
    const search::StudyView& search_view, const search::SearchSpace& space,
    std::optional<std::size_t> objective, const ReportOptions& options) {
  if (space.empty()) return {{}, "unavailable: the study has no parameters"};
  std::vector<FrozenTrial> complete;
  for (const auto& t : search_view.trials()) {
    if (t.state != TrialState::complete || !t.value) continue;
    if (objective && *objective >= t.values.size()) continue;
    complete.push_back(t);
    if (objective) complete.back().value = t.values[*objective];
  }
  search::ImportanceOptions fanova;
  fanova.resamples = options.importance_resamples;
  auto imp = search::fanova_importance_with_interval(complete, space, fanova);
  if (!imp) return {{}, "unavailable: " + imp.error()};
  std::string note = fmt::format("fANOVA over {} completed trials", complete.size());
  if (fanova.resamples > 0)
    note += fmt::format("; {:.0f}% intervals over {} forests fit to bootstrap resamples",
                        100 * fanova.interval, fanova.resamples);
  return {std::move(*imp), note};
}

// Whether the shares rank anything, from the noise model's test of the settings.
void judge_importance(ReportData& data) {
  if (data.importance.empty() || !data.noise.assessed) return;
  data.importance_verdict = data.noise.settings_verdict;
  switch (data.importance_verdict) {
    case NoiseVerdict::beyond:
      break;
    case NoiseVerdict::within:
      data.importance_caveat =
          "no ranking: the study cannot tell its settings apart (see Noise), so the shares would "
          "only split noise between the parameters";
      break;
    case NoiseVerdict::unknown:
      // Unknown noise, or settings that could not be compared with it (one setting; a run
      // without an interval among runs with one).
      data.importance_caveat = data.noise.noise.known()
                                   ? "not judged against the noise (see Noise): these shares may "
                                     "rank parameters by noise"
                                   : "the noise is unknown (see Noise): these shares may rank "
                                     "parameters by noise";
      break;
  }
}

void add_importance(const search::StudyView& search_view, const search::SearchSpace& space,
                    const ReportOptions& options, ReportData& data) {
  if (!options.importance) {
    data.importance_note = "not computed";
    return;
  }
  if (!search_view.is_multi_objective()) {
    std::tie(data.importance, data.importance_note) =
        importance_of(search_view, space, std::nullopt, options);
    judge_importance(data);
    return;
  }
  for (std::size_t i = 0; i < search_view.directions().size(); ++i) {
    auto [shares, note] = importance_of(search_view, space, i, options);
    data.importance_by_objective.push_back({std::move(shares), std::move(note)});
  }
  // The first objective's again for the HTML chart: the forest is not fitted twice.
  data.importance = data.importance_by_objective.front().shares;
  data.importance_note = data.importance_by_objective.front().note;
}

// Failure reasons, most frequent first (re-runs included: they fail for the same
// reasons).
std::vector<FailureGroup> group_failures(const std::vector<ReportTrial>& trials) {
  std::map<std::string, std::vector<int>> reasons;
  for (const auto& r : trials) {
    if (r.state == TrialState::complete || r.fail_reason.empty()) continue;
    reasons[r.fail_reason].push_back(r.number);
  }
  std::vector<FailureGroup> groups;
  for (auto& [reason, numbers] : reasons) groups.push_back({reason, std::move(numbers)});
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.trials.size() > b.trials.size(); });
  return groups;
}

}  // namespace

std::string ReportTrial::state_text() const {
  return rerun_of && state == TrialState::complete ? "RERUN" : search::to_string(state);
}

std::string ReportTrial::params_text() const {
  std::string out;
  for (const auto& p : params) {
    if (!out.empty()) out += ' ';
    out += p.name + '=' + p.short_text;
  }
  return out;
}

bool ReportData::any_completed() const {
  return std::ranges::any_of(trials, [](const ReportTrial& r) {
    return r.state == TrialState::complete && r.value && !r.rerun_of;
  });
}

bool ReportData::any_probe() const {
  return prediction.trials > 0 || figure.trials > 0 ||
         std::ranges::any_of(trials, [](const ReportTrial& r) { return !r.probe.empty(); });
}

ReportData build_report(const search::StudyView& study, const std::string& study_name,
                        const search::SearchSpace& given_space, const ReportOptions& options) {
  ReportData data;
  data.study = study_name;
  const auto direction = study.direction();
  data.direction = direction == search::Direction::maximize ? "maximize" : "minimize";
  const auto space = effective_space(study, given_space);
  for (const auto& [name, dist] : space) data.axes.push_back(axis_of(name, dist));

  const auto folded = fold_reruns(study, space, data);
  data.counts = count_states(folded.view);

  if (const auto* b = find_baseline(folded.view)) {
    data.baseline = folded.by_number.at(b->number);
    data.baseline->baseline = true;
    for (auto& r : data.trials) {
      if (r.number == b->number) r.baseline = true;
    }
  }
  const auto ranked = ranked_trials(study);  // the full study: re-runs give the medians
  for (const auto* t : ranked) {
    if (static_cast<int>(data.top.size()) >= options.top_n) break;
    data.top.push_back(folded.by_number.at(t->number));
    data.top.back().baseline = data.baseline && data.baseline->number == t->number;
  }
  choose_best(ranked, folded, data);
  if (data.best && !ranked.empty() && best_measured_under_load(study, *ranked.front())) {
    data.best_under_load = true;
    data.best_basis += ", " + std::string(k_best_under_load_text);
  }
  data.noise = assess_noise(study, {options.bootstrap_samples, options.seed});
  if (data.noise.best_rule >= 0) data.best_rule = folded.by_number.at(data.noise.best_rule);
  estimate_speedups(direction, data);
  // A baseline that never completed: whether the next run tries it again, or what to do.
  if (const auto* first = first_baseline_trial(study); first != nullptr && !data.speedup) {
    if (auto problem = baseline_problem(attempts_at(study, *first)); !problem.empty())
      data.speedup_note = std::move(problem);
  }
  add_importance(folded.view, space, options, data);
  data.failures = group_failures(data.trials);
  data.under_load = loaded_trials(study);
  data.first_guess = guess_summary(study, data, folded.by_number);
  data.libraries = libraries_section(study, data);
  if (study.is_multi_objective()) add_front(folded, data);
  data.prediction = prediction_quality(study.trials());
  const auto costs = verdict_costs(study);
  data.figure = figure_quality(costs);
  for (auto& r : data.trials)
    if (const auto it = costs.find(r.number); it != costs.end()) r.cost = it->second;
  return data;
}

}  // namespace tune::tuner
