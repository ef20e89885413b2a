#include "tuner/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <sstream>

#include "search/importance.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;
using search::TrialState;

bool better(search::Direction direction, double a, double b) {
  return direction == search::Direction::maximize ? a > b : a < b;
}

std::string kind_of(const search::Distribution& dist) {
  if (std::holds_alternative<search::FloatDistribution>(dist)) return "float";
  if (std::holds_alternative<search::IntDistribution>(dist)) return "int";
  return "categorical";
}

ParamAxis axis_of(const std::string& name, const search::Distribution& dist) {
  ParamAxis a;
  a.name = name;
  a.kind = kind_of(dist);
  if (const auto* f = std::get_if<search::FloatDistribution>(&dist)) {
    a.low = f->low;
    a.high = f->high;
    a.log = f->log;
  } else if (const auto* i = std::get_if<search::IntDistribution>(&dist)) {
    a.low = static_cast<double>(i->low);
    a.high = static_cast<double>(i->high);
    a.log = i->log;
  } else {
    for (const auto& c : std::get<search::CategoricalDistribution>(dist).choices)
      a.choices.push_back(search::param_value_to_string(c));
  }
  return a;
}

// The probe verdict line of a trial: the observed diagnosis, else the prediction's summary.
void read_probe(const FrozenTrial& t, ReportTrial& r) {
  if (auto it = t.system_attrs.find("probe_verdict");
      it != t.system_attrs.end() && it->is_object()) {
    r.probe = it->value("diagnosis", std::string());
    if (auto o = it->find("observed_oversubscribed"); o != it->end() && o->is_boolean())
      r.oversubscribed = o->get<bool>();
    if (!r.probe.empty()) return;
  }
  if (auto it = t.system_attrs.find("probe_prediction");
      it != t.system_attrs.end() && it->is_object()) {
    const auto summary = it->value("summary", std::string());
    if (!summary.empty()) r.probe = "predicted: " + summary;
    if (!r.oversubscribed) {
      if (auto o = it->find("oversubscribed"); o != it->end() && o->is_boolean())
        r.oversubscribed = o->get<bool>();
    }
  }
}

std::string fail_reason_of(const FrozenTrial& t) {
  for (const auto* attrs : {&t.system_attrs, &t.user_attrs}) {
    if (auto it = attrs->find("fail_reason"); it != attrs->end() && it->is_string())
      return it->get<std::string>();
  }
  return "";
}

ReportTrial make_trial(const FrozenTrial& t, const search::SearchSpace& space,
                       std::optional<std::chrono::system_clock::time_point> origin) {
  ReportTrial r;
  r.number = t.number;
  r.state = t.state;
  r.value = t.value;
  r.feasible = t.is_feasible();
  if (auto it = t.system_attrs.find(k_confirm_of_attr);
      it != t.system_attrs.end() && it->is_number_integer()) {
    r.confirm_of = it->get<int>();
  }
  for (const auto& [name, dist] : space) {
    const auto p = t.params.find(name);
    if (p == t.params.end()) continue;
    const auto d = t.distributions.find(name);
    const auto external =
        search::to_external(d != t.distributions.end() ? d->second : dist, p->second);
    r.params.push_back(
        {name, search::param_value_to_json(external), search::param_value_to_string(external)});
  }
  if (auto it = t.user_attrs.find("wall_time"); it != t.user_attrs.end() && it->is_number())
    r.wall_s = it->get<double>();
  if (origin && t.datetime_start) {
    r.start_s = std::chrono::duration<double>(*t.datetime_start - *origin).count();
    if (t.datetime_complete)
      r.end_s = std::chrono::duration<double>(*t.datetime_complete - *origin).count();
  }
  r.fail_reason = fail_reason_of(t);
  read_probe(t, r);
  return r;
}

// The space to report on: the study file's, else every parameter the trials carry, in the
// order they first appear.
search::SearchSpace effective_space(const search::StudyView& study,
                                    const search::SearchSpace& given) {
  if (!given.empty()) return given;
  search::SearchSpace space;
  for (const auto& t : study.trials()) {
    for (const auto& [name, dist] : t.distributions) {
      const bool known =
          std::any_of(space.begin(), space.end(), [&](const auto& p) { return p.first == name; });
      if (!known) space.emplace_back(name, dist);
    }
  }
  return space;
}

}  // namespace

std::string ReportTrial::params_text() const {
  std::string out;
  for (const auto& p : params) {
    if (!out.empty()) out += ' ';
    out += p.name + '=' + p.text;
  }
  return out;
}

bool is_confirm_run(const FrozenTrial& trial) {
  return trial.system_attrs.contains(k_confirm_of_attr);
}

const FrozenTrial* find_baseline(const search::StudyView& study) {
  for (const auto& t : study.trials()) {
    if (t.system_attrs.contains("fixed_params") && !is_confirm_run(t)) return &t;
  }
  return nullptr;
}

std::vector<const FrozenTrial*> ranked_trials(const search::StudyView& study) {
  std::vector<const FrozenTrial*> out;
  for (const auto& t : study.trials()) {
    if (t.state == TrialState::complete && t.value && !is_confirm_run(t)) out.push_back(&t);
  }
  const auto direction = study.direction();
  std::stable_sort(out.begin(), out.end(), [&](const FrozenTrial* a, const FrozenTrial* b) {
    if (a->is_feasible() != b->is_feasible()) return a->is_feasible();
    return better(direction, *a->value, *b->value);
  });
  return out;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<std::pair<double, double>> bootstrap_ratio_ci(const std::vector<double>& numerator,
                                                            const std::vector<double>& denominator,
                                                            int samples, std::uint64_t seed) {
  if (numerator.size() < 3 || denominator.size() < 3 || samples < 100) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(samples));
  std::vector<double> a(numerator.size()), b(denominator.size());
  std::uniform_int_distribution<std::size_t> pick_a(0, numerator.size() - 1);
  std::uniform_int_distribution<std::size_t> pick_b(0, denominator.size() - 1);
  for (int s = 0; s < samples; ++s) {
    for (auto& x : a) x = numerator[pick_a(rng)];
    for (auto& x : b) x = denominator[pick_b(rng)];
    const double den = median(b);
    if (den == 0) continue;
    ratios.push_back(median(a) / den);
  }
  if (ratios.size() < 100) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(std::floor(q * static_cast<double>(ratios.size() - 1)));
    return ratios[i];
  };
  return std::pair{at(0.025), at(0.975)};
}

ReportData build_report(const search::StudyView& study, const std::string& study_name,
                        const search::SearchSpace& given_space, const ReportOptions& options) {
  ReportData data;
  data.study = study_name;
  const auto direction = study.direction();
  data.direction = direction == search::Direction::maximize ? "maximize" : "minimize";
  const auto space = effective_space(study, given_space);
  for (const auto& [name, dist] : space) data.axes.push_back(axis_of(name, dist));

  std::optional<std::chrono::system_clock::time_point> origin;
  for (const auto& t : study.trials()) {
    if (t.datetime_start && (!origin || *t.datetime_start < *origin)) origin = t.datetime_start;
  }

  // Search trials and their confirm re-runs, folded together.
  std::map<int, ReportTrial> by_number;
  search::VectorStudyView search_view(direction);
  for (const auto& t : study.trials()) {
    auto r = make_trial(t, space, origin);
    data.trials.push_back(r);
    if (r.confirm_of) {
      ++data.confirm_runs;
      continue;
    }
    search_view.mutable_trials().push_back(t);
    by_number.emplace(t.number, std::move(r));
  }
  for (const auto& r : data.trials) {
    if (!r.confirm_of) continue;
    const auto it = by_number.find(*r.confirm_of);
    if (it == by_number.end()) continue;
    if (r.state == TrialState::complete && r.value) {
      it->second.repeats.push_back(*r.value);
    } else if (r.state != TrialState::running && r.state != TrialState::waiting) {
      ++it->second.repeats_failed;
    }
  }
  for (auto& [number, r] : by_number) {
    if (!r.repeats.empty()) r.median = median(r.repeats);
  }
  // The copies in data.trials get the folded repeats too (the JSON lists them with each trial).
  for (auto& r : data.trials) {
    if (auto it = by_number.find(r.number); it != by_number.end() && !r.confirm_of) r = it->second;
  }

  data.counts = count_states(search_view);

  // Baseline.
  if (const auto* b = find_baseline(search_view)) {
    data.baseline = by_number.at(b->number);
    data.baseline->baseline = true;
    for (auto& r : data.trials) {
      if (r.number == b->number) r.baseline = true;
    }
  }

  // Top table.
  const auto ranked = ranked_trials(search_view);
  for (const auto* t : ranked) {
    if (static_cast<int>(data.top.size()) >= options.top_n) break;
    data.top.push_back(by_number.at(t->number));
    data.top.back().baseline = data.baseline && data.baseline->number == t->number;
  }

  // Best: among trials re-measured by `tune confirm`, the best median (one noisy run should not
  // pick the winner); else the best single run.
  const ReportTrial* best = nullptr;
  for (const auto* t : ranked) {
    const auto& r = by_number.at(t->number);
    if (!r.median) continue;
    if (best == nullptr || (r.feasible && !best->feasible) ||
        (r.feasible == best->feasible && better(direction, *r.median, *best->median))) {
      best = &r;
    }
  }
  if (best != nullptr) {
    data.best_basis = fmt::format("best median of {} confirm re-runs", best->repeats.size());
  } else if (!ranked.empty()) {
    best = &by_number.at(ranked.front()->number);
    data.best_basis = "best single run";
  }
  if (best != nullptr) {
    data.best = *best;
    data.best->baseline = data.baseline && data.baseline->number == best->number;
  }

  // Speedup over the baseline.
  if (!data.baseline) {
    data.speedup_note =
        "no baseline: the study enqueued no trial (add `enqueue:` with the defaults)";
  } else if (!data.best) {
    data.speedup_note = "no completed trial";
  } else if (!data.baseline->value && !data.baseline->median) {
    data.speedup_note =
        fmt::format("the baseline trial #{} did not complete ({})", data.baseline->number,
                    data.baseline->fail_reason.empty() ? search::to_string(data.baseline->state)
                                                       : data.baseline->fail_reason);
  } else {
    const bool both_repeated = data.best->median && data.baseline->median;
    const std::vector<double> best_runs =
        both_repeated ? data.best->repeats : std::vector<double>{*data.best->value};
    const std::vector<double> base_runs =
        both_repeated ? data.baseline->repeats : std::vector<double>{*data.baseline->value};
    const double best_v = median(best_runs), base_v = median(base_runs);
    if (!(best_v > 0) || !(base_v > 0)) {
      data.speedup_note = "objective values are not all positive: no ratio";
    } else {
      SpeedupEstimate s;
      const bool maximize = direction == search::Direction::maximize;
      // Speedup > 1 means better: time ratio base/best when minimizing, best/base otherwise.
      const auto& num = maximize ? best_runs : base_runs;
      const auto& den = maximize ? base_runs : best_runs;
      s.ratio = median(num) / median(den);
      s.n_best = static_cast<int>(best_runs.size());
      s.n_baseline = static_cast<int>(base_runs.size());
      if (both_repeated) {
        s.basis = fmt::format("medians of {} + {} confirm re-runs", s.n_best, s.n_baseline);
        if (auto ci = bootstrap_ratio_ci(num, den, options.bootstrap_samples, options.seed)) {
          s.ci_low = ci->first;
          s.ci_high = ci->second;
        } else {
          s.note = "CI unavailable: needs at least 3 completed re-runs of each";
        }
      } else {
        s.basis = "single runs";
        s.note = "CI unavailable with single runs: run `tune confirm STUDY --repeats 5`";
      }
      data.speedup = s;
    }
  }

  // Parameter importance over the completed search trials.
  if (options.importance && !space.empty()) {
    std::vector<FrozenTrial> complete;
    for (const auto& t : search_view.trials()) {
      if (t.state == TrialState::complete && t.value) complete.push_back(t);
    }
    auto imp = search::fanova_importance(complete, space);
    if (imp) {
      data.importance = std::move(*imp);
      data.importance_note = fmt::format("fANOVA over {} completed trials", complete.size());
    } else {
      data.importance_note = "unavailable: " + imp.error();
    }
  } else if (!options.importance) {
    data.importance_note = "not computed";
  } else {
    data.importance_note = "unavailable: the study has no parameters";
  }

  // Failure reasons, grouped (confirm re-runs included: they fail for the same reasons).
  std::map<std::string, std::vector<int>> reasons;
  for (const auto& r : data.trials) {
    if (r.state == TrialState::complete || r.fail_reason.empty()) continue;
    reasons[r.fail_reason].push_back(r.number);
  }
  for (auto& [reason, numbers] : reasons) data.failures.push_back({reason, std::move(numbers)});
  std::stable_sort(data.failures.begin(), data.failures.end(),
                   [](const auto& a, const auto& b) { return a.trials.size() > b.trials.size(); });
  return data;
}

// ---- JSON -------------------------------------------------------------------------------------

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json trial_json(const ReportTrial& r) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : r.params) params[p.name] = p.value;
  nlohmann::json j = {
      {"number", r.number},
      {"state", search::to_string(r.state)},
      {"value", opt(r.value)},
      {"repeats", r.repeats},
      {"repeats_failed", r.repeats_failed},
      {"median", opt(r.median)},
      {"feasible", r.feasible},
      {"baseline", r.baseline},
      {"confirm_of", r.confirm_of ? nlohmann::json(*r.confirm_of) : nullptr},
      {"params", params},
      {"wall_s", opt(r.wall_s)},
      {"start_s", opt(r.start_s)},
      {"end_s", opt(r.end_s)},
      {"fail_reason",
       r.fail_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.fail_reason)},
      {"probe", r.probe.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.probe)},
      {"oversubscribed", r.oversubscribed ? nlohmann::json(*r.oversubscribed) : nullptr}};
  return j;
}

}  // namespace

nlohmann::json report_to_json(const ReportData& d) {
  using nlohmann::json;
  json j;
  j["schema_version"] = d.schema_version;
  j["study"] = d.study;
  j["direction"] = d.direction;
  j["objective"] = d.objective;
  j["storage"] = d.storage;
  j["counts"] = {{"complete", d.counts.complete}, {"failed", d.counts.fail},
                 {"pruned", d.counts.pruned},     {"running", d.counts.running},
                 {"waiting", d.counts.waiting},   {"total", d.counts.total()},
                 {"confirm_runs", d.confirm_runs}};
  j["best"] = d.best ? trial_json(*d.best) : json(nullptr);
  j["best_basis"] = d.best_basis;
  j["baseline"] = d.baseline ? trial_json(*d.baseline) : json(nullptr);
  if (d.speedup) {
    const auto& s = *d.speedup;
    j["speedup"] = {{"ratio", s.ratio},
                    {"ci95", s.ci_low ? json::array({*s.ci_low, *s.ci_high}) : json(nullptr)},
                    {"n_best", s.n_best},
                    {"n_baseline", s.n_baseline},
                    {"basis", s.basis},
                    {"note", s.note}};
  } else {
    j["speedup"] = nullptr;
  }
  j["speedup_note"] = d.speedup_note;
  j["top"] = json::array();
  for (const auto& r : d.top) j["top"].push_back(trial_json(r));
  j["trials"] = json::array();
  for (const auto& r : d.trials) j["trials"].push_back(trial_json(r));
  j["importance"] = json::array();
  for (const auto& [name, share] : d.importance)
    j["importance"].push_back({{"param", name}, {"share", share}});
  j["importance_note"] = d.importance_note;
  j["failures"] = json::array();
  for (const auto& f : d.failures)
    j["failures"].push_back(
        {{"reason", f.reason}, {"count", f.trials.size()}, {"trials", f.trials}});
  j["params"] = json::array();
  for (const auto& a : d.axes) {
    json ja = {{"name", a.name}, {"kind", a.kind}, {"log", a.log}};
    if (a.kind == "categorical") {
      ja["choices"] = a.choices;
    } else {
      ja["low"] = a.low;
      ja["high"] = a.high;
    }
    j["params"].push_back(ja);
  }
  return j;
}

// ---- text -------------------------------------------------------------------------------------

namespace {

std::string value_or_dash(const std::optional<double>& v) { return v ? format_value(*v) : "-"; }

std::string measured_text(const ReportTrial& r) {
  if (r.median)
    return fmt::format("{} (median of {} confirm re-runs; its search run: {})",
                       format_value(*r.median), r.repeats.size(), value_or_dash(r.value));
  return r.value ? format_value(*r.value) + " (one run)" : "-";
}

std::string speedup_text(const SpeedupEstimate& s) {
  std::string out = fmt::format("{:.3f}x", s.ratio);
  if (s.ci_low) out += fmt::format("  95% CI [{:.3f}x, {:.3f}x]", *s.ci_low, *s.ci_high);
  out += " (" + s.basis;
  if (s.ci_low) out += ", bootstrap of the ratio of medians";
  out += ")";
  if (!s.note.empty()) out += "; " + s.note;
  return out;
}

// Rows of cells, left- or right-aligned per column; the last column is never padded.
std::string aligned_table(const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& right) {
  std::vector<std::size_t> width(right.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line = "  ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool last = c + 1 == row.size();
      if (c) line += "  ";
      if (right[c]) {
        line += std::string(width[c] - row[c].size(), ' ') + row[c];
      } else {
        line += row[c];
        if (!last) line += std::string(width[c] - row[c].size(), ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

std::string numbers_text(const std::vector<int>& numbers, std::size_t limit = 12) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size() && i < limit; ++i)
    out += (i ? ", #" : "#") + std::to_string(numbers[i]);
  if (numbers.size() > limit) out += fmt::format(", ... ({} more)", numbers.size() - limit);
  return out;
}

class TextReporter final : public Reporter {
 public:
  void write(std::ostream& out, const ReportData& d) const override {
    out << fmt::format("study '{}' ({}{})\n", d.study, d.direction,
                       d.objective.empty() ? "" : " " + d.objective);
    if (!d.storage.empty()) out << "storage: " << d.storage << '\n';
    out << fmt::format("trials: {} complete, {} failed, {} pruned", d.counts.complete,
                       d.counts.fail, d.counts.pruned);
    if (d.counts.running) out << fmt::format(", {} running", d.counts.running);
    if (d.counts.waiting) out << fmt::format(", {} waiting", d.counts.waiting);
    if (d.confirm_runs) out << fmt::format("; {} confirm re-runs", d.confirm_runs);
    out << '\n';

    out << "\nBest trial\n";
    if (!d.best) {
      out << "  no completed trial yet\n";
    } else {
      out << fmt::format("  #{}  {}{}\n", d.best->number, measured_text(*d.best),
                         d.best->feasible ? "" : "  (infeasible: violates a constraint)");
      out << "  chosen by: " << d.best_basis << '\n';
      for (const auto& p : d.best->params) out << fmt::format("  {} = {}\n", p.name, p.text);
    }
    out << "\nBaseline (first enqueued trial)\n";
    if (d.baseline) {
      out << fmt::format("  #{}  {}  {}\n", d.baseline->number, measured_text(*d.baseline),
                         d.baseline->params_text());
    } else {
      out << "  none\n";
    }
    out << "\nSpeedup over baseline: ";
    out << (d.speedup ? speedup_text(*d.speedup) : "unavailable: " + d.speedup_note) << '\n';

    out << fmt::format("\nTop {} trials\n", d.top.size());
    std::vector<std::vector<std::string>> rows = {
        {"rank", "trial", "value", "confirmed", "wall_s", "probe", "params"}};
    int rank = 1;
    for (const auto& r : d.top) {
      std::string confirmed =
          r.median ? fmt::format("{} (n={})", format_value(*r.median), r.repeats.size()) : "-";
      std::string probe = !r.oversubscribed ? "-" : *r.oversubscribed ? "OVERSUB" : "ok";
      std::string params = r.params_text();
      if (r.baseline) params += "  [baseline]";
      if (!r.feasible) params += "  [infeasible]";
      rows.push_back({std::to_string(rank++), "#" + std::to_string(r.number),
                      value_or_dash(r.value), confirmed,
                      r.wall_s ? fmt::format("{:.2f}", *r.wall_s) : "-", probe, params});
    }
    out << aligned_table(rows, {true, true, true, true, true, false, false});

    out << "\nParameter importance (" << d.importance_note << ")\n";
    if (!d.importance.empty()) {
      std::size_t w = 0;
      for (const auto& [name, s] : d.importance) w = std::max(w, name.size());
      for (const auto& [name, share] : d.importance) {
        const int bar = static_cast<int>(std::lround(share * 40));
        out << fmt::format("  {:<{}}  {:5.3f}  {}\n", name, w, share, std::string(bar, '#'));
      }
    }

    out << "\nProbe verdicts\n";
    int shown = 0, over = 0;
    for (const auto& r : d.trials) {
      if (r.probe.empty()) continue;
      ++shown;
      if (r.oversubscribed.value_or(false)) ++over;
      out << fmt::format("  #{:<4} {}\n", r.number, r.probe);
    }
    if (shown == 0) {
      out << "  none recorded (probes disabled, or trials predate them)\n";
    } else {
      out << fmt::format("  {} of {} trials oversubscribed the CPUs\n", over, shown);
    }

    out << "\nFailure reasons\n";
    if (d.failures.empty()) out << "  none\n";
    for (const auto& f : d.failures)
      out << fmt::format("  {:>3}x  {}  ({})\n", f.trials.size(), f.reason, numbers_text(f.trials));
  }
};

class JsonReporter final : public Reporter {
 public:
  void write(std::ostream& out, const ReportData& d) const override {
    out << report_to_json(d).dump(2) << '\n';
  }
};

// ---- markdown ---------------------------------------------------------------------------------

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string md_row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) {
    out += ' ';
    out += md_cell(c);
    out += " |";
  }
  out += '\n';
  return out;
}

class MarkdownReporter final : public Reporter {
 public:
  void write(std::ostream& out, const ReportData& d) const override {
    out << "# Study report: " << d.study << "\n\n";
    out << fmt::format("- direction: {}{}\n", d.direction,
                       d.objective.empty() ? "" : " `" + d.objective + "`");
    if (!d.storage.empty()) out << "- storage: `" << d.storage << "`\n";
    out << fmt::format("- trials: {} complete, {} failed, {} pruned, {} confirm re-runs\n",
                       d.counts.complete, d.counts.fail, d.counts.pruned, d.confirm_runs);
    out << "\n## Best trial\n\n";
    if (d.best) {
      out << fmt::format("Trial **#{}**: {} (chosen by: {})\n\n", d.best->number,
                         measured_text(*d.best), d.best_basis);
      out << md_row({"param", "value"}) << md_row({"---", "---"});
      for (const auto& p : d.best->params) out << md_row({p.name, p.text});
    } else {
      out << "No completed trial yet.\n";
    }
    out << "\n## Speedup over baseline\n\n";
    if (d.baseline)
      out << fmt::format("Baseline: trial #{}, {}\n\n", d.baseline->number,
                         measured_text(*d.baseline));
    out << (d.speedup ? "**" + speedup_text(*d.speedup) + "**" : "Unavailable: " + d.speedup_note)
        << "\n";
    out << fmt::format("\n## Top {} trials\n\n", d.top.size());
    std::vector<std::string> header = {"rank", "trial", "value", "confirmed", "wall_s", "probe"};
    for (const auto& a : d.axes) header.push_back(a.name);
    out << md_row(header) << md_row(std::vector<std::string>(header.size(), "---"));
    int rank = 1;
    for (const auto& r : d.top) {
      std::vector<std::string> row = {
          std::to_string(rank++),
          "#" + std::to_string(r.number) + (r.baseline ? " (baseline)" : ""),
          value_or_dash(r.value),
          r.median ? fmt::format("{} (n={})", format_value(*r.median), r.repeats.size()) : "-",
          r.wall_s ? fmt::format("{:.2f}", *r.wall_s) : "-",
          !r.oversubscribed   ? "-"
          : *r.oversubscribed ? "oversubscribed"
                              : "ok"};
      for (const auto& a : d.axes) {
        std::string v = "-";
        for (const auto& p : r.params)
          if (p.name == a.name) v = p.text;
        row.push_back(v);
      }
      out << md_row(row);
    }
    out << "\n## Parameter importance\n\n" << d.importance_note << "\n\n";
    if (!d.importance.empty()) {
      out << md_row({"param", "share"}) << md_row({"---", "---:"});
      for (const auto& [name, share] : d.importance)
        out << md_row({name, fmt::format("{:.3f}", share)});
    }
    out << "\n## Probe verdicts\n\n";
    bool any = false;
    for (const auto& r : d.trials) {
      if (r.probe.empty()) continue;
      if (!any) out << md_row({"trial", "verdict"}) << md_row({"---", "---"});
      any = true;
      out << md_row({"#" + std::to_string(r.number), r.probe});
    }
    if (!any) out << "None recorded.\n";
    out << "\n## Failure reasons\n\n";
    if (d.failures.empty())
      out << "None.\n";
    else
      out << md_row({"count", "reason", "trials"}) << md_row({"---:", "---", "---"});
    for (const auto& f : d.failures)
      out << md_row({std::to_string(f.trials.size()), f.reason, numbers_text(f.trials)});
  }
};

// ---- html -------------------------------------------------------------------------------------

std::string html_escape(const std::string& s) {
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

// Inside <script>, "</" could end the element early; "<\/" means the same in JSON and JS.
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Draws every chart from the embedded JSON with Chart.js, then marks the page with how many
// charts exist (data-charts-rendered) and each canvas with its drawn size, which the headless
// browser test reads back from the DOM.
constexpr const char* k_report_js = R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('tune-data').textContent);
  var charts = [];
  var stateColor = {COMPLETE: '#2b8a3e', PRUNED: '#f59f00', FAIL: '#e03131', RUNNING: '#1c7ed6',
                    WAITING: '#868e96'};
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  function add(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas) return;
    charts.push(new Chart(canvas, config));
  }
  var search = data.trials.filter(function (t) { return t.confirm_of === null; });
  var done = search.filter(function (t) { return t.state === 'COMPLETE' && t.value !== null; });
  var maximize = data.direction === 'maximize';
  function axisLabel(title) { return {display: true, text: title}; }
  var objective = data.objective || 'objective';

  // Optimization history with the best-so-far line.
  var best = null, bestLine = [];
  done.forEach(function (t) {
    if (best === null || (maximize ? t.value > best : t.value < best)) best = t.value;
    bestLine.push({x: t.number, y: best});
  });
  add('chart-history', {
    type: 'scatter',
    data: {datasets: [
      {label: objective, data: done.map(function (t) { return {x: t.number, y: t.value}; }),
       backgroundColor: '#1c7ed6'},
      {label: 'best so far', data: bestLine, showLine: true, stepped: true, pointRadius: 0,
       borderColor: '#e03131', backgroundColor: '#e03131'}]},
    options: {scales: {x: {title: axisLabel('trial')}, y: {title: axisLabel(objective)}}}
  });

  // Parameter importance.
  add('chart-importance', {
    type: 'bar',
    data: {labels: data.importance.map(function (p) { return p.param; }),
           datasets: [{label: 'importance (fANOVA share)', backgroundColor: '#5f3dc4',
                       data: data.importance.map(function (p) { return p.share; })}]},
    options: {indexAxis: 'y', scales: {x: {min: 0, max: 1}}}
  });

  // One slice plot per parameter: objective against that parameter's value.
  data.params.forEach(function (axis, i) {
    var points = [];
    done.forEach(function (t) {
      var v = t.params[axis.name];
      if (v === undefined) return;
      var x = axis.kind === 'categorical' ? axis.choices.indexOf(v === null ? 'null' : String(v)) : v;
      points.push({x: x, y: t.value, trial: t.number});
    });
    var xScale = {title: axisLabel(axis.name)};
    if (axis.kind === 'categorical') {
      xScale.min = -0.5; xScale.max = axis.choices.length - 0.5;
      // One tick per choice, labelled with the choice.
      xScale.afterBuildTicks = function (scale) {
        scale.ticks = axis.choices.map(function (c, k) { return {value: k}; });
      };
      xScale.ticks = {callback: function (v) { return axis.choices[v]; }};
    } else if (axis.log) {
      xScale.type = 'logarithmic';
    }
    add('chart-slice-' + i, {
      type: 'scatter',
      data: {datasets: [{label: objective + ' vs ' + axis.name, data: points,
                         backgroundColor: '#1c7ed6'}]},
      options: {scales: {x: xScale, y: {title: axisLabel(objective)}}}
    });
  });

  // Parallel coordinates: one normalised axis per parameter plus the objective; one line per
  // trial, darker for better values.
  var lo = Math.min.apply(null, done.map(function (t) { return t.value; }));
  var hi = Math.max.apply(null, done.map(function (t) { return t.value; }));
  function norm(axis, v) {
    if (axis.kind === 'categorical') {
      var k = axis.choices.indexOf(v === null ? 'null' : String(v));
      return axis.choices.length > 1 ? k / (axis.choices.length - 1) : 0.5;
    }
    if (axis.high === axis.low) return 0.5;
    if (axis.log) return (Math.log(v) - Math.log(axis.low)) / (Math.log(axis.high) - Math.log(axis.low));
    return (v - axis.low) / (axis.high - axis.low);
  }
  var pcLabels = data.params.map(function (a) { return a.name; }).concat([objective]);
  add('chart-parallel', {
    type: 'line',
    data: {labels: pcLabels, datasets: done.map(function (t) {
      var goodness = hi > lo ? (maximize ? (t.value - lo) / (hi - lo) : (hi - t.value) / (hi - lo)) : 1;
      var color = 'rgba(28,126,214,' + (0.15 + 0.85 * goodness).toFixed(3) + ')';
      var ys = data.params.map(function (a) { return norm(a, t.params[a.name]); });
      ys.push(hi > lo ? (t.value - lo) / (hi - lo) : 0.5);
      return {label: '#' + t.number, data: ys, borderColor: color, backgroundColor: color,
              pointRadius: 2, tension: 0};
    })},
    options: {plugins: {legend: {display: false}},
              scales: {y: {min: 0, max: 1, title: axisLabel('normalised value')}}}
  });

  // Timeline: one floating bar per trial from start to end, one dataset (color) per state.
  var timed = data.trials.filter(function (t) { return t.start_s !== null; });
  var states = Object.keys(stateColor).filter(function (st) {
    return timed.some(function (t) { return t.state === st; });
  });
  add('chart-timeline', {
    type: 'bar',
    data: {labels: timed.map(function (t) {
             return '#' + t.number + (t.confirm_of !== null ? ' (confirm #' + t.confirm_of + ')' : ''); }),
           datasets: states.map(function (st) {
             return {label: st, backgroundColor: stateColor[st], grouped: false, skipNull: true,
                     data: timed.map(function (t) {
                       if (t.state !== st) return null;
                       return [t.start_s, t.end_s !== null ? t.end_s : t.start_s]; })};
           })},
    options: {indexAxis: 'y',
              scales: {x: {title: axisLabel('seconds since the first trial started')}}}
  });

  document.querySelectorAll('canvas').forEach(function (c) {
    c.setAttribute('data-drawn-size', c.width + 'x' + c.height);
  });
  document.body.setAttribute('data-charts-rendered', String(charts.length));
})();
)JS";

constexpr const char* k_report_css = R"CSS(
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #212529; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #dee2e6; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.chart { position: relative; height: 320px; margin-bottom: 1.5em; }
.slices { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 1em; }
.note { color: #495057; }
)CSS";

class HtmlReporter final : public Reporter {
 public:
  explicit HtmlReporter(std::string chart_js) : m_chart_js(std::move(chart_js)) {}

  void write(std::ostream& out, const ReportData& d) const override {
    const auto e = html_escape;
    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out << "<title>tune report: " << e(d.study) << "</title>\n<style>" << k_report_css
        << "</style>\n</head>\n<body>\n";
    out << "<h1>Study report: " << e(d.study) << "</h1>\n";
    out << "<p class=\"note\">" << e(d.direction) << ' ' << e(d.objective) << "; "
        << fmt::format("{} complete, {} failed, {} pruned, {} confirm re-runs", d.counts.complete,
                       d.counts.fail, d.counts.pruned, d.confirm_runs);
    if (!d.storage.empty()) out << "; storage <code>" << e(d.storage) << "</code>";
    out << "</p>\n";

    out << "<h2>Best trial</h2>\n";
    if (d.best) {
      out << "<p id=\"best\">Trial <b>#" << d.best->number << "</b>: " << e(measured_text(*d.best))
          << " (chosen by: " << e(d.best_basis)
          << ")</p>\n<table><tr><th>param</th><th>value</th></tr>\n";
      for (const auto& p : d.best->params)
        out << "<tr><td>" << e(p.name) << "</td><td>" << e(p.text) << "</td></tr>\n";
      out << "</table>\n";
    } else {
      out << "<p>No completed trial yet.</p>\n";
    }
    out << "<h2>Speedup over baseline</h2>\n<p id=\"speedup\">";
    if (d.baseline)
      out << "Baseline: trial #" << d.baseline->number << ", " << e(measured_text(*d.baseline))
          << ".<br>";
    out << (d.speedup ? "<b>" + e(speedup_text(*d.speedup)) + "</b>"
                      : "Unavailable: " + e(d.speedup_note))
        << "</p>\n";

    out << "<h2>Optimization history</h2>\n<div class=\"chart\"><canvas "
           "id=\"chart-history\"></canvas></div>\n";
    out << "<h2>Parameter importance</h2>\n<p class=\"note\">" << e(d.importance_note) << "</p>\n";
    if (!d.importance.empty())
      out << "<div class=\"chart\"><canvas id=\"chart-importance\"></canvas></div>\n";
    out << "<h2>Slice plots</h2>\n<div class=\"slices\">\n";
    for (std::size_t i = 0; i < d.axes.size(); ++i)
      out << "<div class=\"chart\"><canvas id=\"chart-slice-" << i << "\"></canvas></div>\n";
    out << "</div>\n<h2>Parallel coordinates</h2>\n<div class=\"chart\"><canvas "
           "id=\"chart-parallel\"></canvas></div>\n";
    out << "<h2>Timeline</h2>\n<div class=\"chart\" style=\"height:"
        << std::clamp<std::size_t>(d.trials.size() * 14 + 80, 200, 2400)
        << "px\"><canvas id=\"chart-timeline\"></canvas></div>\n";

    out << "<h2>Top " << d.top.size()
        << " trials</h2>\n<table id=\"top\">\n<tr><th>rank</th><th>trial</th>"
           "<th>value</th><th>confirmed</th><th>wall_s</th><th>probe</th>";
    for (const auto& a : d.axes) out << "<th>" << e(a.name) << "</th>";
    out << "</tr>\n";
    int rank = 1;
    for (const auto& r : d.top) {
      out << "<tr><td class=\"num\">" << rank++ << "</td><td>#" << r.number
          << (r.baseline ? " (baseline)" : "") << "</td><td class=\"num\">"
          << value_or_dash(r.value) << "</td><td class=\"num\">"
          << (r.median ? fmt::format("{} (n={})", format_value(*r.median), r.repeats.size()) : "-")
          << "</td><td class=\"num\">" << (r.wall_s ? fmt::format("{:.2f}", *r.wall_s) : "-")
          << "</td><td>"
          << (!r.oversubscribed   ? "-"
              : *r.oversubscribed ? "oversubscribed"
                                  : "ok")
          << "</td>";
      for (const auto& a : d.axes) {
        std::string v = "-";
        for (const auto& p : r.params)
          if (p.name == a.name) v = p.text;
        out << "<td>" << e(v) << "</td>";
      }
      out << "</tr>\n";
    }
    out << "</table>\n<h2>Probe verdicts</h2>\n<table "
           "id=\"probes\">\n<tr><th>trial</th><th>verdict</th></tr>\n";
    for (const auto& r : d.trials)
      if (!r.probe.empty())
        out << "<tr><td>#" << r.number << "</td><td>" << e(r.probe) << "</td></tr>\n";
    out << "</table>\n<h2>Failure reasons</h2>\n<table "
           "id=\"failures\">\n<tr><th>count</th><th>reason</th><th>trials</th></tr>\n";
    for (const auto& f : d.failures)
      out << "<tr><td class=\"num\">" << f.trials.size() << "</td><td>" << e(f.reason)
          << "</td><td>" << e(numbers_text(f.trials)) << "</td></tr>\n";
    out << "</table>\n";
    out << "<script id=\"tune-data\" type=\"application/json\">"
        << script_safe(report_to_json(d).dump()) << "</script>\n";
    out << "<script>/* Chart.js, MIT License, inlined so the report is one file */\n"
        << script_safe(m_chart_js) << "\n</script>\n";
    out << "<script>" << k_report_js << "</script>\n</body>\n</html>\n";
  }

 private:
  std::string m_chart_js;
};

std::expected<std::string, std::string> read_chart_js() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TUNE_CHARTJS"); env && *env) candidates.push_back(env);
  candidates.push_back("/usr/share/javascript/chart.js/chart.min.js");
  candidates.push_back("/usr/share/javascript/chart.js/chart.js");
  for (const auto& path : candidates) {
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    if (!text.str().empty()) return text.str();
  }
  return std::unexpected(
      "--format html needs Chart.js: install the Debian package libjs-chart.js "
      "(scripts/install-deps.sh does), or point TUNE_CHARTJS at chart.min.js");
}

}  // namespace

std::expected<std::unique_ptr<Reporter>, std::string> make_reporter(const std::string& format) {
  if (format == "text") return std::make_unique<TextReporter>();
  if (format == "json") return std::make_unique<JsonReporter>();
  if (format == "markdown" || format == "md") return std::make_unique<MarkdownReporter>();
  if (format == "html") {
    auto js = read_chart_js();
    if (!js) return std::unexpected(js.error());
    return std::make_unique<HtmlReporter>(std::move(*js));
  }
  return std::unexpected(fmt::format(
      "--format: unknown report format '{}' (known: text, json, markdown, html)", format));
}

}  // namespace tune::tuner
