#include "tuner/report/markup.h"

#include <algorithm>

#include "tuner/base/text.h"

namespace tune::tuner {

std::string html_text(std::string_view raw) {
  const std::string s = terminal_text(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string markdown_text(std::string_view text) {
  std::string out;
  for (const char c : terminal_text(text)) {
    switch (c) {
      case '\n':
        out += ' ';
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '~':
        out += "&#126;";  // GFM's strikethrough; Python-Markdown takes no \~
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '{':
      case '}':
      case '[':
      case ']':
      case '(':
      case ')':
      case '#':
      case '+':
      case '-':
      case '.':
      case '!':
      case '|':
        out += '\\';
        out += c;
        break;
      default:
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
    if (c == '\n') {
      out += ' ';
    } else if (code || (c != '<' && c != '>' && c != '&' && c != '|')) {
      out += c;
    } else {
      out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : "\\|";
    }
  }
  return out;
}

}  // namespace tune::tuner
