// The Markdown report (for a pull request or a wiki page): the text report's sections as
// headings and pipe tables, one column per parameter.
#include <fmt/format.h>

#include <ostream>

#include "tuner/report/report_cells.h"
#include "tuner/report/reporter.h"

namespace tune::tuner {
namespace {

// A pipe would end the cell and a newline the row.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string md_row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) {
    out += ' ';
    out += md_cell(c);
    out += " |";
  }
  out += '\n';
  return out;
}

// A multi-objective study's front, in place of the best trial and the top table.
void write_front(std::ostream& out, const ReportData& d) {
  out << fmt::format("\n## Pareto front\n\n{}: {} trials\n\n", objectives_text(d), d.front.size());
  const auto rows = front_rows(d);
  out << md_row(rows[0]) << md_row(std::vector<std::string>(rows[0].size(), "---"));
  for (std::size_t i = 1; i < rows.size(); ++i) out << md_row(rows[i]);
}

void write_header_and_best(std::ostream& out, const ReportData& d) {
  out << "# Study report: " << d.study << "\n\n";
  out << fmt::format("- direction: {}{}\n", d.direction,
                     d.objective.empty() ? "" : " `" + d.objective + "`");
  if (!d.storage.empty()) out << "- storage: `" << d.storage << "`\n";
  out << fmt::format("- trials: {} complete, {} failed, {} pruned, {} re-runs\n", d.counts.complete,
                     d.counts.fail, d.counts.pruned, d.reruns);
  if (d.multi_objective()) return write_front(out, d);
  out << "\n## Best trial\n\n";
  if (d.best) {
    out << fmt::format("Trial **#{}**: {} (chosen by: {})\n\n", d.best->number,
                       measured_text(*d.best), d.best_basis);
    if (const auto caveat = best_caveat(d); !caveat.empty()) out << "**" << caveat << "**\n\n";
    if (const auto ran = programs_text(*d.best); !ran.empty()) out << "Ran: `" << ran << "`\n\n";
    out << md_row({"param", "value"}) << md_row({"---", "---"});
    for (const auto& p : d.best->params) out << md_row({p.name, p.text});
  } else {
    out << "No completed trial yet.\n";
  }
  out << "\n## Speedup over baseline\n\n";
  if (d.baseline)
    out << fmt::format("Baseline: trial #{}, {}\n\n", d.baseline->number,
                       measured_text(*d.baseline));
  out << (d.speedup ? "**" + speedup_text(*d.speedup) + "**" : "Unavailable: " + d.speedup_note)
      << "\n";
}

// In every report, also when the noise is unknown (then what to run to measure it).
void write_noise(std::ostream& out, const ReportData& d) {
  out << "\n## Noise\n\n";
  for (const auto& line : noise_section(d)) out << "- " << md_cell(line) << '\n';
}

void write_top(std::ostream& out, const ReportData& d) {
  // The front (write_front) is a multi-objective study's ranking; nothing completed, no table.
  if (d.multi_objective() || d.top.empty()) return;
  out << fmt::format("\n## Top {} trials\n\n", d.top.size());
  if (const auto caveat = best_caveat(d); !caveat.empty()) out << caveat << "\n\n";
  std::vector<std::string> header = {"rank", "trial", "value", "confirmed", "wall_s", "probe"};
  for (const auto& a : d.axes) header.push_back(a.name);
  out << md_row(header) << md_row(std::vector<std::string>(header.size(), "---"));
  int rank = 1;
  for (const auto& r : d.top) {
    std::vector<std::string> row = {
        std::to_string(rank++), fmt::format("#{}{}", r.number, r.baseline ? " (baseline)" : ""),
        value_or_dash(r.value), confirmed_cell(r),
        wall_cell(r),           probe_cell(r, "oversubscribed")};
    for (auto& cell : param_cells(r, d.axes)) row.push_back(std::move(cell));
    out << md_row(row);
  }
}

void write_shares(std::ostream& out, const std::vector<search::ImportanceShare>& shares) {
  if (shares.empty()) return;
  out << md_row({"param", "share", "interval"}) << md_row({"---", "---:", "---:"});
  for (const auto& s : shares)
    out << md_row(
        {s.name, fmt::format("{:.3f}", s.share), fmt::format("[{:.3f}, {:.3f}]", s.low, s.high)});
}

// Each section only when it has something to say: importance with shares (the caveat in place
// of the table when the study cannot tell its settings apart), probes that looked, failures.
void write_importance_probes_failures(std::ostream& out, const ReportData& d) {
  if (d.importance_by_objective.empty() && !d.importance.empty()) {
    out << "\n## Parameter importance\n\n" << d.importance_note << "\n\n";
    if (!d.importance_caveat.empty()) out << "**" << d.importance_caveat << "**\n";
    if (importance_ranked(d)) {
      if (!d.importance_caveat.empty()) out << '\n';
      write_shares(out, d.importance);
    }
  }
  for (std::size_t i = 0; i < d.importance_by_objective.size(); ++i) {
    const auto& o = d.importance_by_objective[i];
    if (o.shares.empty()) continue;
    out << "\n## Parameter importance for " << md_cell(d.objectives.at(i)) << "\n\n"
        << o.note << "\n\n";
    write_shares(out, o.shares);
  }
  if (d.any_probe()) {
    out << "\n## Probe verdicts\n\n";
    bool any = false;
    for (const auto& r : d.trials) {
      if (r.probe.empty()) continue;
      if (!any) out << md_row({"trial", "verdict"}) << md_row({"---", "---"});
      any = true;
      out << md_row({fmt::format("#{}", r.number), r.probe});
    }
    if (const auto q = prediction_quality_text(d.prediction); !q.empty())
      out << "\nPrediction: " << q << ".\n";
  }
  if (d.failures.empty()) return;
  out << "\n## Failure reasons\n\n";
  out << md_row({"count", "reason", "trials"}) << md_row({"---:", "---", "---"});
  for (const auto& f : d.failures)
    out << md_row({std::to_string(f.trials.size()), f.reason, numbers_text(f.trials)});
}

}  // namespace

std::unique_ptr<Reporter> make_markdown_reporter() {
  return make_sections_reporter(
      {write_header_and_best, write_noise, write_top, write_importance_probes_failures});
}

}  // namespace tune::tuner
