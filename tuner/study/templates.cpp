#include "tuner/study/templates.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace tune::tuner {

bool is_builtin_placeholder(std::string_view name) {
  return std::ranges::find(k_builtin_placeholders, name) != std::end(k_builtin_placeholders);
}

Result<std::vector<std::string>> template_names(const std::string& text) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') {
      if (i + 1 < text.size() && text[i + 1] == '{') {
        ++i;
        continue;
      }
      const auto end = text.find('}', i);
      if (end == std::string::npos) {
        return std::unexpected(
            fmt::format("unclosed '{{' in '{}' (write '{{{{' for a literal brace)", text));
      }
      names.push_back(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (text[i] == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        ++i;
        continue;
      }
      return std::unexpected(
          fmt::format("stray '}}' in '{}' (write '}}}}' for a literal brace)", text));
    }
  }
  return names;
}

Result<std::optional<std::string>> expand_template(const std::string& text,
                                                   const TemplateValues& values) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const auto end = text.find('}', i);
    if (end == std::string::npos)
      return std::unexpected(fmt::format("unclosed '{{' in '{}'", text));
    const auto name = text.substr(i + 1, end - i - 1);
    const auto it = values.find(name);
    if (it == values.end())
      return std::unexpected(fmt::format("no value for placeholder '{{{}}}'", name));
    if (std::holds_alternative<std::monostate>(it->second)) return std::optional<std::string>();
    out += search::param_value_to_string(it->second);
    i = end;
  }
  return std::optional<std::string>(std::move(out));
}

Result<std::optional<std::string>> expand_path_template(const std::string& text,
                                                        const TemplateValues& values,
                                                        const std::string& dir) {
  namespace fs = std::filesystem;
  auto expanded = expand_template(text, values);
  if (!expanded || !*expanded || (*expanded)->empty()) return expanded;
  const auto absolute = [&](const std::string& p) {
    fs::path path(p);
    path = (path.is_relative() ? fs::path(dir) / path : path).lexically_normal();
    if (!path.has_filename() && path.has_relative_path()) path = path.parent_path();  // "a/b/"
    return path;
  };
  const fs::path result = absolute(**expanded);
  // The literal part before the first parameter placeholder, and the folder it names.
  std::size_t first = std::string::npos;
  for (std::size_t i = 0; i < text.size() && first == std::string::npos; ++i) {
    if ((text[i] == '{' || text[i] == '}') && i + 1 < text.size() && text[i + 1] == text[i]) {
      ++i;
      continue;
    }
    if (text[i] != '{') continue;
    const auto end = text.find('}', i);
    if (end == std::string::npos) break;
    if (!is_builtin_placeholder(text.substr(i + 1, end - i - 1))) first = i;
    i = end;
  }
  if (first == std::string::npos) return std::optional<std::string>(result.string());
  auto prefix = expand_template(text.substr(0, first), values);
  if (!prefix) return std::unexpected(prefix.error());
  const std::string literal = *prefix ? **prefix : "";
  // "runs/{x}": DIR/runs; "runs_{x}": DIR, the folder that holds the part the value is in.
  fs::path base = absolute(literal);
  if (!literal.empty() && !literal.ends_with('/')) base = base.parent_path();
  const fs::path inside = result.lexically_relative(base);
  if (inside.empty() || *inside.begin() == "..") {
    return std::unexpected(fmt::format(
        "'{}' became {}, outside {}: a parameter's value may name a folder inside it, never "
        "climb out ('..') or replace it (an absolute path)",
        text, result.string(), base.string()));
  }
  return std::optional<std::string>(result.string());
}

std::optional<std::string> path_value_problem(const search::ParamValue& value) {
  const auto* text = std::get_if<std::string>(&value);
  if (text == nullptr) return std::nullopt;
  if (text->starts_with('/')) return "begins with '/' (an absolute path)";
  std::size_t start = 0;
  while (start <= text->size()) {
    auto end = text->find('/', start);
    if (end == std::string::npos) end = text->size();
    if (text->compare(start, end - start, "..") == 0 && end - start == 2)
      return "holds a '..' part (it climbs out of the folder)";
    start = end + 1;
  }
  return std::nullopt;
}

Result<std::string> expand_text(const std::string& text, const TemplateValues& values) {
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  for (int line = 1; start < text.size(); ++line) {
    auto end = text.find('\n', start);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    auto e = expand_template(text.substr(start, end - start), values);
    if (!e) return std::unexpected(fmt::format("line {}: {}", line, e.error()));
    if (*e) {
      out += **e;
      if (newline) out += '\n';
    }
    start = end + 1;
  }
  return out;
}

Result<std::vector<std::string>> expand_list(const std::vector<std::string>& texts,
                                             const TemplateValues& values,
                                             const std::string& where) {
  std::vector<std::string> out;
  for (const auto& text : texts) {
    auto e = expand_template(text, values);
    if (!e) return std::unexpected(fmt::format("{}: {}", where, e.error()));
    if (*e) out.push_back(std::move(**e));
  }
  return out;
}

}  // namespace tune::tuner
