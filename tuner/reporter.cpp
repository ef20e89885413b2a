#include "tuner/reporter.h"

#include <fmt/format.h>

namespace tune::tuner {

std::expected<std::unique_ptr<Reporter>, std::string> make_reporter(const std::string& format) {
  if (format == "text") return make_text_reporter();
  if (format == "json") return make_json_reporter();
  if (format == "markdown" || format == "md") return make_markdown_reporter();
  if (format == "html") {
    auto js = read_chart_js();
    if (!js) return std::unexpected(js.error());
    return make_html_reporter(std::move(*js));
  }
  return std::unexpected(fmt::format(
      "--format: unknown report format '{}' (known: text, json, markdown, html)", format));
}

}  // namespace tune::tuner
