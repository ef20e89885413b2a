#include "tuner/judge/summary.h"

#include "search/pareto.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/noise.h"
#include "tuner/judge/prediction_quality.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <ostream>
#include <sstream>
#include <string_view>

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

std::string unit_of(const std::string& name) {
  // wall_time: tune's own clock; the others: what the bundled trainer logs (trainer/log_report.h).
  if (name == "wall_time" || name == "elapsed_time") return "s";
  if (name == "samples_per_sec") return "samples/s";
  return "";
}

std::string format_measure(const std::string& name, double value) {
  const auto unit = unit_of(name);
  return fmt::format("{} {}{}{}", name, format_short(value), unit.empty() ? "" : " ", unit);
}

namespace {

// "best #3 1.2 s" for a single-objective study's best trial; "" when there is none.
std::string best_text(const FrozenTrial* best, const std::vector<std::string>& names) {
  if (best == nullptr) return "";
  const auto unit = names.empty() ? "" : unit_of(names.front());
  return fmt::format("best #{} {}{}{}", best->number, format_short(*best->value),
                     unit.empty() ? "" : " ", unit);
}

}  // namespace

std::string best_so_far(const search::StudyView& study, const std::vector<std::string>& names) {
  if (study.is_multi_objective()) {
    constexpr std::size_t k_shown = 6;  // a long front would push the parameters off the line
    const auto front = front_trials(study);
    if (front.empty()) return "";
    std::string out = "front";
    for (std::size_t i = 0; i < front.size() && i < k_shown; ++i)
      out += fmt::format(" #{}", front[i]->number);
    if (front.size() > k_shown) out += fmt::format(" +{}", front.size() - k_shown);
    return out;
  }
  return best_text(best_trial(study), names);
}

namespace {

// `words` joined by spaces within `width` bytes: whole words while they fit, then " ..."; a
// first word too long for the room is cut itself.
std::string join_within(const std::vector<std::string>& words, std::size_t width) {
  constexpr std::string_view k_more = " ...";
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::size_t sep = out.empty() ? 0 : 1;
    const std::size_t keep = i + 1 == words.size() ? 0 : k_more.size();  // for what follows
    if (out.size() + sep + words[i].size() + keep <= width) {
      if (sep) out += ' ';
      out += words[i];
      continue;
    }
    if (out.empty()) return fit_width(fmt::format("{}", fmt::join(words, " ")), width);
    out += k_more;
    break;
  }
  return out;
}

}  // namespace

std::string progress_line(const FrozenTrial& trial, const search::StudyView& study,
                          const TrialProgress& p, std::size_t width) {
  // Room kept for the parameters before a long fail reason is cut, and the least of a reason
  // shown: why a trial failed matters more than the rest of its parameters.
  constexpr std::size_t k_params_room = 20, k_reason_room = 40;
  std::string head =
      fmt::format("[{}/{}] #{} {}", p.done, p.total, trial.number, search::to_string(p.state));
  // A re-run (`tune confirm`, incumbent_repeats) names the trial it re-measures.
  if (const auto of = rerun_of(trial)) head += fmt::format(" (re-run of #{})", *of);
  const auto name = [&](std::size_t i) {
    if (i < p.objectives.size()) return p.objectives[i];
    return p.values.empty() ? std::string("value") : fmt::format("objective {}", i);
  };
  for (std::size_t i = 0; i < p.values.size(); ++i)
    head += (i ? ", " : " ") + format_measure(name(i), p.values[i]);
  if (p.value && p.values.empty()) head += ' ' + format_measure(name(0), *p.value);
  if (p.value && p.half_width) head += fmt::format(" +-{:.1f}%", *p.half_width * 100);
  // With a wall_time objective the value printed is the wall time already.
  const bool wall_shown = (p.value || !p.values.empty()) &&
                          std::ranges::find(p.objectives, "wall_time") != p.objectives.end();
  if (p.wall_s && !wall_shown) head += fmt::format(" (wall {} s)", format_short(*p.wall_s));
  if (const auto mark = oversubscribed_mark(cpu_verdict(trial)); !mark.empty()) head += ' ' + mark;

  std::string tail;
  const bool multi = study.is_multi_objective();
  const auto* best = multi ? nullptr : p.best ? *p.best : best_trial(study);
  if (best != nullptr && best->number == trial.number) {
    tail += " | new best";  // its value is on the line already
  } else if (const auto text =
                 multi ? best_so_far(study, p.objectives) : best_text(best, p.objectives);
             !text.empty()) {
    tail += " | " + text;
  }
  if (p.eta_s) tail += " | eta " + format_duration(*p.eta_s);

  const auto params = param_words(trial);
  std::size_t params_len = 0;
  for (const auto& w : params) params_len += w.size() + 1;
  const std::size_t params_room = params.empty() ? 0 : 3 + std::min(params_len, k_params_room);
  std::string reason;
  if (!p.reason.empty()) {
    const std::size_t used = head.size() + tail.size() + params_room;
    reason = fit_width(": " + p.reason, std::max(width > used ? width - used : 0, k_reason_room));
  }
  std::string line = head + reason + tail;
  if (!params.empty() && line.size() + 3 < width)
    line += " | " + join_within(params, width - line.size() - 3);
  // Names, choices and the reason come from the study file, the database or the trial.
  return fit_width(terminal_text(line), width);
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

std::string format_param_value(const search::ParamValue& value) {
  const auto* real = std::get_if<double>(&value);
  return real ? format_short(*real) : search::param_value_to_string(value);
}

std::vector<std::string> param_words(const FrozenTrial& trial) {
  std::vector<std::string> words;
  for (const auto& [name, internal] : trial.params) {
    const auto it = trial.distributions.find(name);
    if (it == trial.distributions.end()) continue;
    words.push_back(name + '=' + format_param_value(search::to_external(it->second, internal)));
  }
  return words;
}

std::string format_params(const FrozenTrial& trial) {
  return fmt::format("{}", fmt::join(param_words(trial), " "));
}

namespace {

// A line of the summary: whole for `tune best`, fitted to the live width in a run's summary.
std::string summary_line(const std::string& line, SummaryDigits digits) {
  return (digits == SummaryDigits::live ? fit_width(line, k_live_width) : line) + '\n';
}

// `tune best` of a multi-objective study: every trial of the front, with its values.
void print_front(std::ostream& out, const search::StudyView& study,
                 const std::vector<std::string>& names, SummaryDigits digits) {
  const auto front = front_trials(study);
  if (front.empty()) {
    out << "best: no completed trial yet\n";
    return;
  }
  out << summary_line(
      fmt::format("Pareto front ({}): {} trials", describe_objectives(study, names), front.size()),
      digits);
  for (const auto* t : front) {
    const auto values = search::objective_values(*t);
    std::string shown;
    if (digits == SummaryDigits::live) {
      for (std::size_t i = 0; i < values.size(); ++i)
        shown +=
            (i ? ", " : "") +
            format_measure(i < names.size() ? names[i] : fmt::format("objective {}", i), values[i]);
    } else {
      shown = "values: " + format_values(values);
    }
    out << summary_line(
        fmt::format("  #{}  {}{}  {}", t->number, shown, t->is_feasible() ? "" : "  (infeasible)",
                    format_params(*t)),
        digits);
  }
}

}  // namespace

std::string state_word(const FrozenTrial& trial) {
  if (is_rerun(trial) && rerun_value(trial)) return "RERUN";
  return search::to_string(trial.state);
}

static void write_best(std::ostream& out, const search::StudyView& study,
                       const std::vector<std::string>& objective_names, SummaryDigits digits) {
  if (study.is_multi_objective()) return print_front(out, study, objective_names, digits);
  const auto* best = best_trial(study);
  if (best == nullptr) {
    out << "best: no completed trial yet\n";
    return;
  }
  const bool live = digits == SummaryDigits::live;
  const std::string label = objective_names.empty() ? "value" : objective_names.front();
  const std::string unit = unit_of(label);
  out << fmt::format("best trial: #{}  {}: {}{}{}{}\n", best->number, label,
                     live ? format_short(*best->value) : format_value(*best->value),
                     unit.empty() ? "" : " ", unit,
                     best->is_feasible() ? "" : "  (infeasible: violates a constraint)");
  if (best_measured_under_load(study, *best))
    out << summary_line(std::string("  ") + k_best_under_load_text, digits);
  out << "best params:\n";
  for (const auto& [name, internal] : best->params) {
    const auto external = search::to_external(best->distributions.at(name), internal);
    out << summary_line(
        fmt::format("  {} = {}", name, format_param_value(external)),
        digits);
  }
}

namespace {

// `text` after `first`, in lines of at most `width` bytes broken between words, every line after
// the first indented by `indent` spaces. A `quoted command` is kept whole, to be copied; a word
// or command longer than a line stands alone.
std::string wrapped(const std::string& first, const std::string& text, std::size_t width,
                    std::size_t indent) {
  std::vector<std::string> words;
  bool quoted = false;  // inside a `...` span: the word goes on with the next
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    if (quoted) {
      words.back() += ' ' + word;
    } else {
      words.push_back(word);
    }
    if (std::ranges::count(word, '`') % 2 == 1) quoted = !quoted;
  }
  std::string out, line = first;
  bool bare = true;  // no word on `line` yet
  for (const auto& word : words) {
    if (!bare && line.size() + 1 + word.size() > width) {
      out += line + '\n';
      line = std::string(indent, ' ');
      bare = true;
    }
    if (!bare) line += ' ';
    line += word;
    bare = false;
  }
  return out + line + '\n';
}

}  // namespace

static void write_noise(std::ostream& out, const search::StudyView& study) {
  const auto noise = assess_noise(study);
  if (!noise.assessed) return;
  const auto lines = noise_lines(noise);
  for (std::size_t i = 0; i < lines.size(); ++i)
    out << wrapped(i == 0 ? "noise: " : "  ", lines[i], k_live_width, 4);
}

static void write_summary(std::ostream& out, const std::string& study_name,
                          const search::StudyView& study,
                          const std::vector<std::string>& objective_names, SummaryDigits digits) {
  const auto c = count_states(study);
  std::string counts = fmt::format("study '{}': {} trials: {} complete, {} failed, {} pruned",
                                   study_name, c.total(), c.complete, c.fail, c.pruned);
  if (c.reruns) counts += fmt::format(", {} re-runs", c.reruns);
  if (c.running) counts += fmt::format(", {} running", c.running);
  if (c.waiting) counts += fmt::format(", {} waiting", c.waiting);
  out << summary_line(counts, digits);
  write_best(out, study, objective_names, digits);
  write_noise(out, study);
  if (const auto q = figure_quality_text(figure_quality(study)); !q.empty())
    out << summary_line("probes: " + q, digits);
  if (const auto q = prediction_quality_text(prediction_quality(study.trials())); !q.empty())
    out << summary_line("probes: " + q, digits);
}

static void write_trials(std::ostream& out, const search::StudyView& study) {
  out << fmt::format("{:>6}  {:<8}  {:>12}  {:>9}  {}\n", "number", "state", "value", "wall_s",
                     "params");
  for (const auto& t : study.trials()) {
    std::string wall = "-";
    if (auto it = t.user_attrs.find(k_attr_wall_time);
        it != t.user_attrs.end() && it->is_number()) {
      wall = fmt::format("{:.2f}", it->get<double>());
    }
    std::vector<std::string> notes;
    // A finished re-run is stored PRUNED without a value (tuner/judge/reruns.h): shown as what it
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

// What the summaries print comes from the study file and the database (names, choices, fail
// reasons): any bytes. Written whole, then through terminal_text, the one filter of terminal
// output, so that no control byte reaches the terminal (tuner/base/text.h).
namespace {
template <typename Write>
void to_terminal(std::ostream& out, Write write) {
  std::ostringstream text;
  write(text);
  out << terminal_text(text.str());
}
}  // namespace

void print_noise(std::ostream& out, const search::StudyView& study) {
  to_terminal(out, [&](std::ostream& o) { write_noise(o, study); });
}

void print_best(std::ostream& out, const search::StudyView& study,
                const std::vector<std::string>& objective_names, SummaryDigits digits) {
  to_terminal(out, [&](std::ostream& o) { write_best(o, study, objective_names, digits); });
}

void print_summary(std::ostream& out, const std::string& study_name, const search::StudyView& study,
                   const std::vector<std::string>& objective_names, SummaryDigits digits) {
  to_terminal(
      out, [&](std::ostream& o) { write_summary(o, study_name, study, objective_names, digits); });
}

void print_trials(std::ostream& out, const search::StudyView& study) {
  to_terminal(out, [&](std::ostream& o) { write_trials(o, study); });
}

}  // namespace tune::tuner
