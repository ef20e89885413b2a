#include "tuner/objective.h"

#include <fmt/format.h>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

namespace tune::tuner {
namespace {

std::expected<std::string, std::string> slurp(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(fmt::format("{} {} was not written", what, path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Python's json module (Chainer's LogReport) writes NaN, Infinity and -Infinity, which are not
// JSON. Quote them outside strings so the log still parses and the value is reported as
// non-finite rather than the whole file as broken.
std::string quote_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
      if (text.compare(i, token.size(), token) == 0) {
        out += '"';
        out += token;
        out += '"';
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

bool is_non_finite_token(const nlohmann::json& v) {
  return v.is_string() && (v == "NaN" || v == "Infinity" || v == "-Infinity");
}

std::expected<double, std::string> finite_number(const nlohmann::json& entry,
                                                 const std::string& key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end()) return std::unexpected(fmt::format("{} has no key '{}'", where, key));
  if (is_non_finite_token(*it)) {
    return std::unexpected(
        fmt::format("{}: '{}' is not finite ({})", where, key, it->get<std::string>()));
  }
  if (!it->is_number()) {
    return std::unexpected(fmt::format("{}: '{}' is not a number ({})", where, key, it->dump()));
  }
  const double v = it->get<double>();
  if (!std::isfinite(v)) return std::unexpected(fmt::format("{}: '{}' is not finite", where, key));
  return v;
}

}  // namespace

std::expected<nlohmann::json, std::string> read_log(const std::string& path) {
  auto text = slurp(path, "log");
  if (!text) return std::unexpected(text.error());
  auto j = nlohmann::json::parse(quote_non_finite(*text), nullptr, false);
  if (j.is_discarded()) return std::unexpected(fmt::format("log {} is not valid JSON", path));
  if (!j.is_array())
    return std::unexpected(fmt::format("log {} is not a JSON array of entries", path));
  return j;
}

std::expected<ObjectiveReading, std::string> read_objective(
    const ObjectiveSpec& objective, const std::vector<ConstraintSpec>& constraints,
    const std::string& log_path, const std::string& stdout_path, const std::string& stderr_path) {
  ObjectiveReading reading;
  nlohmann::json entries;
  const bool need_log = !objective.use_regex || !constraints.empty();
  if (need_log) {
    auto log = read_log(log_path);
    if (!log) return std::unexpected(log.error());
    entries = std::move(*log);
    if (entries.empty()) return std::unexpected(fmt::format("log {} has no entries", log_path));
  }
  if (objective.use_regex) {
    const auto& path = objective.stream == "stderr" ? stderr_path : stdout_path;
    auto text = slurp(path, objective.stream.c_str());
    if (!text) return std::unexpected(text.error());
    const std::regex re(objective.regex);
    std::smatch last;
    bool found = false;
    for (auto it = std::sregex_iterator(text->begin(), text->end(), re);
         it != std::sregex_iterator(); ++it) {
      last = *it;
      found = true;
    }
    if (!found) {
      return std::unexpected(fmt::format("objective regex '{}' matched nothing in {}",
                                         objective.regex, objective.stream));
    }
    const std::string m = last.size() > 1 ? last[1].str() : last[0].str();
    char* end = nullptr;
    const double v = std::strtod(m.c_str(), &end);
    if (end == m.c_str() || *end != '\0' || !std::isfinite(v)) {
      return std::unexpected(
          fmt::format("objective regex matched '{}', which is not a finite number", m));
    }
    reading.value = v;
    if (!entries.is_null()) reading.entry = entries.back();
  } else {
    std::size_t chosen = entries.size() - 1;
    if (objective.entry == "first") chosen = 0;
    if (objective.entry == "min" || objective.entry == "max") {
      std::optional<double> best;
      for (std::size_t i = 0; i < entries.size(); ++i) {
        auto v =
            finite_number(entries[i], objective.key, fmt::format("log {} entry {}", log_path, i));
        if (!v) return std::unexpected(v.error());
        if (!best || (objective.entry == "min" ? *v < *best : *v > *best)) {
          best = *v;
          chosen = i;
        }
      }
    }
    const auto& entry = entries[chosen];
    if (!entry.is_object()) {
      return std::unexpected(fmt::format("log {} entry {} is not an object", log_path, chosen));
    }
    auto v = finite_number(entry, objective.key, fmt::format("log {} entry {}", log_path, chosen));
    if (!v) return std::unexpected(v.error());
    reading.value = *v;
    reading.entry = entry;
  }
  for (const auto& c : constraints) {
    auto v = finite_number(reading.entry, c.key, fmt::format("log {} (constraint)", log_path));
    if (!v) return std::unexpected(v.error());
    double worst = -HUGE_VAL;
    if (c.min) worst = std::max(worst, *c.min - *v);
    if (c.max) worst = std::max(worst, *v - *c.max);
    reading.constraints.push_back(worst);
  }
  return reading;
}

std::vector<std::pair<std::int64_t, double>> intermediate_points(const ObjectiveSpec& objective,
                                                                 const nlohmann::json& entries) {
  std::vector<std::pair<std::int64_t, double>> points;
  if (!entries.is_array()) return points;
  const auto& key = objective.intermediate_key.empty() ? objective.key : objective.intermediate_key;
  for (const auto& e : entries) {
    if (!e.is_object()) continue;
    const auto v = e.find(key);
    const auto s = e.find(objective.step_key);
    if (v == e.end() || s == e.end() || !v->is_number() || !s->is_number_integer()) continue;
    const double value = v->get<double>();
    if (std::isfinite(value)) points.emplace_back(s->get<std::int64_t>(), value);
  }
  return points;
}

}  // namespace tune::tuner
