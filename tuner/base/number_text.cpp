#include "tuner/base/number_text.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tune::tuner {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }
bool separator(char c) { return c == ',' || c == '.'; }

std::size_t digits_from(std::string_view s, std::size_t i) {
  while (i < s.size() && digit(s[i])) ++i;
  return i;
}

// from_chars, which reads no sign '+', no blanks and no locale's decimal point.
Result<double> finite_from_chars(std::string_view s, const char* what) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    return std::unexpected(std::string(what));
  return v;
}

// An exponent (e-3) at `i`: where it ends, or `i` when there is none.
std::size_t exponent_end(std::string_view s, std::size_t i) {
  if (i >= s.size() || (s[i] != 'e' && s[i] != 'E')) return i;
  std::size_t j = i + 1;
  if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
  if (j >= s.size() || !digit(s[j])) return i;
  return digits_from(s, j);
}

constexpr const char* k_not_grouped =
    "is not a number with thousands grouped by ',' and '.' its decimal point (number: grouped "
    "reads 12,345.6 or 1,234,567)";
constexpr const char* k_not_decimal_comma =
    "is not a number with a decimal comma (number: decimal_comma reads 1,75 or 12345,5; no "
    "groups)";

Result<double> parse_grouped(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t lead_begin = i;
  i = digits_from(s, i);
  const std::size_t lead = i - lead_begin;
  std::string plain(s.substr(0, i));
  if (i < s.size() && s[i] == ',') {
    if (lead < 1 || lead > 3) return std::unexpected(std::string(k_not_grouped));
    while (i < s.size() && s[i] == ',') {
      const std::size_t group_end = digits_from(s, i + 1);
      if (group_end - (i + 1) != 3) return std::unexpected(std::string(k_not_grouped));
      plain += s.substr(i + 1, 3);
      i = group_end;
    }
  }
  const std::size_t rest = i;
  if (i < s.size() && s[i] == '.') {
    const std::size_t frac_end = digits_from(s, i + 1);
    if (frac_end == i + 1) return std::unexpected(std::string(k_not_grouped));
    i = frac_end;
  } else if (lead == 0) {
    return std::unexpected(std::string(k_not_grouped));
  }
  i = exponent_end(s, i);
  if (i != s.size()) return std::unexpected(std::string(k_not_grouped));
  plain += s.substr(rest);
  return finite_from_chars(plain, k_not_grouped);
}

Result<double> parse_decimal_comma(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t int_end = digits_from(s, i);
  if (int_end == i) return std::unexpected(std::string(k_not_decimal_comma));
  std::string plain(s.substr(0, int_end));
  i = int_end;
  if (i < s.size() && s[i] == ',') {
    const std::size_t frac_end = digits_from(s, i + 1);
    if (frac_end == i + 1) return std::unexpected(std::string(k_not_decimal_comma));
    plain += '.';
    plain += s.substr(i + 1, frac_end - i - 1);
    i = frac_end;
  }
  if (i != s.size()) return std::unexpected(std::string(k_not_decimal_comma));
  return finite_from_chars(plain, k_not_decimal_comma);
}

}  // namespace

std::string_view number_style_name(NumberStyle style) {
  switch (style) {
    case NumberStyle::grouped:
      return "grouped";
    case NumberStyle::decimal_comma:
      return "decimal_comma";
    case NumberStyle::plain:
      break;
  }
  return "plain";
}

std::optional<NumberStyle> number_style_named(std::string_view name) {
  for (auto style : {NumberStyle::plain, NumberStyle::grouped, NumberStyle::decimal_comma}) {
    if (number_style_name(style) == name) return style;
  }
  return std::nullopt;
}

Result<double> parse_number_text(std::string_view text, NumberStyle style) {
  if (style == NumberStyle::grouped) return parse_grouped(text);
  if (style == NumberStyle::decimal_comma) return parse_decimal_comma(text);
  // strtod, as the objectives always read a match: blanks before it, hex and the like included.
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v)) return v;
  for (std::size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] == ',' && digit(s[i - 1]) && digit(s[i + 1])) {
      return std::unexpected(
          std::string("is not a finite number: it has a ',' between digits (number: grouped reads "
                      "12,345.6, number: decimal_comma reads 1,75)"));
    }
  }
  return std::unexpected(std::string("is not a finite number"));
}

std::optional<std::string_view> number_cut_by(std::string_view text, std::size_t begin,
                                              std::size_t end) {
  if (begin >= end || end > text.size()) return std::nullopt;
  std::size_t b = begin, e = end;
  for (;;) {  // what follows the match
    const char last = text[e - 1];
    if (e < text.size() && digit(text[e]) && (digit(last) || separator(last))) {
      e = digits_from(text, e);
    } else if (e + 1 < text.size() && separator(text[e]) && digit(text[e + 1]) && digit(last)) {
      e += 1;
    } else if (digit(last) && exponent_end(text, e) != e) {
      e = exponent_end(text, e);
    } else {
      break;
    }
  }
  for (;;) {  // what comes before it
    const char first = text[b];
    if (b > 0 && digit(text[b - 1]) && (digit(first) || separator(first))) {
      --b;
    } else if (b > 1 && separator(text[b - 1]) && digit(text[b - 2]) && digit(first)) {
      --b;
    } else {
      break;
    }
  }
  if (b == begin && e == end) return std::nullopt;
  return text.substr(b, e - b);
}

std::string_view number_token_at(std::string_view text, std::size_t at) {
  std::size_t i = at;
  if (i < text.size() && text[i] == '-') ++i;
  const std::size_t start = i;
  bool any = false;
  while (i < text.size()) {
    if (digit(text[i])) {
      any = true;
      ++i;
    } else if (separator(text[i]) && i + 1 < text.size() && digit(text[i + 1]) &&
               (i == start ? text[i] == '.' : digit(text[i - 1]))) {
      ++i;
    } else {
      break;
    }
  }
  if (!any) return {};
  i = exponent_end(text, i);
  return text.substr(at, i - at);
}

}  // namespace tune::tuner
