#include "tuner/run/summary.h"

#include "search/pareto.h"
#include "tuner/run/ranking.h"
#include "tuner/run/prediction_quality.h"
#include "tuner/run/rerun.h"
#include "tuner/base/trial_attrs.h"

#include <fmt/format.h>
#include <ostream>

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

StateCounts count_states(const search::StudyView& study) {
  StateCounts c;
  for (const auto& t : study.trials()) {
    if (is_rerun(t)) {
      ++c.reruns;
      continue;
    }
    switch (t.state) {
      case TrialState::complete:
        ++c.complete;
        break;
      case TrialState::pruned:
        ++c.pruned;
        break;
      case TrialState::fail:
        ++c.fail;
        break;
      case TrialState::running:
        ++c.running;
        break;
      case TrialState::waiting:
        ++c.waiting;
        break;
    }
  }
  return c;
}

std::string best_so_far(const search::StudyView& study) {
  if (study.is_multi_objective()) {
    const auto front = front_trials(study);
    if (front.empty()) return "";
    std::string out = "  | front";
    for (const auto* t : front) out += fmt::format(" #{}", t->number);
    return out;
  }
  const auto* best = best_trial(study);
  return best ? fmt::format("  | best #{} = {}", best->number, format_value(*best->value)) : "";
}

std::string format_value(double value) { return fmt::format("{:.6g}", value); }

std::string format_values(const std::vector<double>& values) {
  std::string out;
  for (double v : values) out += (out.empty() ? "" : ", ") + format_value(v);
  return out;
}

std::string describe_objectives(const search::StudyView& study,
                                const std::vector<std::string>& names) {
  const auto directions = study.directions();
  std::string out;
  for (std::size_t i = 0; i < directions.size(); ++i) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ",
                       directions[i] == search::Direction::maximize ? "maximize" : "minimize",
                       i < names.size() ? names[i] : fmt::format("objective {}", i));
  }
  return out;
}

std::string format_params(const FrozenTrial& trial) {
  std::string out;
  for (const auto& [name, internal] : trial.params) {
    const auto it = trial.distributions.find(name);
    if (it == trial.distributions.end()) continue;
    if (!out.empty()) out += ' ';
    // Six significant digits are plenty to tell trials apart on one line; `tune best`, the
    // report and export show the exact value.
    const auto external = search::to_external(it->second, internal);
    const auto* real = std::get_if<double>(&external);
    out += name + '=' + (real ? format_value(*real) : search::param_value_to_string(external));
  }
  return out;
}

// `tune best` of a multi-objective study: every trial of the front, with its values.
void print_front(std::ostream& out, const search::StudyView& study,
                 const std::vector<std::string>& names) {
  const auto front = front_trials(study);
  if (front.empty()) {
    out << "best: no completed trial yet\n";
    return;
  }
  out << fmt::format("Pareto front ({}): {} trials\n", describe_objectives(study, names),
                     front.size());
  for (const auto* t : front) {
    out << fmt::format("  #{}  values: {}{}  {}\n", t->number,
                       format_values(search::objective_values(*t)),
                       t->is_feasible() ? "" : "  (infeasible)", format_params(*t));
  }
}

std::string state_word(const FrozenTrial& trial) {
  if (is_rerun(trial) && rerun_value(trial)) return "RERUN";
  return search::to_string(trial.state);
}

void print_best(std::ostream& out, const search::StudyView& study,
                const std::vector<std::string>& objective_names) {
  if (study.is_multi_objective()) return print_front(out, study, objective_names);
  const auto* best = best_trial(study);
  if (best == nullptr) {
    out << "best: no completed trial yet\n";
    return;
  }
  out << fmt::format("best trial: #{}  value: {}{}\n", best->number, format_value(*best->value),
                     best->is_feasible() ? "" : "  (infeasible: violates a constraint)");
  out << "best params:";
  for (const auto& [name, internal] : best->params) {
    const auto& dist = best->distributions.at(name);
    out << fmt::format("\n  {} = {}", name,
                       search::param_value_to_string(search::to_external(dist, internal)));
  }
  out << '\n';
}

void print_summary(std::ostream& out, const std::string& study_name, const search::StudyView& study,
                   const std::vector<std::string>& objective_names) {
  const auto c = count_states(study);
  out << fmt::format("study '{}': {} trials: {} complete, {} failed, {} pruned", study_name,
                     c.total(), c.complete, c.fail, c.pruned);
  if (c.reruns) out << fmt::format(", {} re-runs", c.reruns);
  if (c.running) out << fmt::format(", {} running", c.running);
  if (c.waiting) out << fmt::format(", {} waiting", c.waiting);
  out << '\n';
  print_best(out, study, objective_names);
  if (const auto q = prediction_quality_text(prediction_quality(study.trials())); !q.empty())
    out << "probes: " << q << '\n';
}

void print_trials(std::ostream& out, const search::StudyView& study) {
  out << fmt::format("{:>6}  {:<8}  {:>12}  {:>9}  {}\n", "number", "state", "value", "wall_s",
                     "params");
  for (const auto& t : study.trials()) {
    std::string wall = "-";
    if (auto it = t.user_attrs.find(k_attr_wall_time);
        it != t.user_attrs.end() && it->is_number()) {
      wall = fmt::format("{:.2f}", it->get<double>());
    }
    std::vector<std::string> notes;
    // A finished re-run is stored PRUNED without a value (tuner/run/rerun.h): shown as what it
    // is, with its measured value; a re-measured trial's value is the median of its re-runs.
    const std::string state = state_word(t);
    std::string value = !t.values.empty() ? format_values(t.values)
                        : t.value         ? format_value(*t.value)
                                          : "-";
    if (const auto of = rerun_of(t)) {
      notes.push_back(fmt::format("re-run of #{}", *of));
      if (const auto v = rerun_value(t)) value = format_value(*v);
    } else if (const auto own = search_value(t); own && t.value && *own != *t.value) {
      notes.push_back(fmt::format("median of its re-runs; its own run: {}", format_value(*own)));
    }
    if (auto it = t.system_attrs.find(k_attr_fail_reason);
        it != t.system_attrs.end() && it->is_string()) {
      notes.push_back(it->get<std::string>());
    }
    const std::string note = notes.empty() ? "" : fmt::format("  # {}", fmt::join(notes, "; "));
    out << fmt::format("{:>6}  {:<8}  {:>12}  {:>9}  {}{}\n", t.number, state, value, wall,
                       format_params(t), note);
  }
}

}  // namespace tune::tuner
