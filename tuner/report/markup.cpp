#include "tuner/report/markup.h"

#include <algorithm>

#include "tuner/base/text.h"

namespace tune::tuner {

namespace {

// The character reference of a character that starts markup in HTML and in Markdown's raw HTML
// (& < >), or nullptr.
const char* markup_reference(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    default:
      return nullptr;
  }
}

// The punctuation Markdown gives a meaning, escaped with a backslash.
bool markdown_punctuation(char c) {
  static constexpr std::string_view k_punctuation = "\\`*_{}[]()#+-.!|";
  return k_punctuation.find(c) != std::string_view::npos;
}

}  // namespace

std::string html_text(std::string_view raw) {
  const std::string s = terminal_text(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (const char* ref = markup_reference(c)) {
      out += ref;
    } else if (c == '"') {
      out += "&quot;";
    } else if (c == '\'') {
      out += "&#39;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string markdown_text(std::string_view text) {
  std::string out;
  for (const char c : terminal_text(text)) {
    if (c == '\n') {
      out += ' ';
    } else if (const char* ref = markup_reference(c)) {
      out += ref;
    } else if (c == '~') {
      out += "&#126;";  // GFM's strikethrough; Python-Markdown takes no \~
    } else if (markdown_punctuation(c)) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

std::string markdown_code(std::string_view text) {
  std::string body = terminal_text(text);
  std::ranges::replace(body, '\n', ' ');
  std::size_t longest = 0, run = 0;
  for (const char c : body) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string markdown_sentence(std::string_view text) {
  std::string out;
  bool code = false;
  for (const char c : terminal_text(text)) {
    if (c == '`') code = !code;
    const char* ref = code ? nullptr : markup_reference(c);
    if (c == '\n') {
      out += ' ';
    } else if (ref != nullptr) {
      out += ref;
    } else if (!code && c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace tune::tuner
