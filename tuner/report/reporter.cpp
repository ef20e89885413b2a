#include "tuner/report/reporter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string_view>

namespace tune::tuner {

namespace {

using MadeReporter = Result<std::unique_ptr<Reporter>>;

struct Format {
  std::string_view name;
  MadeReporter (*make)();
  bool listed = true;  // false: a second name, left out of the error's list
};

// The one list of formats, in the order --help and the error name them.
const std::array<Format, 5> k_formats = {{
    {"text", []() -> MadeReporter { return make_text_reporter(); }},
    {"json", []() -> MadeReporter { return make_json_reporter(); }},
    {"markdown", []() -> MadeReporter { return make_markdown_reporter(); }},
    {"md", []() -> MadeReporter { return make_markdown_reporter(); }, false},
    {"html",
     []() -> MadeReporter {
       auto js = read_chart_js();
       if (!js) return std::unexpected(js.error());
       return make_html_reporter(std::move(*js));
     }},
}};

class SectionsReporter final : public Reporter {
 public:
  explicit SectionsReporter(std::vector<ReportSection> sections)
      : m_sections(std::move(sections)) {}

  void write(std::ostream& out, const ReportData& data) const override {
    for (const auto section : m_sections) section(out, data);
  }

 private:
  std::vector<ReportSection> m_sections;
};

}  // namespace

std::unique_ptr<Reporter> make_sections_reporter(std::vector<ReportSection> sections) {
  return std::make_unique<SectionsReporter>(std::move(sections));
}

const std::vector<std::string>& report_format_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& f : k_formats) v.emplace_back(f.name);
    return v;
  }();
  return names;
}

Result<std::unique_ptr<Reporter>> make_reporter(const std::string& format) {
  std::vector<std::string_view> known;
  for (const auto& f : k_formats) {
    if (f.name == format) return f.make();
    if (f.listed) known.push_back(f.name);
  }
  return std::unexpected(fmt::format("--format: unknown report format '{}' (known: {})", format,
                                     fmt::join(known, ", ")));
}

}  // namespace tune::tuner
