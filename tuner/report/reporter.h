// The report's writers: one Reporter per output format (text, JSON, Markdown, HTML), each
// formatting a ReportData (report_model.h) without reading storage. Immutable after
// construction; write() may run on several threads at once.
// Design: docs/design-notes.md#tunerreportreporterh
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/base/result.h"
#include "tuner/report/report_model.h"

namespace tune::tuner {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void write(std::ostream& out, const ReportData& data) const = 0;
};

// The formats make_reporter() knows: "text", "json", "markdown" (or "md") and "html".
const std::vector<std::string>& report_format_names();

// One of report_format_names(). The HTML reporter inlines Chart.js, found by read_chart_js(); an
// error says which package to install when it is missing.
Result<std::unique_ptr<Reporter>> make_reporter(const std::string& format);

// The JSON form every machine reader uses (also embedded in the HTML report). Its
// schema_version is k_report_schema_version.
nlohmann::json report_to_json(const ReportData& data);

// A reporter that writes `sections` in order, each a function of the whole report: the text and
// markdown reporters are such lists.
using ReportSection = void (*)(std::ostream& out, const ReportData& data);
std::unique_ptr<Reporter> make_sections_reporter(std::vector<ReportSection> sections);

std::unique_ptr<Reporter> make_text_reporter();
std::unique_ptr<Reporter> make_json_reporter();
std::unique_ptr<Reporter> make_markdown_reporter();
// One self-contained HTML page with `chart_js` (the Chart.js library's source) inlined.
std::unique_ptr<Reporter> make_html_reporter(std::string chart_js);

// Where Chart.js is looked for, first found wins: $TUNE_CHARTJS when set, then the copy installed
// with tune (PREFIX/share/tune/chart.min.js, tuner/base/install_layout.h), then Debian's
// libjs-chart.js (/usr/share/javascript/chart.js/chart.min.js, then chart.js).
std::vector<std::string> chart_js_candidates();
// The first non-empty file among `candidates`; the error names the package to install.
Result<std::string> read_chart_js(
    const std::vector<std::string>& candidates = chart_js_candidates());

}  // namespace tune::tuner
