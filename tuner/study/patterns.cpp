#include "tuner/study/patterns.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "tuner/base/text.h"

namespace tune::tuner {

RE2::Options regex_options() {
  RE2::Options o;
  o.set_log_errors(false);
  return o;
}

std::optional<std::string> regex_error(const std::string& pattern) {
  const RE2 re(pattern, regex_options());
  if (re.ok()) return std::nullopt;
  return re.error();
}

std::optional<std::string> regex_first_group(const std::string& pattern, std::string_view text) {
  const RE2 re(pattern, regex_options());
  if (!re.ok()) return std::nullopt;
  const int groups = std::min(re.NumberOfCapturingGroups(), 1);
  re2::StringPiece match[2];
  if (!re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED, match,
                groups + 1))
    return std::nullopt;
  const auto& m = match[groups];
  return std::string(m.data() ? m.data() : "", m.size());
}

Result<std::vector<PathStep>> parse_json_path(const std::string& path) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  const auto bad = [&](const char* what) {
    return std::unexpected(
        fmt::format("'{}' is not a key path ({}); write e.g. a.b[0].c", printable(path), what));
  };
  if (path.empty()) return bad("it is empty");
  while (i < path.size()) {
    if (path[i] == '[') {
      const auto close = path.find(']', i);
      if (close == std::string::npos) return bad("unclosed '['");
      const auto digits = path.substr(i + 1, close - i - 1);
      std::size_t n = 0;
      const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size())
        return bad("an index in [] must be a number");
      steps.push_back({"", n});
      i = close + 1;
      if (i < path.size() && path[i] == '.') {
        ++i;
        if (i == path.size()) return bad("it ends with '.'");
      } else if (i < path.size() && path[i] != '[') {
        return bad("expected '.' or '[' after ']'");
      }
      continue;
    }
    const auto stop = path.find_first_of(".[", i);
    const auto name = path.substr(i, stop == std::string::npos ? std::string::npos : stop - i);
    if (name.empty()) return bad("an empty name");
    steps.push_back({name, std::nullopt});
    i = stop == std::string::npos ? path.size() : stop;
    if (i < path.size() && path[i] == '.') {
      ++i;
      if (i == path.size()) return bad("it ends with '.'");
    }
  }
  return steps;
}

std::optional<std::string> json_path_error(const std::string& path) {
  auto steps = parse_json_path(path);
  if (steps) return std::nullopt;
  return steps.error();
}

}  // namespace tune::tuner
