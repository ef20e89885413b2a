// The HTML report: one self-contained page (no network, no files beside it) with the report's
// tables, the JSON report embedded as data, Chart.js inlined and the drawing code
// (report_chart.js) and style (report.css), both embedded into the binary at build time.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>

#include "embedded/report_chart_js.h"
#include "embedded/report_css.h"
#include "tuner/base/install_layout.h"
#include "tuner/base/text.h"
#include "tuner/report/markup.h"
#include "tuner/report/report_cells.h"
#include "tuner/report/reporter.h"

namespace tune::tuner {
namespace {

// Inside <script>, "</" could end the element early; "<\/" means the same in JS (the inlined
// libraries; the data has script_json).
std::string script_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The report's JSON as the text of a <script> element: `<`, `>` and `&` (which JSON has only
// inside strings) written \u003c, \u003e, \u0026, so no name or reason in it ("</script>",
// "<!--<script>", which switches the HTML parser into a state where the element swallows the
// drawing scripts that follow) means anything to the HTML parser; JSON.parse reads the same
// value. Invalid UTF-8 from the database becomes U+FFFD instead of an exception.
std::string script_json(const nlohmann::json& value) {
  const std::string dumped = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  for (char c : dumped) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const auto e = [](const std::string& text) { return html_text(text); };

// Escaped, with each `command` span set as code: the noise sentences name commands to run.
std::string with_code(const std::string& text) {
  std::string out;
  bool open = false;
  for (char c : e(text)) {
    if (c == '`') {
      out += open ? "</code>" : "<code>";
      open = !open;
    } else {
      out += c;
    }
  }
  if (open) out += "</code>";
  return out;
}

// Escaped, with a line-break opportunity after each '_' and '/', so a long parameter name or
// value ("torch_interop_threads", "recursive_doubling") wraps instead of widening its column.
std::string breakable(const std::string& name) {
  std::string out;
  for (char c : name) {
    out += e(std::string(1, c));
    if (c == '_' || c == '/') out += "<wbr>";
  }
  return out;
}

// Every table sits in a box that scrolls sideways on its own when it is wider than the page, so
// the page itself never does.
void open_table(std::ostream& out, const std::string& id = "") {
  out << "<div class=\"table-wrap\"><table" << (id.empty() ? "" : " id=\"" + id + "\"") << ">\n";
}
void close_table(std::ostream& out) { out << "</table></div>\n"; }

// Linear map of [low, high] onto the pixels [from, to]; a single value sits in the middle.
struct Scale {
  double low, high, from, to;
  double operator()(double v) const {
    return high > low ? from + (v - low) / (high - low) * (to - from) : (from + to) / 2;
  }
};

// An axis of the Pareto scatter: its line, five ticks with values, and its title.
void svg_axis(std::ostringstream& svg, const Scale& s, bool horizontal, double at,
              const std::string& title) {
  const auto [x1, y1, x2, y2] =
      horizontal ? std::array{s.from, at, s.to, at} : std::array{at, s.from, at, s.to};
  svg << fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"#444\"/>\n",
      x1, y1, x2, y2);
  for (int i = 0; i <= 4; ++i) {
    const double v = s.low + (s.high - s.low) * i / 4, p = s(v);
    svg << (horizontal ? fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}"
                                     "</text>\n",
                                     p, at + 16, format_value(v))
                       : fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}"
                                     "</text>\n",
                                     at - 6, p + 4, format_value(v)));
  }
  svg << (horizontal ? fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}"
                                   "</text>\n",
                                   (s.from + s.to) / 2, at + 36, e(title))
                     : fmt::format("<text transform=\"translate(14 {:.1f}) rotate(-90)\" "
                                   "text-anchor=\"middle\">{}</text>\n",
                                   (s.from + s.to) / 2, e(title)));
}

// The Pareto scatter: every completed search trial on the first two objectives, the front's
// points filled, numbered and joined. Inline SVG, so it draws without JavaScript or Chart.js.
std::string pareto_svg(const ReportData& d) {
  std::vector<const ReportTrial*> points;
  for (const auto& r : d.trials) {
    if (r.state == search::TrialState::complete && r.values.size() >= 2 && !r.rerun_of)
      points.push_back(&r);
  }
  if (points.empty()) return "";
  auto bounds = [&](std::size_t k) {
    const auto [lo, hi] =
        std::ranges::minmax_element(points, {}, [&](const ReportTrial* r) { return r->values[k]; });
    return std::pair{(*lo)->values[k], (*hi)->values[k]};
  };
  constexpr double k_width = 640, k_height = 420, k_left = 80, k_bottom = 50, k_margin = 20;
  const Scale sx{bounds(0).first, bounds(0).second, k_left, k_width - k_margin};
  const Scale sy{bounds(1).first, bounds(1).second, k_height - k_bottom, k_margin};
  std::ostringstream svg;
  svg << fmt::format(
      "<svg id=\"pareto-scatter\" xmlns=\"http://www.w3.org/2000/svg\" "
      "viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "font-size=\"11\" aria-label=\"Pareto front\">\n",
      k_width, k_height);
  svg_axis(svg, sx, true, k_height - k_bottom, d.objectives[0] + " (" + d.directions[0] + ")");
  svg_axis(svg, sy, false, k_left, d.objectives[1] + " (" + d.directions[1] + ")");
  std::vector<const ReportTrial*> front;
  for (const auto& r : d.front) {
    if (r.values.size() >= 2) front.push_back(&r);
  }
  std::ranges::sort(front, {}, [](const ReportTrial* r) { return r->values[0]; });
  svg << "<polyline fill=\"none\" stroke=\"#d62728\" stroke-dasharray=\"4 3\" points=\"";
  for (const auto* r : front)
    svg << fmt::format("{:.1f},{:.1f} ", sx(r->values[0]), sy(r->values[1]));
  svg << "\"/>\n";
  for (const auto* r : points) {
    const bool on =
        std::ranges::any_of(front, [&](const ReportTrial* f) { return f->number == r->number; });
    const double x = sx(r->values[0]), y = sy(r->values[1]);
    svg << fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"{}><title>#{}: "
        "{}</title></circle>\n",
        x, y, on ? 5 : 3, on ? "#d62728" : "#9e9e9e", on ? " class=\"front\"" : "", r->number,
        e(values_text(d, *r)));
    if (on)
      svg << fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">#{}</text>\n", x + 7, y - 6, r->number);
  }
  svg << "</svg>\n";
  return svg.str();
}

// A multi-objective study: the front's table and scatter, in place of best trial and speedup.
void write_front(std::ostream& out, const ReportData& d) {
  out << "<h2>Pareto front</h2>\n<p class=\"note\">" << e(objectives_text(d)) << ": "
      << d.front.size() << " trials no other trial beats in every objective"
      << (d.objectives.size() > 2 ? "; the scatter shows the first two objectives" : "")
      << "</p>\n<div class=\"pareto\">" << pareto_svg(d) << "</div>\n";
  open_table(out, "front");
  out << "<tr><th>trial</th>";
  for (const auto& name : d.objectives) out << "<th>" << breakable(name) << "</th>";
  out << "<th>wall_s</th>";
  for (const auto& a : d.axes) out << "<th>" << breakable(a.name) << "</th>";
  out << "</tr>\n";
  for (const auto& r : d.front) {
    out << "<tr><td>#" << r.number << (r.feasible ? "" : " (infeasible)") << "</td>";
    for (double v : r.values) out << "<td class=\"num\">" << format_value(v) << "</td>";
    out << "<td class=\"num\">" << wall_cell(r) << "</td>";
    for (const auto& cell : param_cells(r, d.axes)) out << "<td>" << breakable(cell) << "</td>";
    out << "</tr>\n";
  }
  close_table(out);
}

void write_head_and_summary(std::ostream& out, const ReportData& d) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out << "<title>tune report: " << e(d.study) << "</title>\n<style>\n"
      << embedded::k_report_css << "</style>\n</head>\n<body>\n";
  out << "<h1>Study report: " << e(d.study) << "</h1>\n";
  out << "<p class=\"note\">" << e(d.direction);
  if (!d.objective.empty()) out << ' ' << e(d.objective);
  out << "; "
      << fmt::format("{} complete, {} failed, {} pruned, {} re-runs", d.counts.complete,
                     d.counts.fail, d.counts.pruned, d.reruns);
  if (!d.storage.empty()) out << "; storage <code>" << e(d.storage) << "</code>";
  out << "</p>\n";
  if (d.multi_objective()) return write_front(out, d);

  out << "<h2>Best trial</h2>\n";
  if (d.best) {
    out << "<p id=\"best\">Trial <b>#" << d.best->number << "</b>: " << e(measured_text(*d.best))
        << " (chosen by: " << e(d.best_basis) << ")</p>\n";
    if (const auto caveat = best_caveat(d); !caveat.empty())
      out << "<p id=\"best-caveat\"><b>" << e(caveat) << "</b></p>\n";
    if (const auto ran = programs_text(*d.best); !ran.empty())
      out << "<p id=\"programs\">Ran: <code>" << e(ran) << "</code></p>\n";
    open_table(out, "best-params");
    out << "<tr><th>param</th><th>value</th></tr>\n";
    for (const auto& p : d.best->params)
      out << "<tr><td>" << e(p.name) << "</td><td>" << e(p.short_text) << "</td></tr>\n";
    close_table(out);
  } else {
    out << "<p>No completed trial yet.</p>\n";
  }
  out << "<h2>Speedup over baseline</h2>\n<p id=\"speedup\">";
  if (d.baseline)
    out << "Baseline: trial #" << d.baseline->number << ", " << e(measured_text(*d.baseline))
        << ".<br>";
  out << (d.speedup ? "<b>" + with_code(speedup_text(*d.speedup)) + "</b>"
                    : "Unavailable: " + with_code(d.speedup_note))
      << "</p>\n";
  out << "<h2>Speedup over the best rule</h2>\n<p id=\"rule-speedup\">";
  if (d.best_rule) out << "Best rule: " << e(best_rule_text(*d.best_rule)) << ".<br>";
  out << (d.rule_speedup ? "<b>" + with_code(speedup_text(*d.rule_speedup)) + "</b>"
                         : "Unavailable: " + with_code(d.rule_speedup_note))
      << "</p>\n";
}

// How noisy one run is and whether the best's leads are beyond it, in every report.
void write_noise(std::ostream& out, const ReportData& d) {
  out << "<h2>Noise</h2>\n<ul id=\"noise\">\n";
  for (const auto& line : noise_section(d)) out << "<li>" << with_code(line) << "</li>\n";
  out << "</ul>\n";
}

// The importance shares of a multi-objective study, one column per objective.
void write_importance_table(std::ostream& out, const ReportData& d) {
  std::vector<std::string> params;
  for (const auto& o : d.importance_by_objective)
    for (const auto& share : o.shares)
      if (std::find(params.begin(), params.end(), share.name) == params.end())
        params.push_back(share.name);
  open_table(out, "importance-by-objective");
  out << "<tr><th>param</th>";
  for (std::size_t i = 0; i < d.importance_by_objective.size(); ++i)
    out << "<th>" << breakable(d.objectives.at(i)) << "</th>";
  out << "</tr>\n";
  for (const auto& param : params) {
    out << "<tr><td>" << e(param) << "</td>";
    for (const auto& o : d.importance_by_objective) {
      const auto it = std::find_if(o.shares.begin(), o.shares.end(),
                                   [&](const auto& s) { return s.name == param; });
      out << "<td class=\"num\">" << (it == o.shares.end() ? std::string("-") : share_text(*it))
          << "</td>";
    }
    out << "</tr>\n";
  }
  close_table(out);
}

// One canvas per chart report_chart.js draws; their ids are its contract. A chart with nothing
// to draw (no completed trial, no importance) is left out with its heading.
void write_chart_canvases(std::ostream& out, const ReportData& d) {
  const bool values = d.any_completed();
  if (values)
    out << "<h2>Optimization history</h2>\n<div class=\"chart\"><canvas "
           "id=\"chart-history\"></canvas></div>\n";
  const bool per_objective = std::ranges::any_of(d.importance_by_objective,
                                                 [](const auto& o) { return !o.shares.empty(); });
  if (!d.importance.empty() || per_objective) {
    out << "<h2>Parameter importance</h2>\n<p class=\"note\">" << e(d.importance_note) << "</p>\n";
    // When the study cannot tell its settings apart, the caveat stands in for the chart.
    if (!d.importance_caveat.empty())
      out << "<p id=\"importance-caveat\"><b>" << e(d.importance_caveat) << "</b></p>\n";
    if (!d.importance.empty() && importance_ranked(d))
      out << "<div class=\"chart\"><canvas id=\"chart-importance\"></canvas></div>\n";
    // A multi-objective study: each objective's shares side by side.
    if (per_objective) write_importance_table(out, d);
  }
  if (values && !d.axes.empty()) {
    out << "<h2>Slice plots</h2>\n<div class=\"slices\">\n";
    for (std::size_t i = 0; i < d.axes.size(); ++i)
      out << "<div class=\"chart\"><canvas id=\"chart-slice-" << i << "\"></canvas></div>\n";
    out << "</div>\n<h2>Parallel coordinates</h2>\n<div class=\"chart\"><canvas "
           "id=\"chart-parallel\"></canvas></div>\n<div class=\"legend\" "
           "id=\"parallel-legend\"></div>\n";
  }
  const auto timed =
      std::ranges::count_if(d.trials, [](const ReportTrial& r) { return r.start_s.has_value(); });
  if (timed > 0)
    out << "<h2>Timeline</h2>\n<div class=\"chart\" style=\"height:"
        << std::clamp<std::size_t>(static_cast<std::size_t>(timed) * 14 + 80, 200, 2400)
        << "px\"><canvas id=\"chart-timeline\"></canvas></div>\n";
}

// The columns every row would leave at "-" (no re-runs: confirmed; no probes: probe) are left
// out, so the table fits a narrower page.
void write_top_table(std::ostream& out, const ReportData& d) {
  if (d.top.empty()) return;
  const bool confirmed =
      std::ranges::any_of(d.top, [](const ReportTrial& r) { return r.median.has_value(); });
  const bool probed =
      std::ranges::any_of(d.top, [](const ReportTrial& r) { return r.oversubscribed.has_value(); });
  out << "<h2>Top " << d.top.size() << " trials</h2>\n";
  if (const auto caveat = best_caveat(d); !caveat.empty())
    out << "<p class=\"note\">" << e(caveat) << "</p>\n";
  open_table(out, "top");
  out << "<tr><th>rank</th><th>trial</th><th>value</th>" << (confirmed ? "<th>confirmed</th>" : "")
      << "<th>wall_s</th>" << (probed ? "<th>probe</th>" : "");
  for (const auto& a : d.axes) out << "<th>" << breakable(a.name) << "</th>";
  out << "</tr>\n";
  int rank = 1;
  for (const auto& r : d.top) {
    out << "<tr><td class=\"num\">" << rank++ << "</td><td>#" << r.number
        << (role_text(r).empty() ? "" : " (" + e(role_text(r)) + ")") << "</td><td class=\"num\">"
        << value_or_dash(r.value) << "</td>";
    if (confirmed) out << "<td class=\"num\">" << confirmed_cell(r) << "</td>";
    out << "<td class=\"num\">" << wall_cell(r) << "</td>";
    if (probed) out << "<td>" << probe_cell(r, "OVERSUB") << "</td>";
    for (const auto& cell : param_cells(r, d.axes)) out << "<td>" << breakable(cell) << "</td>";
    out << "</tr>\n";
  }
  close_table(out);
}

// Probe verdicts and failure reasons, each only when there is one.
void write_tables(std::ostream& out, const ReportData& d) {
  if (!d.multi_objective()) write_top_table(out, d);
  if (d.any_probe()) {
    out << "<h2>Probe verdicts</h2>\n";
    if (std::ranges::any_of(d.trials, [](const ReportTrial& r) { return !r.probe.empty(); })) {
      open_table(out, "probes");
      out << "<tr><th>trial</th><th>verdict</th></tr>\n";
      for (const auto& r : d.trials)
        if (!r.probe.empty())
          out << "<tr><td>#" << r.number << "</td><td>" << e(r.probe)
              << (r.cpu_time.empty() ? "" : "<br><small>" + e(r.cpu_time) + "</small>")
              << "</td></tr>\n";
      close_table(out);
    }
    if (const auto q = figure_quality_text(d.figure); !q.empty())
      out << "<p id=\"verdict-quality\">" << e(q) << "</p>\n";
    if (const auto q = prediction_quality_text(d.prediction); !q.empty())
      out << "<p id=\"prediction-quality\">" << e(q) << "</p>\n";
  }
  if (d.libraries) {
    out << "<h2>" << k_libraries_heading << "</h2>\n<ul id=\"libraries\">\n";
    for (const auto& line : libraries_lines(*d.libraries)) out << "<li>" << e(line) << "</li>\n";
    out << "</ul>\n";
  }
  if (d.first_guess) {
    out << "<h2>" << k_first_guess_heading << "</h2>\n<p id=\"first-guess\">"
        << e(first_guess_text(*d.first_guess)) << "</p>\n<ul id=\"first-guess-reasoning\">\n";
    for (const auto& line : d.first_guess->reasoning) out << "<li>" << e(line) << "</li>\n";
    out << "</ul>\n";
  }
  if (!d.under_load.empty()) {
    out << "<h2>" << k_under_load_heading << "</h2>\n<ul id=\"under-load\">\n";
    for (const auto& t : d.under_load) out << "<li>" << e(loaded_trial_text(t)) << "</li>\n";
    out << "</ul>\n";
  }
  if (d.failures.empty()) return;
  out << "<h2>Failure reasons</h2>\n";
  open_table(out, "failures");
  out << "<tr><th>count</th><th>reason</th><th>trials</th></tr>\n";
  for (const auto& f : d.failures)
    out << "<tr><td class=\"num\">" << f.trials.size() << "</td><td>" << e(f.reason) << "</td><td>"
        << e(numbers_text(f.trials)) << "</td></tr>\n";
  close_table(out);
}

class HtmlReporter final : public Reporter {
 public:
  explicit HtmlReporter(std::string chart_js) : m_chart_js(std::move(chart_js)) {}

  void write(std::ostream& out, const ReportData& d) const override {
    write_head_and_summary(out, d);
    write_noise(out, d);
    write_chart_canvases(out, d);
    write_tables(out, d);
    out << "<script id=\"tune-data\" type=\"application/json\">" << script_json(report_to_json(d))
        << "</script>\n";
    out << "<script>/* Chart.js, MIT License, inlined so the report is one file */\n"
        << script_safe(m_chart_js) << "\n</script>\n";
    out << "<script>\n"
        << script_safe(embedded::k_report_chart_js) << "</script>\n</body>\n</html>\n";
  }

 private:
  std::string m_chart_js;
};

}  // namespace

std::unique_ptr<Reporter> make_html_reporter(std::string chart_js) {
  return std::make_unique<HtmlReporter>(std::move(chart_js));
}

std::vector<std::string> chart_js_candidates() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TUNE_CHARTJS"); env && *env) candidates.push_back(env);
  if (const auto share = data_dir(); !share.empty())
    candidates.push_back((share / "chart.min.js").string());
  candidates.push_back("/usr/share/javascript/chart.js/chart.min.js");
  candidates.push_back("/usr/share/javascript/chart.js/chart.js");
  return candidates;
}

Result<std::string> read_chart_js(const std::vector<std::string>& candidates) {
  for (const auto& path : candidates) {
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    if (!text.str().empty()) return text.str();
  }
  return std::unexpected(
      "--format html needs Chart.js: install the Debian package libjs-chart.js "
      "(scripts/install-deps.sh does), or point TUNE_CHARTJS at chart.min.js");
}

}  // namespace tune::tuner
