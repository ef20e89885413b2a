// find_progress_lines (tuner/init/init_probe.h): the probe run's lines that show progress, and
// the regex that reads each, for `tune init` to offer a window objective.
#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "tuner/base/number_text.h"
#include "tuner/base/text.h"
#include "tuner/init/init_probe.h"
#include "tuner/measure/objective.h"
#include "tuner/study/patterns.h"

namespace tune::tuner {
namespace {

constexpr std::size_t k_shape_max_bytes = 300;  // longer lines are not progress lines
constexpr int k_min_lines = 4;
constexpr int k_min_moments = 3;
constexpr const char* k_number_re = "[0-9]+(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?";
// A number whose digits a ',' separates ("12,345", "1,75"), where one was seen.
constexpr const char* k_comma_number_re = "[0-9]+(?:[.,][0-9]+)*(?:[eE][-+]?[0-9]+)?";

// The group that reads a counter or a rate written in `style` whole: "12,345" is not 12.
const char* number_group(bool counter, NumberStyle style) {
  switch (style) {
    case NumberStyle::grouped:
      return counter ? "((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+))"
                     : "((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)";
    case NumberStyle::decimal_comma:
      return counter ? "([0-9]+)" : "([0-9]+(?:,[0-9]+)?)";
    case NumberStyle::plain:
      break;
  }
  return counter ? "([0-9]+)" : "([0-9]+(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)";
}

struct Token {
  std::size_t begin = 0, end = 0;
  double value = 0;
  bool integer = true;
  bool comma = false;  // a ',' between its digits: its value waits for the group's style
  bool cut = false;    // digits or a separator touch it (number_cut_by): no regex reads it
};

bool digit(char c) { return c >= '0' && c <= '9'; }
bool alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool blank(char c) { return c == ' ' || c == '\t'; }

// The numbers of a line (digits, a fraction, an exponent) and its shape: the line with each
// replaced by \x01.
std::vector<Token> tokens_of(const std::string& line, std::string& shape) {
  std::vector<Token> out;
  shape.clear();
  for (std::size_t i = 0; i < line.size();) {
    if (!digit(line[i])) {
      shape += line[i++];
      continue;
    }
    Token t;
    t.begin = i;
    // "12,345" or "1,75" is one number, whose value depends on how the job writes numbers
    // (decided for the whole shape, from every line's).
    if (const auto whole = number_token_at(line, i); whole.contains(',')) {
      t.end = i + whole.size();
      t.value = std::nan("");
      t.integer = false;
      t.comma = true;
      i = t.end;
      out.push_back(t);
      shape += '\x01';
      continue;
    }
    while (i < line.size() && digit(line[i])) ++i;
    if (i + 1 < line.size() && line[i] == '.' && digit(line[i + 1])) {
      t.integer = false;
      ++i;
      while (i < line.size() && digit(line[i])) ++i;
    }
    if (i + 1 < line.size() && (line[i] == 'e' || line[i] == 'E')) {
      std::size_t j = i + 1;
      if (j < line.size() && (line[j] == '+' || line[j] == '-')) ++j;
      if (j < line.size() && digit(line[j])) {
        t.integer = false;
        i = j;
        while (i < line.size() && digit(line[i])) ++i;
      }
    }
    t.end = i;
    t.value = std::strtod(line.substr(t.begin, t.end - t.begin).c_str(), nullptr);
    if (!std::isfinite(t.value)) t.integer = false;
    t.cut = number_cut_by(line, t.begin, t.end).has_value();  // "1.2" of "1.2.3"
    out.push_back(t);
    shape += '\x01';
  }
  // One shape whatever the spacing: a column that widens ("step    9" -> "step   10" -> "step
  // 100", "[  9/100]" -> "[100/100]") or a table's alignment changes the blanks, not the line.
  std::string flat;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (!blank(shape[i])) {
      flat += shape[i];
      continue;
    }
    while (i + 1 < shape.size() && blank(shape[i + 1])) ++i;
    const bool by_number = (!flat.empty() && flat.back() == '\x01') ||
                           (i + 1 < shape.size() && shape[i + 1] == '\x01');
    if (!by_number) flat += ' ';
  }
  shape = std::move(flat);
  return out;
}

// RE2 text for literal `s`: punctuation escaped; letters, digits, '_', space and UTF-8 bytes kept.
std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '_' && c != ' ' && u < 0x80) out += '\\';
    out += c;
  }
  return out;
}

// RE2 text for the literal text between two numbers of a line (or a line's start or end):
// blanks beside a number match any blanks or none (a column that widens eats its padding), a
// run of blanks inside the text one or more, blanks alone between two numbers one or more.
std::string flexible(std::string_view s, bool number_before, bool number_after) {
  const auto first = std::find_if_not(s.begin(), s.end(), blank);
  if (first == s.end()) {
    if (s.empty()) return "";
    return number_before && number_after ? "\\s+" : "\\s*";
  }
  const auto last = std::find_if_not(s.rbegin(), s.rend(), blank).base();
  std::string out = number_before || first != s.begin() ? "\\s*" : "";
  for (auto it = first; it != last; ++it) {
    if (!blank(*it)) {
      out += escape(std::string_view(&*it, 1));
      continue;
    }
    while (blank(*(it + 1))) ++it;
    out += "\\s+";
  }
  if (number_after || last != s.end()) out += "\\s*";
  return out;
}

// The word just before a number ("step" in "step 10", "iter" in "iter: 10/500"), lower case.
std::string name_before(const std::string& line, std::size_t begin) {
  std::size_t i = begin;
  int separators = 0;
  while (i > 0 && separators < 3 && std::string_view(" :=#[(\t").contains(line[i - 1])) {
    --i;
    ++separators;
  }
  const std::size_t end = i;
  while (i > 0 && (alpha(line[i - 1]) || line[i - 1] == '_')) --i;
  return ascii_lower(line.substr(i, end - i));
}

// The word just after a number ("samples/s" in "12.5 samples/s").
std::string unit_after(const std::string& line, std::size_t end) {
  std::size_t i = end;
  while (i < line.size() && line[i] == ' ') ++i;
  const std::size_t from = i;
  while (i < line.size() && !std::string_view(" ,;()[]").contains(line[i])) ++i;
  return ascii_lower(line.substr(from, i - from));
}

bool step_like(const std::string& name) {
  static const std::set<std::string> k_names = {
      "step",    "steps",   "iter",   "iters",  "iteration",   "iterations", "it",     "batch",
      "batches", "samples", "images", "tokens", "global_step", "update",     "updates"};
  return k_names.contains(name);
}

bool time_like(const std::string& name, const std::string& unit) {
  return name.contains("time") || name.contains("elapsed") || name.contains("sec") || name == "t" ||
         unit == "s" || unit == "ms" || unit == "sec" || unit == "seconds";
}

// Short names of rates that benchmarks print (sysbench's "eps: 3922.05", "tps:", "qps:"): a
// rate only when its values vary, since "eps" is an epsilon too.
bool short_rate_name(const std::string& name) {
  return name == "eps" || name == "tps" || name == "qps" || name == "ops";
}

bool rate_like(const std::string& name, const std::string& unit) {
  if (short_rate_name(name)) return true;
  const std::string both = name + " " + unit;
  for (const char* w :
       {"/s", "/sec", "per_s", "per sec", "throughput", "ips", "fps", "tflop", "gflop"})
    if (both.contains(w)) return true;
  return false;
}

struct Group {
  std::string source, shape;
  std::vector<const TimedLine*> lines;
  std::vector<std::vector<Token>> tokens;
  std::vector<NumberStyle> styles;  // per token: how every line writes it
  std::vector<std::string> why;     // per token: what showed a style not plain ("" for plain)
};

// The RE2 text for token `k` of `group` where it is not the number read: any number, with a
// ',' between its digits when some line writes one there.
const char* other_number_re(const Group& group, std::size_t k) {
  for (const auto& toks : group.tokens)
    if (toks[k].comma) return k_comma_number_re;
  return k_number_re;
}

// Each token's style: the one that reads it whole on every line of the group (plain when no
// line writes a ',' in it; "1,234" throughout reads either way: as `comma` says the stream
// writes its numbers), and the values read so. A token no one style reads ("0.5,0.6", "12,345.6"
// on one line and "1,75" on another) keeps no value and is offered as no number.
void resolve_commas(Group& g, const std::pair<NumberStyle, std::string>& comma) {
  const std::size_t n = g.tokens.front().size();
  g.styles.assign(n, NumberStyle::plain);
  g.why.assign(n, "");
  for (std::size_t k = 0; k < n; ++k) {
    if (std::none_of(g.tokens.begin(), g.tokens.end(), [&](const auto& t) { return t[k].comma; }))
      continue;
    const auto text = [&](std::size_t i) {
      return std::string_view(g.lines[i]->text)
          .substr(g.tokens[i][k].begin, g.tokens[i][k].end - g.tokens[i][k].begin);
    };
    const auto reads = [&](NumberStyle style) {
      for (std::size_t i = 0; i < g.tokens.size(); ++i)
        if (!parse_number_text(text(i), style)) return false;
      return true;
    };
    const bool grouped = reads(NumberStyle::grouped), decimal = reads(NumberStyle::decimal_comma);
    if (!grouped && !decimal) continue;
    std::size_t shown = g.tokens.size() - 1;  // the last line that writes a ',' in it
    while (!g.tokens[shown][k].comma) --shown;
    NumberStyle style = grouped ? NumberStyle::grouped : NumberStyle::decimal_comma;
    std::string why = fmt::format("it printed \"{}\"", text(shown));
    if (grouped && decimal) {
      style = comma.first;
      why = fmt::format("\"{}\" reads either way; {}", text(shown), comma.second);
    }
    g.styles[k] = style;
    g.why[k] = std::move(why);
    for (std::size_t i = 0; i < g.tokens.size(); ++i) {
      auto& t = g.tokens[i][k];
      const auto s = text(i);
      t.value = *parse_number_text(s, style);
      t.integer = style == NumberStyle::grouped ? s.find_first_of(".eE") == std::string_view::npos
                                                : s.find_first_of(",") == std::string_view::npos;
    }
  }
}

// The pattern's numbers on each of `group`'s lines are `want(i)`, and it matches no other line
// of the stream in `others`.
template <typename Want>
bool verified(const std::string& pattern, const Group& group,
              const std::vector<const TimedLine*>& others, Want want) {
  for (std::size_t i = 0; i < group.lines.size(); ++i) {
    const auto got = regex_first_group(pattern, group.lines[i]->text);
    if (!got || !want(i, *got)) return false;
  }
  for (const auto* line : others) {
    if (regex_first_group(pattern, line->text)) return false;
  }
  return true;
}

// The regex reading token `k` of `group`'s lines: the literal text just before it (when it has
// a word), else the whole line up to it; nullopt when neither reads exactly its numbers.
std::optional<std::string> regex_for(const Group& group, std::size_t k, const char* number_group,
                                     const std::vector<const TimedLine*>& others) {
  const std::string& first = group.lines.front()->text;
  const auto& toks = group.tokens.front();
  const auto want = [&](std::size_t i, const std::string& got) {
    const auto v = parse_number_text(got, group.styles[k]);
    const double expected = group.tokens[i][k].value;
    return v && std::abs(*v - expected) <= 1e-9 * std::max(1.0, std::abs(expected));
  };
  const std::size_t from = k == 0 ? 0 : toks[k - 1].end;
  std::string before = first.substr(from, toks[k].begin - from);
  if (before.size() > 24) {
    before = before.substr(before.size() - 24);
    const auto space = before.find(' ');
    if (space != std::string::npos && space + 1 < before.size()) before = before.substr(space + 1);
  }
  while (!before.empty() && blank(before.front())) before.erase(0, 1);
  if (std::any_of(before.begin(), before.end(), alpha)) {
    const bool word = alpha(before.front()) || before.front() == '_';
    const std::string short_re = (word ? "\\b" : "") + flexible(before, false, true) + number_group;
    if (verified(short_re, group, others, want)) return short_re;
  }
  // The whole line up to the number, the other numbers generalised.
  std::string full = "^";
  std::size_t at = 0;
  for (std::size_t j = 0; j < k; ++j) {
    full += flexible(first.substr(at, toks[j].begin - at), j > 0, true) + other_number_re(group, j);
    at = toks[j].end;
  }
  full += flexible(first.substr(at, toks[k].begin - at), k > 0, true) + number_group;
  if (verified(full, group, others, want)) return full;
  // The whole line, the other numbers generalised: a table's row ("     600   1.63  -4.73 ...")
  // whose start alone other lines share.
  at = toks[k].end;
  for (std::size_t j = k + 1; j < toks.size(); ++j) {
    full += flexible(first.substr(at, toks[j].begin - at), true, true) + other_number_re(group, j);
    at = toks[j].end;
  }
  std::string rest = first.substr(at);
  while (!rest.empty() && (rest.back() == '\r' || blank(rest.back()))) rest.pop_back();
  full += flexible(rest, true, false);
  if (verified(full, group, others, want)) return full;
  return std::nullopt;
}

// The whole shape, every number generalised: matches each line of the group.
std::optional<std::string> lines_regex(const Group& group,
                                       const std::vector<const TimedLine*>& others) {
  const std::string& first = group.lines.front()->text;
  std::string re = "^";
  std::size_t at = 0;
  const auto& toks = group.tokens.front();
  for (std::size_t j = 0; j < toks.size(); ++j) {
    re += flexible(first.substr(at, toks[j].begin - at), j > 0, true) + other_number_re(group, j);
    at = toks[j].end;
  }
  std::string rest = first.substr(at);
  while (!rest.empty() && (rest.back() == '\r' || blank(rest.back()))) rest.pop_back();
  re += flexible(rest, !toks.empty(), false);
  if (verified(re, group, others, [](std::size_t, const std::string&) { return true; })) return re;
  return std::nullopt;
}

// "step 40/500": the number after counter `k` and a '/', when every line gives the same one
// and no count passes it.
std::optional<double> total_of(const Group& group, std::size_t k) {
  const auto& toks = group.tokens.front();
  if (k + 1 >= toks.size()) return std::nullopt;
  std::string between =
      group.lines.front()->text.substr(toks[k].end, toks[k + 1].begin - toks[k].end);
  std::erase_if(between, blank);
  if (between != "/") return std::nullopt;
  const double total = toks[k + 1].value;
  for (std::size_t i = 0; i < group.tokens.size(); ++i) {
    if (group.tokens[i][k + 1].value != total || group.tokens[i][k].value > total)
      return std::nullopt;
  }
  return total;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The standard deviation over the mean of `rates`; nullopt for fewer than 3 or a mean of 0.
std::optional<double> spread_of(const std::vector<double>& rates) {
  if (rates.size() < 3) return std::nullopt;
  double mean = 0;
  for (double r : rates) mean += r;
  mean /= static_cast<double>(rates.size());
  if (mean == 0) return std::nullopt;
  double ss = 0;
  for (double r : rates) ss += (r - mean) * (r - mean);
  return std::sqrt(ss / static_cast<double>(rates.size() - 1)) / std::abs(mean);
}

// Rate and spread of (t, v) points of a counter: over the run, and between 5 stretches of its
// last 80% (the first stretch of a job is its slowest).
void counter_rate(const std::vector<std::pair<double, double>>& pts, ProgressLines& p) {
  std::vector<std::pair<double, double>> points;  // one per moment: the last value read then
  for (const auto& pt : pts) {
    if (!points.empty() && points.back().first == pt.first) {
      points.back().second = pt.second;
    } else {
      points.push_back(pt);
    }
  }
  if (points.size() < 2) return;
  const double span = points.back().first - points.front().first;
  if (span <= 0) return;
  p.rate = (points.back().second - points.front().second) / span;
  const double from = points.front().first + 0.2 * span;
  std::vector<std::pair<double, double>> tail;
  for (const auto& pt : points)
    if (pt.first >= from) tail.push_back(pt);
  if (tail.size() < 6) return;
  constexpr int k_stretches = 5;
  const double t0 = tail.front().first, len = tail.back().first - t0;
  std::vector<double> rates;
  std::size_t at = 0;
  for (int b = 1; b <= k_stretches; ++b) {
    const double until = t0 + len * b / k_stretches;
    std::size_t next = at;
    while (next + 1 < tail.size() && tail[next + 1].first <= until + 1e-12) ++next;
    if (next == at) continue;
    rates.push_back((tail[next].second - tail[at].second) / (tail[next].first - tail[at].first));
    at = next;
  }
  p.spread = spread_of(rates);
}

}  // namespace

std::vector<ProgressLines> find_progress_lines(const std::vector<TimedLine>& lines) {
  std::map<std::pair<std::string, std::string>, Group> groups;
  std::map<std::string, std::vector<const TimedLine*>> by_source;
  for (const auto& line : lines) {
    by_source[line.source].push_back(&line);
    if (line.text.size() > k_shape_max_bytes ||
        !std::any_of(line.text.begin(), line.text.end(),
                     [](char c) { return alpha(c) || digit(c); }))
      continue;
    if (std::any_of(line.text.begin(), line.text.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r';
        }))
      continue;
    std::string shape;
    auto toks = tokens_of(line.text, shape);
    Group& g = groups[{line.source, shape}];
    g.source = line.source;
    g.shape = shape;
    g.lines.push_back(&line);
    g.tokens.push_back(std::move(toks));
  }
  struct Candidate {
    int kind;  // 0 step-like counter, 1 counter, 2 rate, 3 lines
    ProgressLines p;
  };
  std::map<std::string, std::pair<NumberStyle, std::string>> comma_of;  // per source
  for (const auto& [source, ls] : by_source) {
    std::string text;
    for (const auto* l : ls) (text += l->text) += '\n';
    comma_of[source] = comma_style_of(text);
  }
  std::vector<Candidate> found;
  for (auto& [key, g] : groups) {
    if (static_cast<int>(g.lines.size()) < k_min_lines) continue;
    resolve_commas(g, comma_of[g.source]);
    std::set<double> moments;
    for (const auto* l : g.lines) moments.insert(l->t);
    if (static_cast<int>(moments.size()) < k_min_moments) continue;
    std::vector<const TimedLine*> others;
    for (const auto* l : by_source[g.source]) {
      if (std::find(g.lines.begin(), g.lines.end(), l) == g.lines.end()) others.push_back(l);
    }
    ProgressLines base;
    base.source = g.source;
    base.example = printable(g.lines.back()->text, 120);
    base.count = static_cast<int>(g.lines.size());
    base.first_s = g.lines.front()->t;
    base.span_s = g.lines.back()->t - g.lines.front()->t;
    std::vector<double> gaps;
    double last = -1;
    for (double m : moments) {
      if (last >= 0) gaps.push_back(m - last);
      last = m;
    }
    base.interval_s = median_of(gaps);
    // Lines that stop coming while their stream goes on cannot measure a trial: the window
    // would wait for the next one in vain (a format that changed mid-run, a phase that ended).
    std::set<double> after;
    int lines_after = 0;
    for (const auto* l : by_source[g.source]) {
      if (l->t <= g.lines.back()->t) continue;
      ++lines_after;
      after.insert(l->t);
    }
    if (lines_after >= k_min_lines && static_cast<int>(after.size()) >= k_min_moments)
      base.stopped = fmt::format(
          "they stopped at {:.1f} s after launch while {} more line(s) came on {} until {:.1f} s",
          g.lines.back()->t, lines_after, g.source, *after.rbegin());

    std::optional<Candidate> best;
    const std::size_t n_tokens = g.tokens.front().size();
    for (std::size_t k = 0; k < n_tokens; ++k) {
      const auto& first = g.tokens.front()[k];
      const std::string name = name_before(g.lines.front()->text, first.begin);
      const std::string unit = unit_after(g.lines.front()->text, first.end);
      bool counter = true, rate = rate_like(name, unit), varies = false, cut = false;
      for (std::size_t i = 0; i < g.tokens.size(); ++i) {
        const auto& t = g.tokens[i][k];
        counter = counter && t.integer && (i == 0 || t.value > g.tokens[i - 1][k].value);
        rate = rate && t.value > 0;
        varies = varies || t.value != g.tokens.front()[k].value;
        cut = cut || t.cut;
      }
      // A window reading part of a number refuses the line and fails the trial: not offered.
      if (cut) continue;
      if (rate && short_rate_name(name) && !varies) rate = false;
      if (counter && time_like(name, unit)) counter = false;
      if (!counter && !rate) continue;
      const int kind = counter ? (step_like(name) ? 0 : 1) : 2;
      if (best && best->kind <= kind) continue;
      auto re = regex_for(g, k, number_group(counter, g.styles[k]), others);
      if (!re) continue;
      Candidate c{kind, base};
      c.p.measure = counter ? WindowMeasure::counter : WindowMeasure::rate;
      c.p.regex = *re;
      c.p.number = g.styles[k];
      c.p.number_why = g.why[k];
      c.p.name = name;
      if (counter) {
        std::vector<std::pair<double, double>> pts;
        for (std::size_t i = 0; i < g.lines.size(); ++i)
          pts.emplace_back(g.lines[i]->t, g.tokens[i][k].value);
        counter_rate(pts, c.p);
        c.p.last_value = g.tokens.back()[k].value;
        c.p.total = total_of(g, k);
      } else {
        double sum = 0;
        std::vector<double> batch_means;
        const std::size_t n = g.lines.size();
        for (std::size_t i = 0; i < n; ++i) sum += g.tokens[i][k].value;
        c.p.rate = sum / static_cast<double>(n);
        if (n >= 10) {
          for (std::size_t b = 0; b < 5; ++b) {
            double s = 0;
            for (std::size_t i = b * n / 5; i < (b + 1) * n / 5; ++i) s += g.tokens[i][k].value;
            batch_means.push_back(s / static_cast<double>((b + 1) * n / 5 - b * n / 5));
          }
          c.p.spread = spread_of(batch_means);
        }
      }
      best = std::move(c);
    }
    if (!best) {
      auto re = lines_regex(g, others);
      if (!re) continue;
      Candidate c{3, base};
      c.p.measure = WindowMeasure::lines;
      c.p.regex = *re;
      std::vector<std::pair<double, double>> pts;
      for (std::size_t i = 0; i < g.lines.size(); ++i)
        pts.emplace_back(g.lines[i]->t, static_cast<double>(i + 1));
      counter_rate(pts, c.p);
      best = std::move(c);
    }
    found.push_back(std::move(*best));
  }
  std::stable_sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(!a.p.stopped.empty(), a.kind, -a.p.count) <
           std::make_tuple(!b.p.stopped.empty(), b.kind, -b.p.count);
  });
  std::vector<ProgressLines> out;
  for (auto& c : found) out.push_back(std::move(c.p));
  return out;
}

}  // namespace tune::tuner
