// Pieces of text that more than one report writer prints the same way (a measured value, the
// speedup sentence, table cells), so the text, markdown and HTML reports cannot drift apart.
// Private to the writers (text_reporter.cpp, markdown_reporter.cpp, html_reporter.cpp) and
// `tune export`'s header line (report_cli.cpp); pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/report/report_model.h"

namespace tune::tuner {

// The value to 6 significant digits, or "-".
std::string value_or_dash(const std::optional<double>& value);
// "3 (median of 3 re-runs; its search run: 2)", "2 (one run)" or "-".
std::string measured_text(const ReportTrial& trial);
// "3.333x  95% CI [2.900x, 3.800x] (medians of 3 + 3 re-runs, bootstrap of the ratio of
// medians): beyond the noise", or the ratio with what it means when it is not beyond the noise.
std::string speedup_text(const SpeedupEstimate& speedup);
// What an enqueued trial stands for: "baseline", "rule torchrun", "baseline, rule horovodrun";
// "" for any other trial.
std::string role_text(const ReportTrial& trial);
// "#2 (rule torchrun)" with what it measured, for the best rule's line.
std::string best_rule_text(const ReportTrial& rule);
// The noise section's sentences (tuner/judge/noise.h noise_lines), or why there is none: a
// multi-objective study, no completed trial.
std::vector<std::string> noise_section(const ReportData& data);
// An importance share with its interval: "0.730 [0.210, 0.930]".
std::string share_text(const search::ImportanceShare& share);
// Whether the writers rank the parameters: not when the study cannot tell its settings apart.
bool importance_ranked(const ReportData& data);
// Under the best trial and the top table's heading when the study cannot tell its settings apart
// (else ""): the best is only the first by value.
std::string best_caveat(const ReportData& data);
// A multi-objective trial's values with the objectives' names: "elapsed_time = 1.2, accuracy =
// 0.85" (the names from data.objectives), or "-".
std::string values_text(const ReportData& data, const ReportTrial& trial);
// The header of the report's Pareto front section: "minimize elapsed_time, maximize accuracy".
std::string objectives_text(const ReportData& data);
// What the trial ran, one entry per program: "mpirun = /usr/bin/mpirun; python3 =
// /venv/bin/python3 -> /usr/bin/python3.11 (Python 3.11.2)"; "" when it was not recorded.
std::string programs_text(const ReportTrial& trial);
// A multi-objective study's front as table rows, the header row first: trial, one column per
// objective, wall_s, params (an infeasible trial's marked "[infeasible]").
std::vector<std::vector<std::string>> front_rows(const ReportData& data);
// "#4, #5, ... (3 more)": at most `limit` numbers.
std::string numbers_text(const std::vector<int>& numbers, std::size_t limit = 12);

// A trial measured under load, one line: "#3: 1.9 CPUs busy outside the study (limit 0.25),
// ranks at 48% CPU; re-measured without load by #5", "...; not re-measured: not ranked", or for
// a re-run "#6 (re-run of #3): ...; left out of #3's value".
std::string loaded_trial_text(const LoadedTrial& trial);
// The heading sentence of that list.
inline constexpr const char* k_under_load_heading = "Trials measured under load";

// The first guess against its trial, one line: "#5 bind_to=core threads=1: predicted 1,803
// (3.58x the baseline), measured 2,109 (4.19x)"; "not measured yet" while its trial has no value.
std::string first_guess_text(const GuessSummary& guess);
inline constexpr const char* k_first_guess_heading = "First guess";
inline constexpr const char* k_libraries_heading = "Libraries";
// The Libraries section as lines, for every writer: "#0: OpenBLAS 0.3.21 (pthreads, 2 threads)
// runs its Prescott kernels (SSE3) on a CPU with AVX-512", the best's where they differ, the notes
// and which kernels the trials ran.
std::vector<std::string> libraries_lines(const LibrariesSection& section);

// Cells of a top-trials row.
std::string confirmed_cell(const ReportTrial& trial);  // "5.5 (n=3)" or "-"
std::string wall_cell(const ReportTrial& trial);       // "1.50" or "-"
// "-" without a probe verdict, else `oversubscribed_word` or "ok".
std::string probe_cell(const ReportTrial& trial, const std::string& oversubscribed_word);
// One cell per axis, in axis order: the trial's value to 4 significant digits (short_text), "-"
// when it has none.
std::vector<std::string> param_cells(const ReportTrial& trial, const std::vector<ParamAxis>& axes);

}  // namespace tune::tuner
