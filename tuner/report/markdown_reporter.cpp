// The Markdown report (for a pull request or a wiki page): the text report's sections as
// headings and pipe tables, one column per parameter.
//
// Every name, choice, reason and attribute comes from the study file, the database or a trial,
// and a renderer passes raw HTML through: each goes through markdown_text (or markdown_code)
// where it lands (markup.h), and tune's own sentences through markdown_sentence; only tune's
// fixed words and numbers are written as they are.
#include <fmt/format.h>

#include <ostream>

#include "tuner/base/text.h"
#include "tuner/report/markup.h"
#include "tuner/report/report_cells.h"
#include "tuner/report/reporter.h"

namespace tune::tuner {
namespace {

const auto md = [](std::string_view text) { return markdown_text(text); };

// A row of cells already escaped (md, md_sentence) or tune's own words and numbers.
std::string md_row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) out += ' ' + c + " |";
  out += '\n';
  return out;
}

std::string objectives_md(const ReportData& d) {
  std::string out;
  for (std::size_t i = 0; i < d.directions.size() && i < d.objectives.size(); ++i)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", d.directions[i], md(d.objectives[i]));
  return out;
}

// A multi-objective study's front, in place of the best trial and the top table.
void write_front(std::ostream& out, const ReportData& d) {
  out << fmt::format("\n## Pareto front\n\n{}: {} trials\n\n", objectives_md(d), d.front.size());
  auto rows = front_rows(d);
  // The objectives' names head their columns; the last column is the parameters.
  for (std::size_t c = 1; c + 2 < rows[0].size(); ++c) rows[0][c] = md(rows[0][c]);
  for (std::size_t i = 1; i < rows.size(); ++i) rows[i].back() = md(rows[i].back());
  out << md_row(rows[0]) << md_row(std::vector<std::string>(rows[0].size(), "---"));
  for (std::size_t i = 1; i < rows.size(); ++i) out << md_row(rows[i]);
}

void write_header_and_best(std::ostream& out, const ReportData& d) {
  out << "# Study report: " << md(d.study) << "\n\n";
  out << fmt::format("- direction: {}{}\n",
                     d.multi_objective() ? objectives_md(d) : md(d.direction),
                     d.objective.empty() ? "" : " " + markdown_code(d.objective));
  if (!d.storage.empty()) out << "- storage: " << markdown_code(d.storage) << "\n";
  out << fmt::format("- trials: {} complete, {} failed, {} pruned, {} re-runs\n", d.counts.complete,
                     d.counts.fail, d.counts.pruned, d.reruns);
  if (d.multi_objective()) return write_front(out, d);
  out << "\n## Best trial\n\n";
  if (d.best) {
    out << fmt::format("Trial **#{}**: {} (chosen by: {})\n\n", d.best->number,
                       markdown_sentence(measured_text(*d.best)), markdown_sentence(d.best_basis));
    if (const auto caveat = best_caveat(d); !caveat.empty())
      out << "**" << markdown_sentence(caveat) << "**\n\n";
    if (const auto ran = programs_text(*d.best); !ran.empty())
      out << "Ran: " << markdown_code(ran) << "\n\n";
    out << md_row({"param", "value"}) << md_row({"---", "---"});
    for (const auto& p : d.best->params) out << md_row({md(p.name), md(p.short_text)});
  } else {
    out << "No completed trial yet.\n";
  }
  out << "\n## Speedup over baseline\n\n";
  if (d.baseline)
    out << fmt::format("Baseline: trial #{}, {}\n\n", d.baseline->number,
                       markdown_sentence(measured_text(*d.baseline)));
  out << (d.speedup ? "**" + markdown_sentence(speedup_text(*d.speedup)) + "**"
                    : "Unavailable: " + markdown_sentence(d.speedup_note))
      << "\n";
  out << "\n## Speedup over the best rule\n\n";
  if (d.best_rule)
    out << "Best rule: " << markdown_sentence(best_rule_text(*d.best_rule)) << "\n\n";
  out << (d.rule_speedup ? "**" + markdown_sentence(speedup_text(*d.rule_speedup)) + "**"
                         : "Unavailable: " + markdown_sentence(d.rule_speedup_note))
      << "\n";
}

// In every report, also when the noise is unknown (then what to run to measure it).
void write_noise(std::ostream& out, const ReportData& d) {
  out << "\n## Noise\n\n";
  for (const auto& line : noise_section(d)) out << "- " << markdown_sentence(line) << '\n';
}

void write_top(std::ostream& out, const ReportData& d) {
  // The front (write_front) is a multi-objective study's ranking; nothing completed, no table.
  if (d.multi_objective() || d.top.empty()) return;
  out << fmt::format("\n## Top {} trials\n\n", d.top.size());
  if (const auto caveat = best_caveat(d); !caveat.empty())
    out << markdown_sentence(caveat) << "\n\n";
  std::vector<std::string> header = {"rank", "trial", "value", "confirmed", "wall_s", "probe"};
  for (const auto& a : d.axes) header.push_back(md(a.name));
  out << md_row(header) << md_row(std::vector<std::string>(header.size(), "---"));
  int rank = 1;
  for (const auto& r : d.top) {
    std::vector<std::string> row = {
        std::to_string(rank++),
        fmt::format("#{}{}", r.number, role_text(r).empty() ? "" : " (" + md(role_text(r)) + ")"),
        value_or_dash(r.value),
        confirmed_cell(r),
        wall_cell(r),
        probe_cell(r, "oversubscribed")};
    for (auto& cell : param_cells(r, d.axes)) row.push_back(md(cell));
    out << md_row(row);
  }
}

void write_shares(std::ostream& out, const std::vector<search::ImportanceShare>& shares) {
  if (shares.empty()) return;
  out << md_row({"param", "share", "interval"}) << md_row({"---", "---:", "---:"});
  for (const auto& s : shares)
    out << md_row({md(s.name), fmt::format("{:.3f}", s.share),
                   fmt::format("[{:.3f}, {:.3f}]", s.low, s.high)});
}

// Each section only when it has something to say: importance with shares (the caveat in place
// of the table when the study cannot tell its settings apart), probes that looked, failures.
void write_importance_probes_failures(std::ostream& out, const ReportData& d) {
  if (d.importance_by_objective.empty() && !d.importance.empty()) {
    out << "\n## Parameter importance\n\n" << markdown_sentence(d.importance_note) << "\n\n";
    if (!d.importance_caveat.empty())
      out << "**" << markdown_sentence(d.importance_caveat) << "**\n";
    if (importance_ranked(d)) {
      if (!d.importance_caveat.empty()) out << '\n';
      write_shares(out, d.importance);
    }
  }
  for (std::size_t i = 0; i < d.importance_by_objective.size(); ++i) {
    const auto& o = d.importance_by_objective[i];
    if (o.shares.empty()) continue;
    out << "\n## Parameter importance for " << md(d.objectives.at(i)) << "\n\n"
        << markdown_sentence(o.note) << "\n\n";
    write_shares(out, o.shares);
  }
  if (d.any_probe()) {
    out << "\n## Probe verdicts\n\n";
    bool any = false;
    for (const auto& r : d.trials) {
      if (r.probe.empty()) continue;
      if (!any) out << md_row({"trial", "verdict"}) << md_row({"---", "---"});
      any = true;
      out << md_row({fmt::format("#{}", r.number), md(r.probe)});
      if (!r.cpu_time.empty()) out << md_row({"", md(r.cpu_time)});
    }
    if (const auto q = figure_quality_text(d.figure); !q.empty())
      out << "\nVerdicts: " << markdown_sentence(q) << ".\n";
    if (const auto q = prediction_quality_text(d.prediction); !q.empty())
      out << "\nPrediction: " << markdown_sentence(q) << ".\n";
  }
  if (d.libraries) {
    out << "\n## " << k_libraries_heading << "\n\n";
    for (const auto& line : libraries_lines(*d.libraries)) out << "- " << md(line) << "\n";
  }
  if (d.first_guess) {
    out << "\n## " << k_first_guess_heading << "\n\n";
    out << md(first_guess_text(*d.first_guess)) << "\n\n";
    for (const auto& line : d.first_guess->reasoning) out << "- " << md(line) << "\n";
  }
  if (!d.under_load.empty()) {
    out << "\n## " << k_under_load_heading << "\n\n";
    for (const auto& t : d.under_load) out << "- " << md(loaded_trial_text(t)) << "\n";
  }
  if (d.failures.empty()) return;
  out << "\n## Failure reasons\n\n";
  out << md_row({"count", "reason", "trials"}) << md_row({"---:", "---", "---"});
  for (const auto& f : d.failures)
    out << md_row({std::to_string(f.trials.size()), md(f.reason), numbers_text(f.trials)});
}

}  // namespace

std::unique_ptr<Reporter> make_markdown_reporter() {
  return make_sections_reporter(
      {write_header_and_best, write_noise, write_top, write_importance_probes_failures});
}

}  // namespace tune::tuner
