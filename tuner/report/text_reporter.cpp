// The plain-text report for a terminal: sections in the order a reader asks the questions (what
// won, by how much, whether that is more than the noise, what else came close, what mattered,
// what went wrong). What it writes has passed terminal_text (tuner/base/text.h): no control byte
// from the study file, the database or a trial reaches the terminal.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>

#include "tuner/base/text.h"
#include "tuner/report/report_cells.h"
#include "tuner/report/reporter.h"

namespace tune::tuner {
namespace {

// Rows of cells, left- or right-aligned per column; the last column is never padded.
std::string aligned_table(const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& right) {
  std::vector<std::size_t> width(right.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line = "  ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool last = c + 1 == row.size();
      if (c) line += "  ";
      if (right[c]) {
        line += std::string(width[c] - row[c].size(), ' ') + row[c];
      } else {
        line += row[c];
        if (!last) line += std::string(width[c] - row[c].size(), ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

void write_header(std::ostream& out, const ReportData& d) {
  out << fmt::format("study '{}' ({}{})\n", d.study, d.direction,
                     d.objective.empty() ? "" : " " + d.objective);
  if (!d.storage.empty()) out << "storage: " << d.storage << '\n';
  out << fmt::format("trials: {} complete, {} failed, {} pruned", d.counts.complete, d.counts.fail,
                     d.counts.pruned);
  if (d.counts.running) out << fmt::format(", {} running", d.counts.running);
  if (d.counts.waiting) out << fmt::format(", {} waiting", d.counts.waiting);
  if (d.reruns) out << fmt::format("; {} re-runs", d.reruns);
  out << '\n';
}

// A multi-objective study's front, in place of the best trial and the top table.
void write_front(std::ostream& out, const ReportData& d) {
  out << fmt::format("\nPareto front ({}): {} trials\n", objectives_text(d), d.front.size());
  if (d.front.empty()) out << "  no completed trial yet\n";
  const auto rows = front_rows(d);
  std::vector<bool> right(rows[0].size(), true);
  right.back() = false;
  out << aligned_table(rows, right);
  out << "  export one: tune export STUDY --trial N\n";
}

void write_best_and_speedup(std::ostream& out, const ReportData& d) {
  if (d.multi_objective()) return write_front(out, d);
  out << "\nBest trial\n";
  if (!d.best) {
    out << "  no completed trial yet\n";
  } else {
    out << fmt::format("  #{}  {}{}\n", d.best->number, measured_text(*d.best),
                       d.best->feasible ? "" : "  (infeasible: violates a constraint)");
    out << "  chosen by: " << d.best_basis << '\n';
    if (const auto caveat = best_caveat(d); !caveat.empty()) out << "  " << caveat << '\n';
    if (const auto ran = programs_text(*d.best); !ran.empty()) out << "  ran: " << ran << '\n';
    for (const auto& p : d.best->params) out << fmt::format("  {} = {}\n", p.name, p.short_text);
  }
  out << "\nBaseline (first enqueued trial)\n";
  if (d.baseline) {
    out << fmt::format("  #{}  {}  {}\n", d.baseline->number, measured_text(*d.baseline),
                       d.baseline->params_text());
  } else {
    out << "  none\n";
  }
  out << "\nSpeedup over baseline: ";
  out << (d.speedup ? speedup_text(*d.speedup) : "unavailable: " + d.speedup_note) << '\n';
  if (d.best_rule) {
    out << "\nBest rule baseline\n";
    out << fmt::format("  {}  {}\n", best_rule_text(*d.best_rule), d.best_rule->params_text());
  }
  out << "\nSpeedup over the best rule: ";
  out << (d.rule_speedup ? speedup_text(*d.rule_speedup) : "unavailable: " + d.rule_speedup_note)
      << '\n';
}

// How noisy one run is, and whether the best's leads are beyond it: in every report, also when
// the noise is unknown (then what to run to measure it).
void write_noise(std::ostream& out, const ReportData& d) {
  out << "\nNoise\n";
  for (const auto& line : noise_section(d)) out << "  " << line << '\n';
}

void write_top(std::ostream& out, const ReportData& d) {
  // The front (write_front) is a multi-objective study's ranking; nothing completed, no table.
  if (d.multi_objective() || d.top.empty()) return;
  out << fmt::format("\nTop {} trials\n", d.top.size());
  if (const auto caveat = best_caveat(d); !caveat.empty()) out << "  " << caveat << '\n';
  std::vector<std::vector<std::string>> rows = {
      {"rank", "trial", "value", "confirmed", "wall_s", "probe", "params"}};
  int rank = 1;
  for (const auto& r : d.top) {
    std::string params = r.params_text();
    if (const auto role = role_text(r); !role.empty()) params += "  [" + role + "]";
    if (!r.feasible) params += "  [infeasible]";
    rows.push_back({std::to_string(rank++), fmt::format("#{}", r.number), value_or_dash(r.value),
                    confirmed_cell(r), wall_cell(r), probe_cell(r, "OVERSUB"), params});
  }
  out << aligned_table(rows, {true, true, true, true, true, false, false});
}

// One row per parameter: name, share [interval], a bar of the share.
void write_shares(std::ostream& out, const std::vector<search::ImportanceShare>& shares) {
  std::size_t w = 0, t = 0;
  for (const auto& s : shares) {
    w = std::max(w, s.name.size());
    t = std::max(t, share_text(s).size());
  }
  for (const auto& s : shares) {
    const int bar = static_cast<int>(std::lround(s.share * 40));
    out << fmt::format("  {:<{}}  {:<{}}  {}\n", s.name, w, share_text(s), t,
                       std::string(bar, '#'));
  }
}

// Left out when there are no shares (too few trials, not computed), as every empty section is.
// When the study cannot tell its settings apart, the caveat stands in for the ranking.
void write_importance(std::ostream& out, const ReportData& d) {
  if (d.importance_by_objective.empty()) {
    if (d.importance.empty()) return;
    out << "\nParameter importance (" << d.importance_note << ")\n";
    if (!d.importance_caveat.empty()) out << "  " << d.importance_caveat << '\n';
    if (importance_ranked(d)) write_shares(out, d.importance);
    return;
  }
  for (std::size_t i = 0; i < d.importance_by_objective.size(); ++i) {
    const auto& o = d.importance_by_objective[i];
    if (o.shares.empty()) continue;
    out << "\nParameter importance for " << d.objectives.at(i) << " (" << o.note << ")\n";
    write_shares(out, o.shares);
  }
}

// Each section only when it has something to say (no probes, no failures: nothing).
void write_probes_and_failures(std::ostream& out, const ReportData& d) {
  if (d.any_probe()) {
    out << "\nProbe verdicts\n";
    int shown = 0, over = 0;
    for (const auto& r : d.trials) {
      if (r.probe.empty()) continue;
      ++shown;
      if (r.oversubscribed.value_or(false)) ++over;
      out << fmt::format("  #{:<4} {}\n", r.number, r.probe);
      if (!r.cpu_time.empty()) out << fmt::format("  {:<5} {}\n", "", r.cpu_time);
    }
    if (shown > 0) out << fmt::format("  {} of {} trials oversubscribed the CPUs\n", over, shown);
    if (const auto q = figure_quality_text(d.figure); !q.empty()) out << "  " << q << "\n";
    if (const auto q = prediction_quality_text(d.prediction); !q.empty()) out << "  " << q << "\n";
  }
  if (d.libraries) {
    out << "\n" << k_libraries_heading << "\n";
    for (const auto& line : libraries_lines(*d.libraries)) out << "  " << line << "\n";
  }
  if (d.first_guess) {
    out << "\n" << k_first_guess_heading << "\n  " << first_guess_text(*d.first_guess) << "\n";
    for (const auto& line : d.first_guess->reasoning) out << "    " << line << "\n";
  }
  if (!d.under_load.empty()) {
    out << "\n" << k_under_load_heading << "\n";
    for (const auto& t : d.under_load) out << "  " << loaded_trial_text(t) << "\n";
  }
  if (d.failures.empty()) return;
  out << "\nFailure reasons\n";
  for (const auto& f : d.failures)
    out << fmt::format("  {:>3}x  {}  ({})\n", f.trials.size(), f.reason, numbers_text(f.trials));
}

// The sections, then terminal_text over the whole: every name, choice, reason and attribute in
// them came from the study file, the database or a trial, and the report is read on a terminal.
class TextReporter final : public Reporter {
 public:
  void write(std::ostream& out, const ReportData& data) const override {
    std::ostringstream text;
    m_sections->write(text, data);
    out << terminal_text(text.str());
  }

 private:
  std::unique_ptr<Reporter> m_sections =
      make_sections_reporter({write_header, write_best_and_speedup, write_noise, write_top,
                              write_importance, write_probes_and_failures});
};

}  // namespace

std::unique_ptr<Reporter> make_text_reporter() { return std::make_unique<TextReporter>(); }

}  // namespace tune::tuner
