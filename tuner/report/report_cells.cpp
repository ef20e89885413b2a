#include "tuner/report/report_cells.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tuner/base/text.h"

namespace tune::tuner {

std::string value_or_dash(const std::optional<double>& value) {
  return value ? format_value(*value) : "-";
}

std::string measured_text(const ReportTrial& trial) {
  if (trial.median)
    return fmt::format("{} (median of {} re-runs; its search run: {})", format_value(*trial.median),
                       trial.rerun_values.size(), value_or_dash(trial.value));
  return trial.value ? format_value(*trial.value) + " (one run)" : "-";
}

std::string values_text(const ReportData& data, const ReportTrial& trial) {
  std::string out;
  for (std::size_t i = 0; i < trial.values.size(); ++i) {
    const auto name = i < data.objectives.size() ? data.objectives[i] : fmt::format("#{}", i);
    out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", name, format_value(trial.values[i]));
  }
  return out.empty() ? "-" : out;
}

std::string objectives_text(const ReportData& data) {
  std::string out;
  for (std::size_t i = 0; i < data.directions.size() && i < data.objectives.size(); ++i) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", data.directions[i], data.objectives[i]);
  }
  return out;
}

std::string speedup_text(const SpeedupEstimate& s) {
  std::string out = fmt::format("{:.3f}x", s.ratio);
  if (s.ci_low) out += fmt::format("  95% CI [{:.3f}x, {:.3f}x]", *s.ci_low, *s.ci_high);
  out += " (" + s.basis;
  if (s.ci_method == "bootstrap") out += ", bootstrap of the ratio of medians";
  if (s.ci_method == "noise model") out += ", from the noise of one run";
  out += ")";
  if (s.verdict == NoiseVerdict::beyond) out += ": beyond the noise";
  if (!s.note.empty()) out += "; " + s.note;
  return out;
}

std::string role_text(const ReportTrial& trial) {
  std::string out = trial.baseline ? "baseline" : "";
  if (!trial.rules.empty())
    out += fmt::format("{}rule {}", out.empty() ? "" : ", ", fmt::join(trial.rules, ", "));
  if (trial.first_guess) out += fmt::format("{}first guess", out.empty() ? "" : ", ");
  return out;
}

std::string best_rule_text(const ReportTrial& rule) {
  return fmt::format("#{} (rule {}): {}", rule.number, fmt::join(rule.rules, ", "),
                     measured_text(rule));
}

std::vector<std::string> noise_section(const ReportData& data) {
  if (data.multi_objective())
    return {"not assessed: the noise model compares the values of one objective"};
  if (!data.noise.assessed) return {"no completed trial yet"};
  return noise_lines(data.noise);
}

std::string share_text(const search::ImportanceShare& share) {
  if (share.low == share.share && share.high == share.share)
    return fmt::format("{:.3f}", share.share);
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", share.share, share.low, share.high);
}

bool importance_ranked(const ReportData& data) {
  return data.importance_verdict != NoiseVerdict::within;
}

std::string best_caveat(const ReportData& data) {
  if (data.multi_objective() || data.noise.settings_verdict != NoiseVerdict::within) return "";
  return "first by value only: the settings are within the noise of each other (see Noise)";
}

std::string numbers_text(const std::vector<int>& numbers, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size() && i < limit; ++i)
    out += (i ? ", #" : "#") + std::to_string(numbers[i]);
  if (numbers.size() > limit) out += fmt::format(", ... ({} more)", numbers.size() - limit);
  return out;
}

std::string confirmed_cell(const ReportTrial& trial) {
  return trial.median
             ? fmt::format("{} (n={})", format_value(*trial.median), trial.rerun_values.size())
             : "-";
}

std::string wall_cell(const ReportTrial& trial) {
  return trial.wall_s ? fmt::format("{:.2f}", *trial.wall_s) : "-";
}

std::string probe_cell(const ReportTrial& trial, const std::string& oversubscribed_word) {
  if (!trial.oversubscribed) return "-";
  return *trial.oversubscribed ? oversubscribed_word : "ok";
}

std::vector<std::string> param_cells(const ReportTrial& trial, const std::vector<ParamAxis>& axes) {
  std::vector<std::string> cells;
  cells.reserve(axes.size());
  for (const auto& a : axes) {
    std::string v = "-";
    for (const auto& p : trial.params)
      if (p.name == a.name) v = p.short_text;
    cells.push_back(std::move(v));
  }
  return cells;
}

std::vector<std::vector<std::string>> front_rows(const ReportData& data) {
  std::vector<std::vector<std::string>> rows = {{"trial"}};
  rows[0].insert(rows[0].end(), data.objectives.begin(), data.objectives.end());
  rows[0].insert(rows[0].end(), {"wall_s", "params"});
  for (const auto& r : data.front) {
    std::vector<std::string> row = {fmt::format("#{}", r.number)};
    for (double v : r.values) row.push_back(format_value(v));
    row.push_back(wall_cell(r));
    row.push_back(r.params_text() + (r.feasible ? "" : " [infeasible]"));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string programs_text(const ReportTrial& trial) {
  std::string out;
  for (const auto& p : trial.programs) {
    if (!out.empty()) out += "; ";
    out += p.name;
    if (p.path != p.name) out += " = " + (p.path.empty() ? std::string("(not found)") : p.path);
    if (!p.real_path.empty() && p.real_path != p.path) out += " -> " + p.real_path;
    if (!p.version.empty()) out += " (" + p.version + ")";
  }
  return printable(out, 600);
}

std::string first_guess_text(const GuessSummary& g) {
  const auto factor = [](const std::optional<double>& f, const char* suffix) {
    return f ? fmt::format(" ({:.2f}x{})", *f, suffix) : std::string();
  };
  std::string out = fmt::format("#{} {}: predicted ", g.number, g.changed);
  out += g.predicted ? format_value(*g.predicted) + factor(g.predicted_factor, " the baseline")
                     : std::string("-");
  out += g.measured ? ", measured " + format_value(*g.measured) + factor(g.measured_factor, "")
                    : std::string(", not measured yet");
  return out;
}

std::string loaded_trial_text(const LoadedTrial& t) {
  std::string out = fmt::format("#{}", t.number);
  if (t.rerun_of) out += fmt::format(" (re-run of #{})", *t.rerun_of);
  out +=
      fmt::format(": {:.2g} CPUs busy outside the study (limit {:.2g})", t.external_cpus, t.limit);
  if (t.rank_cpu_share) out += fmt::format(", ranks at {:.0f}% CPU", *t.rank_cpu_share * 100);
  if (t.rerun_of) return out + fmt::format("; left out of #{}'s value", *t.rerun_of);
  if (t.quiet_reruns.empty()) return out + "; not re-measured without load: not ranked";
  return out + "; re-measured without load by " + numbers_text(t.quiet_reruns);
}

std::vector<std::string> libraries_lines(const LibrariesSection& section) {
  std::vector<std::string> out;
  for (const auto& line : section.lines) out.push_back(fmt::format("#{}: {}", section.trial, line));
  for (const auto& line : section.best_lines)
    out.push_back(fmt::format("#{} (the best): {}", section.best_trial, line));
  for (const auto& note : section.notes) out.push_back("note: " + note);
  if (!section.kernels_tried.empty()) out.push_back(section.kernels_tried);
  return out;
}

}  // namespace tune::tuner
