#include "tuner/measure/objective.h"

#include <re2/re2.h>

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tuner/base/number_text.h"
#include "tuner/base/text.h"
#include "tuner/study/patterns.h"

namespace tune::tuner {
namespace {

// A log bigger than this is not a training log: refuse it rather than hold it in memory.
constexpr std::uintmax_t k_max_log_bytes = 256ull << 20;

Result<std::string> slurp(const std::string& path, const char* what, std::uintmax_t max_bytes) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes) {
    return std::unexpected(fmt::format("{} {} has {} bytes, more than the {} MiB read", what, path,
                                       size, max_bytes >> 20));
  }
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

Result<double> finite_number(const nlohmann::json& entry, const std::string& key,
                             const std::string& where) {
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

Result<nlohmann::json> read_log(const std::string& path) {
  auto text = slurp(path, "log", k_max_log_bytes);
  if (!text) return std::unexpected(text.error());
  auto j = nlohmann::json::parse(quote_non_finite(*text), nullptr, false);
  if (j.is_discarded()) return std::unexpected(fmt::format("log {} is not valid JSON", path));
  if (!j.is_array())
    return std::unexpected(fmt::format("log {} is not a JSON array of entries", path));
  return j;
}

namespace {

// A regex's match: its text, and where it is in the text scanned.
struct Match {
  std::string text;
  std::size_t begin = 0, end = 0;
};

// The last match of `pattern` in `text` (its first group, else all of it); nullopt for none.
Result<std::optional<Match>> last_match(const std::string& text, const std::string& pattern) {
  const RE2 re(pattern, regex_options());
  if (!re.ok()) {
    return std::unexpected(fmt::format("objective regex '{}': {}", printable(pattern), re.error()));
  }
  const int groups = std::min(re.NumberOfCapturingGroups(), 1);
  re2::StringPiece input(text), match[2];
  std::optional<Match> last;
  std::size_t pos = 0;
  while (pos <= text.size() &&
         re.Match(input, pos, text.size(), RE2::UNANCHORED, match, groups + 1)) {
    const auto& m = match[groups];
    last = Match{};
    if (m.data() != nullptr) {
      last->text = std::string(m);
      last->begin = static_cast<std::size_t>(m.data() - text.data());
      last->end = last->begin + m.size();
    }
    const auto end = static_cast<std::size_t>(match[0].data() - text.data()) + match[0].size();
    pos = match[0].empty() ? end + 1 : end;  // an empty match must not loop forever
  }
  return last;
}

// Text that must be one finite number written in `style` (a regex match, a CSV cell), or why
// it is not.
Result<double> number_text(const std::string& m, const std::string& what,
                           NumberStyle style = NumberStyle::plain) {
  auto v = parse_number_text(m, style);
  if (!v)
    return std::unexpected(fmt::format("{} '{}', which {}", what, printable(m, 200), v.error()));
  return v;
}

// A match's number, unless the match holds only part of the number the job wrote: `12` read
// out of `12,345.6` would be a made-up value, so the trial fails naming the text it saw.
Result<double> matched_number(const std::string& text, const Match& m, const std::string& what,
                              NumberStyle style) {
  if (auto why = partial_number_reason(text, m.begin, m.end, what))
    return std::unexpected(std::move(*why));
  return number_text(m.text, what, style);
}

// The regex objective: the last match in the tail of the chosen stream, read as a finite number.
Result<double> regex_objective(const ObjectiveSpec& objective, const std::string& stdout_path,
                               const std::string& stderr_path) {
  const auto& path = objective.stream == "stderr" ? stderr_path : stdout_path;
  if (!std::filesystem::exists(path)) {
    return std::unexpected(fmt::format("{} {} was not written", objective.stream, path));
  }
  // The last match is what counts, so a bounded tail is enough however much the trial wrote;
  // RE2 runs in linear time without recursion, whatever the pattern and the bytes.
  const auto text = tail_of_file(path, k_regex_scan_bytes);
  auto last = last_match(text, objective.regex);
  if (!last) return std::unexpected(last.error());
  if (!*last) {
    return std::unexpected(fmt::format("objective regex '{}' matched nothing in {}",
                                       printable(objective.regex), objective.stream));
  }
  return matched_number(text, **last, "objective regex matched", objective.number);
}

// One CSV line split into fields: ',' separates, '"' quotes ("" is a quote inside).
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  for (auto& f : out) {  // "gflops " and " 12.5" as a spreadsheet would read them
    const auto a = f.find_first_not_of(" \t");
    const auto b = f.find_last_not_of(" \t");
    f = a == std::string::npos ? "" : f.substr(a, b - a + 1);
  }
  return out;
}

Result<double> json_metric(const std::string& text, const FileMetric& m, const std::string& path) {
  auto doc = nlohmann::json::parse(quote_non_finite(text), nullptr, false);
  if (doc.is_discarded()) return std::unexpected(fmt::format("file {} is not valid JSON", path));
  auto steps = parse_json_path(m.json);
  if (!steps) return std::unexpected(steps.error());
  const nlohmann::json* at = &doc;
  std::string walked;
  for (const auto& step : *steps) {
    if (step.index) {
      walked += fmt::format("[{}]", *step.index);
      if (!at->is_array() || *step.index >= at->size()) {
        return std::unexpected(fmt::format("file {} has no '{}' (json: {})", path, walked, m.json));
      }
      at = &(*at)[*step.index];
    } else {
      walked += (walked.empty() ? "" : ".") + step.name;
      const auto it = at->is_object() ? at->find(step.name) : at->end();
      if (!at->is_object() || it == at->end()) {
        return std::unexpected(fmt::format("file {} has no '{}' (json: {})", path, walked, m.json));
      }
      at = &*it;
    }
  }
  if (is_non_finite_token(*at)) {
    return std::unexpected(
        fmt::format("file {}: '{}' is not finite ({})", path, m.json, at->get<std::string>()));
  }
  if (!at->is_number()) {
    return std::unexpected(fmt::format("file {}: '{}' is not a number ({})", path, m.json,
                                       printable(at->dump(), 200)));
  }
  return at->get<double>();
}

Result<double> csv_metric(const std::string& text, const FileMetric& m, const std::string& path) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < text.size();) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) lines.push_back(line);
    start = end + 1;
  }
  if (lines.empty()) return std::unexpected(fmt::format("file {} is empty (csv: {})", path, m.csv));
  const auto header = csv_fields(lines.front());
  const auto col = std::ranges::find(header, m.csv);
  if (col == header.end()) {
    return std::unexpected(fmt::format("file {} has no column '{}' (its header: {})", path,
                                       printable(m.csv),
                                       printable(std::string(lines.front()), 200)));
  }
  const auto c = static_cast<std::size_t>(col - header.begin());
  if (lines.size() == 1)
    return std::unexpected(fmt::format("file {} has no data row (csv: {})", path, m.csv));
  std::optional<double> chosen;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (m.csv_row == "first" && i > 1) break;
    if (m.csv_row == "last" && i + 1 < lines.size()) continue;
    const auto fields = csv_fields(lines[i]);
    if (c >= fields.size()) {
      return std::unexpected(
          fmt::format("file {} row {} has no column '{}'", path, i + 1, printable(m.csv)));
    }
    // More fields than the header names: an unquoted 12,345.6 split in two, or a row of another
    // shape; either way the column's cell is not what the header says it is.
    for (std::size_t f = header.size(); f < fields.size(); ++f) {
      if (fields[f].empty()) continue;
      return std::unexpected(fmt::format(
          "file {} row {} has {} fields where its header names {} ('{}'): a number written "
          "with ',' must be quoted in a CSV file",
          path, i + 1, fields.size(), header.size(), printable(std::string(lines[i]), 160)));
    }
    auto v = number_text(
        fields[c], fmt::format("file {} row {} column '{}' holds", path, i + 1, printable(m.csv)),
        m.number);
    if (!v) return std::unexpected(v.error());
    if (!chosen || (m.csv_row == "min" ? *v < *chosen : *v > *chosen)) chosen = *v;
  }
  return *chosen;
}

// The log objective: `key` of the entry `objective.entry` chooses (last, first, min, max);
// sets the reading's value and entry.
Result<void> log_objective(const ObjectiveSpec& objective, const nlohmann::json& entries,
                           const std::string& log_path, ObjectiveReading& reading) {
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
  return {};
}

// Why the file `p` is not there at the trial's end: never seen, or deleted during the trial.
std::string missing_file(const std::string& p, const std::string& what,
                         const TrialFileWatch* watch) {
  const FileSighting* seen = watch ? watch->sighting(p) : nullptr;
  if (seen && (seen->at_launch || seen->last_seen_s)) {
    const std::string when =
        seen->at_launch && seen->last_seen_s
            ? fmt::format("there at launch and seen {:.1f} s after it", *seen->last_seen_s)
        : seen->at_launch ? std::string("there at launch")
                          : fmt::format("seen {:.1f} s after launch", *seen->last_seen_s);
    return fmt::format(
        "file {} was deleted during the trial: {} ({} bytes), gone at its end (looked for {})", p,
        when, seen->bytes, what);
  }
  if (seen) {
    return fmt::format(
        "file {} was not written (looked for {}; not there at launch nor at any of {} looks "
        "while the trial ran)",
        p, what, watch->looks());
  }
  return fmt::format("file {} was not written (looked for {})", p, what);
}

}  // namespace

std::optional<std::string> partial_number_reason(std::string_view text, std::size_t begin,
                                                 std::size_t end, std::string_view what) {
  const auto whole = number_cut_by(text, begin, end);
  if (!whole) return std::nullopt;
  const auto line_begin = text.rfind('\n', begin == 0 ? 0 : begin - 1);
  const auto from = std::max(line_begin == std::string_view::npos ? 0 : line_begin + 1,
                             begin > 60 ? begin - 60 : 0);
  const auto line_end = std::min(text.find('\n', end), end + 60);
  return fmt::format(
      "{} '{}', only part of the number '{}' in '{}': the regex must match the whole number "
      "(with number: grouped for 12,345.6, number: decimal_comma for 1,75)",
      what, printable(text.substr(begin, end - begin), 60), printable(*whole, 60),
      printable(text.substr(from, line_end - from), 160));
}

Result<double> read_file_metric(const FileMetric& metric, const std::string& workdir,
                                const TemplateValues& values, const TrialFileWatch* watch) {
  auto path = file_metric_path(metric, workdir, values);
  if (!path) return std::unexpected(path.error());
  const std::string& p = *path;
  const std::string what = !metric.regex.empty()
                               ? fmt::format("regex '{}'", printable(metric.regex))
                           : !metric.json.empty() ? fmt::format("json '{}'", metric.json)
                                                  : fmt::format("csv column '{}'", metric.csv);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) {
    return std::unexpected(missing_file(p, what, watch));
  }
  if (!metric.regex.empty()) {
    // The last match is what counts: a bounded tail, as for stdout.
    const auto text = tail_of_file(p, k_regex_scan_bytes);
    auto last = last_match(text, metric.regex);
    if (!last) return std::unexpected(last.error());
    if (!*last) return std::unexpected(fmt::format("{} matched nothing in file {}", what, p));
    return matched_number(text, **last, fmt::format("{} in file {} matched", what, p),
                          metric.number);
  }
  auto text = slurp(p, "file", k_max_log_bytes);
  if (!text) return std::unexpected(text.error());
  if (!metric.json.empty()) return json_metric(*text, metric, p);
  return csv_metric(*text, metric, p);
}

Result<ObjectiveReading> read_objective(const ObjectiveSpec& objective,
                                        const std::vector<ConstraintSpec>& constraints,
                                        const std::string& log_path, const std::string& stdout_path,
                                        const std::string& stderr_path, double wall_s,
                                        const std::string& workdir, const TemplateValues& values,
                                        std::optional<double> window_value,
                                        const TrialFileWatch* files) {
  ObjectiveReading reading;
  nlohmann::json entries;
  bool need_log =
      !objective.use_regex && !objective.wall_time && !objective.file && !objective.window;
  for (const auto& c : constraints) need_log = need_log || !c.file;
  if (need_log) {
    auto log = read_log(log_path);
    if (!log) return std::unexpected(log.error());
    entries = std::move(*log);
    if (entries.empty()) return std::unexpected(fmt::format("log {} has no entries", log_path));
  }
  if (objective.window) {
    if (!window_value || !std::isfinite(*window_value))
      return std::unexpected(std::string("the window measured no rate"));
    reading.value = *window_value;
    if (!entries.is_null()) reading.entry = entries.back();
  } else if (objective.file) {
    auto v = read_file_metric(*objective.file, workdir, values, files);
    if (!v) return std::unexpected(v.error());
    reading.value = *v;
    if (!entries.is_null()) reading.entry = entries.back();
  } else if (objective.wall_time) {
    if (!std::isfinite(wall_s) || wall_s <= 0)
      return std::unexpected(fmt::format("no wall time was measured ({})", wall_s));
    reading.value = wall_s;
    if (!entries.is_null()) reading.entry = entries.back();
  } else if (objective.use_regex) {
    auto v = regex_objective(objective, stdout_path, stderr_path);
    if (!v) return std::unexpected(v.error());
    reading.value = *v;
    if (!entries.is_null()) reading.entry = entries.back();
  } else if (auto ok = log_objective(objective, entries, log_path, reading); !ok) {
    return std::unexpected(ok.error());
  }
  for (const auto& c : constraints) {
    auto v =
        c.file ? read_file_metric(*c.file, workdir, values, files)
               : finite_number(reading.entry, c.key, fmt::format("log {} (constraint)", log_path));
    if (!v) return std::unexpected(v.error());
    double worst = -HUGE_VAL;
    if (c.min) worst = std::max(worst, *c.min - *v);
    if (c.max) worst = std::max(worst, *v - *c.max);
    reading.constraints.push_back(worst);
  }
  return reading;
}

Result<ObjectiveReading> read_objectives(
    const std::vector<ObjectiveSpec>& objectives, const std::vector<ConstraintSpec>& constraints,
    const std::string& log_path, const std::string& stdout_path, const std::string& stderr_path,
    double wall_s, const std::string& workdir, const TemplateValues& values,
    std::optional<double> window_value, const TrialFileWatch* files) {
  if (objectives.size() == 1) {
    return read_objective(objectives[0], constraints, log_path, stdout_path, stderr_path, wall_s,
                          workdir, values, window_value, files);
  }
  ObjectiveReading all;
  for (std::size_t i = 0; i < objectives.size(); ++i) {
    auto one = read_objective(objectives[i], i == 0 ? constraints : std::vector<ConstraintSpec>{},
                              log_path, stdout_path, stderr_path, wall_s, workdir, values,
                              std::nullopt, files);
    if (!one) return std::unexpected(fmt::format("objective[{}]: {}", i, one.error()));
    all.values.push_back(one->value);
    if (i == 0) all = {one->value, std::move(all.values), one->constraints, one->entry};
  }
  return all;
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
