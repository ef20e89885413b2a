#include "tuner/base/number_format.h"

#include <fmt/format.h>

namespace tune::tuner {

std::string format_short(double value) { return fmt::format("{:.4g}", value); }

std::string format_value(double value) { return fmt::format("{:.6g}", value); }

std::string format_values(const std::vector<double>& values) {
  std::string out;
  for (double v : values) out += (out.empty() ? "" : ", ") + format_value(v);
  return out;
}

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02}m", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
}

std::string fit_width(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  if (width < 3) return std::string(width, '.');
  std::size_t cut = width - 3;
  // Never half a character: back up over UTF-8 continuation bytes (10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

}  // namespace tune::tuner
