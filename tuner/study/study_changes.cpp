#include "tuner/study/study_changes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>

#include "tuner/base/trial_attrs.h"

namespace tune::tuner {
namespace {

using search::CategoricalDistribution;
using search::Direction;
using search::Distribution;
using search::FloatDistribution;
using search::IntDistribution;

constexpr const char* k_new_study =
    "put it back, or start a new study for the new file (give it another 'name:')";

std::string choices_text(const CategoricalDistribution& c) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& v : c.choices) list.push_back(search::param_value_to_json(v));
  return list.dump();
}

// "int [1, 8]", "float [0.001, 0.1] log", "int [2, 16] step 2", "categorical [\"a\", 2]".
std::string describe(const Distribution& d) {
  if (const auto* i = std::get_if<IntDistribution>(&d)) {
    return fmt::format("int [{}, {}]{}{}", i->low, i->high,
                       i->step != 1 ? fmt::format(" step {}", i->step) : "", i->log ? " log" : "");
  }
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    return fmt::format("float [{}, {}]{}{}", f->low, f->high,
                       f->step ? fmt::format(" step {}", *f->step) : "", f->log ? " log" : "");
  }
  return "categorical " + choices_text(std::get<CategoricalDistribution>(d));
}

struct Range {
  double low, high;
  bool log;
  std::optional<double> step;
};

Range range_of(const Distribution& d) {
  if (const auto* i = std::get_if<IntDistribution>(&d))
    return {static_cast<double>(i->low), static_cast<double>(i->high), i->log,
            static_cast<double>(i->step)};
  const auto& f = std::get<FloatDistribution>(d);
  return {f.low, f.high, f.log, f.step};
}

std::string trials_text(int n) { return n == 1 ? "1 trial" : fmt::format("{} trials", n); }

std::string directions_text(const std::vector<Direction>& ds) {
  std::vector<std::string> words;
  for (const auto d : ds) words.push_back(d == Direction::maximize ? "maximize" : "minimize");
  return words.size() == 1 ? words.front() : fmt::format("[{}]", fmt::join(words, ", "));
}

void compare_param(const StudySpec& spec, const std::string& name, const Distribution& now,
                   const StoredStudy::Param& was, StudyChanges& out) {
  const auto key = "params." + name;
  const auto error = [&](const std::string& what) {
    out.errors.push_back(spec_error(spec, key, fmt::format("{}; {}", what, k_new_study)));
  };
  const auto ran =
      fmt::format("the study's {} drew it as {}", trials_text(was.trials), describe(was.dist));
  if (now.index() != was.dist.index()) {
    error(
        fmt::format("{}, the file now as {}: Optuna refuses a parameter whose type changes, "
                    "and the report would mix both under '{}'",
                    ran, describe(now), name));
    return;
  }
  if (const auto* c = std::get_if<CategoricalDistribution>(&now)) {
    if (c->choices != std::get<CategoricalDistribution>(was.dist).choices) {
      error(
          fmt::format("{}, the file now gives the choices {}: a stored trial keeps its choice "
                      "by position, so stored trials would name other choices, and Optuna "
                      "refuses changed choices",
                      ran, choices_text(*c)));
    }
    return;
  }
  const Range r = range_of(now);
  const Range w = range_of(was.dist);
  if (r.log != w.log) {
    error(fmt::format("{}, the file now {}: Optuna refuses a changed 'log'", ran,
                      r.log ? "on a log scale" : "without 'log'"));
    return;
  }
  if (r.low == w.low && r.high == w.high && r.step == w.step) return;
  std::string what = fmt::format("{} in the study's {}, {} in the file", describe(was.dist),
                                 trials_text(was.trials), describe(now));
  if (r.low <= w.low && r.high >= w.high) {
    what += r.low == w.low && r.high == w.high ? " (step changed)" : " (widened)";
  } else {
    int outside = 0;
    for (const double v : was.values) outside += v < r.low || v > r.high ? 1 : 0;
    what +=
        fmt::format(": {} of them outside the new range stay in the study and its report", outside);
  }
  out.notes.push_back(spec_error(spec, key, what));
}

// "objective", "objective[1]": where objective `i` is in the file.
std::string objective_key(const StudySpec& spec, std::size_t i) {
  return spec.objectives.size() == 1 ? "objective" : fmt::format("objective[{}]", i);
}

void compare_objectives(const StudySpec& spec, const nlohmann::json& was, StudyChanges& out) {
  const auto now = objectives_identity(spec);
  if (!was.is_array() || was.size() != now.size()) return;  // the directions said it
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (was[i] == now[i]) continue;
    std::string key = objective_key(spec, i);
    // The first field that differs, when both read the same source.
    if (was[i].value("source", "") == now[i].value("source", "")) {
      for (const auto& [field, value] : now[i].items()) {
        if (!was[i].contains(field) || was[i][field] != value) {
          key += "." + field;
          break;
        }
      }
    }
    out.errors.push_back(spec_error(
        spec, key,
        fmt::format("the study's trials measured {}; the file now measures {}: their values "
                    "would mix under one objective; {}",
                    was[i].dump(), now[i].dump(), k_new_study)));
    return;
  }
}

}  // namespace

StoredStudy stored_study_of(const std::vector<Direction>& directions,
                            const std::vector<search::FrozenTrial>& trials,
                            const nlohmann::json& study_user_attrs) {
  StoredStudy stored;
  stored.directions = directions;
  for (const auto& t : trials) {  // number order: the last one seen is the latest
    for (const auto& [name, dist] : t.distributions) {
      auto [it, fresh] = stored.params.try_emplace(name, StoredStudy::Param{dist, 0, {}});
      if (!fresh) it->second.dist = dist;
      ++it->second.trials;
    }
  }
  for (const auto& t : trials) {
    for (const auto& [name, dist] : t.distributions) {
      auto& p = stored.params.at(name);
      const auto value = t.params.find(name);
      if (value != t.params.end() && dist.index() == p.dist.index())
        p.values.push_back(value->second);
    }
  }
  if (study_user_attrs.is_object() && study_user_attrs.contains(k_attr_study_objectives))
    stored.objectives = study_user_attrs.at(k_attr_study_objectives);
  return stored;
}

nlohmann::json objectives_identity(const StudySpec& spec) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& o : spec.objectives) {
    nlohmann::json id;
    if (o.wall_time) {
      id = {{"source", "wall_time"}};
    } else if (o.window) {
      const auto& w = *o.window;
      const char* from = w.source == WindowSpec::Source::log    ? "log"
                         : w.source == WindowSpec::Source::file ? "file"
                                                                : "stream";
      id = {{"source", "window"},
            {"from", from},
            {"measure", window_measure_name(w.settings.measure)},
            {"scale", w.settings.scale},
            {"unit", w.unit}};
      if (w.source == WindowSpec::Source::log) {
        id["key"] = w.key;
      } else {
        id["regex"] = w.regex;
        // Only when set, so that a study stored before `number:` existed keeps its identity.
        if (w.number != NumberStyle::plain) id["number"] = number_style_name(w.number);
      }
    } else if (o.file) {
      id = {{"source", "file"}};
      if (!o.file->json.empty()) id["json"] = o.file->json;
      if (!o.file->regex.empty()) id["regex"] = o.file->regex;
      if (!o.file->csv.empty()) {
        id["csv"] = o.file->csv;
        id["row"] = o.file->csv_row;
      }
      // Only when set, so that a study stored before `number:` existed keeps its identity.
      if (o.file->number != NumberStyle::plain) id["number"] = number_style_name(o.file->number);
    } else if (o.use_regex) {
      id = {{"source", o.stream}, {"regex", o.regex}};
      if (o.number != NumberStyle::plain) id["number"] = number_style_name(o.number);
    } else {
      id = {{"source", "log"}, {"key", o.key}, {"entry", o.entry}};
    }
    all.push_back(std::move(id));
  }
  return all;
}

StudyChanges compare_with_stored(const StudySpec& spec, const StoredStudy& stored) {
  StudyChanges out;
  if (!stored.directions.empty() && stored.directions != spec.directions) {
    const std::string key = spec.key_lines.contains("directions") ? "directions" : "direction";
    out.errors.push_back(spec_error(
        spec, key,
        fmt::format("study '{}' was created to {}; the file says {}: its stored values would "
                    "rank the other way; {}",
                    spec.name, directions_text(stored.directions), directions_text(spec.directions),
                    k_new_study)));
  }
  if (stored.objectives) compare_objectives(spec, *stored.objectives, out);
  for (const auto& [name, dist] : spec.space) {
    const auto it = stored.params.find(name);
    if (it != stored.params.end()) {
      compare_param(spec, name, dist, it->second, out);
    } else if (!stored.params.empty()) {
      out.notes.push_back(
          spec_error(spec, "params." + name, "new: the study's earlier trials ran without it"));
    }
  }
  for (const auto& [name, was] : stored.params) {
    const bool kept =
        std::ranges::any_of(spec.space, [&](const auto& p) { return p.first == name; });
    if (kept) continue;
    const bool numeric = !std::holds_alternative<CategoricalDistribution>(was.dist);
    out.errors.push_back(spec_error(
        spec, "params." + name,
        fmt::format("the study's {} set it ({}); the file no longer has it, so new trials would "
                    "run without it beside stored ones that set it, and an export of a stored "
                    "trial would drop it; keep it{}, or start a new study for the new file (give "
                    "it another 'name:')",
                    trials_text(was.trials), describe(was.dist),
                    numeric ? " (narrowed to one value, low = high, if it should stop varying)"
                            : " with its choices")));
  }
  return out;
}

}  // namespace tune::tuner
