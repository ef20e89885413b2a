#include "tuner/base/text.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <vector>

namespace tune::tuner {
namespace {

// Length of the valid UTF-8 sequence at `s`, or 0 (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < len; ++i) {
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  }
  return len;
}

// The character of `text` at `i` as it may be shown, and `i` moved past it: an invalid byte as
// U+FFFD, a C0 control or DEL as \xNN (but `kept`, as it is), with `c1` a C1 control (U+0080..
// U+009F) as \u00NN; any other character as it is. printable() and terminal_text() differ only
// in `kept` and `c1`.
std::string shown_char(std::string_view text, std::size_t& i, char kept, bool c1) {
  const std::size_t len = utf8_sequence(text.substr(i));
  const auto c = static_cast<unsigned char>(text[i]);
  if (len == 0) {
    i += 1;
    return "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
  }
  if (len == 1 && (c < 0x20 || c == 0x7F) && c != static_cast<unsigned char>(kept)) {
    i += 1;
    return fmt::format("\\x{:02x}", c);
  }
  if (c1 && len == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
    i += 2;
    return fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i - 1]));
  }
  i += len;
  return std::string(text.substr(i - len, len));
}

}  // namespace

std::string printable(std::string_view bytes, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(bytes.size(), max_bytes));
  for (std::size_t i = 0; i < bytes.size();) {
    const std::string piece = shown_char(bytes, i, '\t', /*c1=*/false);
    if (out.size() + piece.size() > max_bytes) return out + "...";
    out += piece;
  }
  return out;
}

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) out += shown_char(text, i, '\n', /*c1=*/true);
  return out;
}

namespace {
bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}
}  // namespace

std::string plain_name(std::string_view text, std::size_t max_bytes) {
  std::string out(text.substr(0, max_bytes));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80 || (!std::isalnum(u) && c != '-' && c != '_' && c != '.')) c = '_';
  }
  return out;
}

std::string escape_controls(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (is_control(c)) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

bool has_control_char(std::string_view text) { return std::ranges::any_of(text, is_control); }

std::string tail_of_file(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  if (size <= 0) return {};
  const auto take = std::min<std::streamoff>(size, static_cast<std::streamoff>(max_bytes));
  in.seekg(size - take);
  std::string out(static_cast<std::size_t>(take), '\0');
  in.read(out.data(), take);
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

namespace {

bool has_alnum(std::string_view line) {
  return std::any_of(line.begin(), line.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0; });
}

bool explains(std::string_view line) {
  static constexpr std::string_view k_words[] = {
      "error",     "fail",    "unable",    "cannot",    "can't",      "could not",
      "not found", "denied",  "refused",   "no such",   "fatal",      "abort",
      "killed",    "invalid", "timed out", "exception", "terminated", "segmentation"};
  const std::string lower = ascii_lower(line);
  return std::any_of(std::begin(k_words), std::end(k_words),
                     [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

// A rule of a help box: 20 or more dashes and nothing else.
bool is_rule(std::string_view line) {
  return line.size() >= 20 && line.find_first_not_of('-') == std::string_view::npos;
}

// A detail line of a help box, "Policy: bogus" or "Executable: nosuchprog": a short key of
// letters and spaces, a colon, a value.
bool is_detail(std::string_view line) {
  const auto colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0 || colon > 32) return false;
  const auto key = line.substr(0, colon);
  return std::all_of(key.begin(), key.end(),
                     [](unsigned char c) {
                       return std::isalpha(c) != 0 || c == ' ' || c == '_' || c == '-';
                     }) &&
         line.find_first_not_of(' ', colon + 2) != std::string_view::npos;
}

}  // namespace

std::string explaining_lines_of_file(const std::string& path, std::size_t max_bytes) {
  return explaining_lines(tail_of_file(path, 64 * 1024), max_bytes);
}

std::string explaining_lines(std::string_view tail, std::size_t max_bytes) {
  // Lines trimmed, with whether each stands inside a help box: Open MPI (and others) frame what
  // went wrong between rules of dashes, a headline first and details as "  Key: value".
  struct Line {
    std::string_view text;
    int box = -1;  // the box it stands in, counting from 0; -1 outside any
  };
  std::vector<Line> lines;
  int boxes = 0;
  bool in_box = false;
  std::size_t begin = 0;
  while (begin < tail.size()) {
    std::size_t end = tail.find('\n', begin);
    if (end == std::string_view::npos) end = tail.size();
    std::string_view line(tail.data() + begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    begin = end + 1;
    if (is_rule(line)) {
      if (in_box) ++boxes;
      in_box = !in_box;
      continue;
    }
    if (has_alnum(line)) lines.push_back({line, in_box ? boxes : -1});
  }
  std::vector<std::string_view> explaining;
  for (const auto& l : lines) {
    if (l.box < 0 && explains(l.text)) explaining.push_back(l.text);
  }
  // The first box: its headline and its "Key: value" details (the option, policy or executable
  // at fault), not the advice around them. It is the reason when nothing outside a box explains,
  // and joins the lines that do when its headline explains too.
  const auto first =
      std::find_if(lines.begin(), lines.end(), [](const Line& l) { return l.box >= 0; });
  if (first != lines.end() && (explaining.empty() || explains(first->text))) {
    explaining.push_back(first->text);
    int details = 0;
    for (auto it = first + 1; it != lines.end() && it->box == first->box && details < 3; ++it) {
      if (is_detail(it->text)) {
        explaining.push_back(it->text);
        ++details;
      }
    }
  }
  if (explaining.size() > 3) explaining.erase(explaining.begin() + 2, explaining.end() - 1);
  if (explaining.empty()) {
    return lines.empty() ? std::string() : printable(lines.back().text, max_bytes);
  }
  std::string out;
  for (const auto line : explaining) out += (out.empty() ? "" : " | ") + std::string(line);
  return printable(out, max_bytes);
}

std::string shell_quote(std::string_view text, bool force) {
  const bool safe = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ||
           std::string_view("_@+=:,./-").find(c) != std::string_view::npos;
  });
  if (safe && !force) return std::string(text);
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string bash_quote(std::string_view text, bool force) {
  if (terminal_text(text) == text) return shell_quote(text, force);
  std::string out = "$'";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

bool is_env_var_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  return std::ranges::all_of(name, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string flag_name(const std::string& arg) {
  if (!arg.starts_with("-") || arg == "-" || arg == "--") return "";
  return arg.substr(0, arg.find('='));
}

Result<double> parse_duration(const std::string& text) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    return std::unexpected(fmt::format("'{}' is not a duration (e.g. 90, 90s, 5m, 2h)", text));
  }
  const auto unit = text.substr(pos);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "m" || unit == "min") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return std::unexpected(fmt::format("'{}' has an unknown unit (use s, ms, m or h)", text));
  }
  if (!std::isfinite(v) || v <= 0)
    return std::unexpected(fmt::format("'{}' must be positive", text));
  // A deadline is a clock's count of nanoseconds in 64 bits (292 years): a longer one wraps and
  // has passed before the trial starts, failing every trial at once.
  if (v * scale > k_max_duration_s)
    return std::unexpected(fmt::format(
        "'{}' is longer than tune can time (at most {:.0f} s, about 31 years); leave it out "
        "for no limit",
        text, k_max_duration_s));
  return v * scale;
}

std::string one_line(std::string_view text) {
  std::string raw(text);
  std::replace(raw.begin(), raw.end(), '\r', ' ');
  std::string s = terminal_text(raw);
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::optional<int> positive_int(std::string_view text) {
  int v = 0;
  const auto* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || v <= 0) return std::nullopt;
  return v;
}

std::optional<double> finite_number_at(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string plural(int n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// `text` as comment lines of at most ~96 columns: the first starts with `first`, the rest with
// `rest` ("#  ", "#    "), each word after a space.
std::string comment_lines(const std::string& text, const std::string& first,
                          const std::string& rest) {
  std::string out, line = first;
  bool line_has_words = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (line_has_words && line.size() + 1 + word.size() > 96) {
      out += line + "\n";
      line = rest;
      line_has_words = false;
    }
    line += ' ' + word;
    line_has_words = true;
    pos = end + 1;
  }
  return out + line + "\n";
}

}  // namespace tune::tuner
