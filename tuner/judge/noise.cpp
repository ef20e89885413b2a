#include "tuner/judge/noise.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>

#include "tuner/base/stats.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/reruns.h"
#include "tuner/judge/summary.h"

namespace tune::tuner {

using search::FrozenTrial;
using search::TrialState;

namespace {

constexpr double k_infinite = std::numeric_limits<double>::infinity();

// One measurement of a setting: its value, and the interval the trial carried for it (from its
// window: the bounds, and the quantile that turns their half width into a standard error).
struct Run {
  double value = 0;
  std::optional<double> ci_low, ci_high;
  double ci_quantile = 0;
};

// The window's statistics are the trial's own output turned into numbers: anything missing,
// out of range or inconsistent leaves the run without an interval rather than with a wrong one.
Run run_of(const FrozenTrial& t, double value) {
  Run r{value, std::nullopt, std::nullopt, 0};
  const auto it = t.user_attrs.find(k_attr_window);
  if (it == t.user_attrs.end()) return r;
  const auto low = finite_number_at(*it, "low"), high = finite_number_at(*it, "high");
  const auto batches = finite_number_at(*it, "batches");
  const double confidence = finite_number_at(*it, "confidence").value_or(0.95);
  if (!low || !high || !batches || *batches < 2 || !(confidence > 0 && confidence < 1)) return r;
  r.ci_low = low;
  r.ci_high = high;
  r.ci_quantile = student_t_quantile(0.5 + confidence / 2, *batches - 1);  // batch means' t
  return r;
}

// A completed search trial and the runs its believed value stands on: its re-runs when it has
// any (its own run, picked for being good, is biased), else its own run.
struct TrialRuns {
  const FrozenTrial* trial = nullptr;
  std::vector<Run> believed;
  bool from_reruns = false;
  double value() const {
    std::vector<double> v;
    for (const auto& r : believed) v.push_back(r.value);
    return median(v);
  }
};

// The model's inputs and its estimate, shared by the leads and the settings test.
class Model {
 public:
  explicit Model(NoiseEstimate noise) : m_noise(std::move(noise)) {}

  double x(double value) const {
    return m_noise.scale == NoiseScale::relative ? std::log(value) : value;
  }

  // The standard error of a run's own interval, on the model's scale.
  std::optional<double> window_se(const Run& r) const {
    if (!r.ci_low || !r.ci_high || *r.ci_high < *r.ci_low || !(r.ci_quantile > 0)) {
      return std::nullopt;
    }
    if (m_noise.scale == NoiseScale::relative) {
      if (!(*r.ci_low > 0)) return std::nullopt;
      return (std::log(*r.ci_high) - std::log(*r.ci_low)) / (2 * r.ci_quantile);
    }
    return (*r.ci_high - *r.ci_low) / (2 * r.ci_quantile);
  }

  // One run's variance: the larger of the noise between runs and its own interval's.
  std::optional<double> variance(const Run& r) const {
    const auto own = window_se(r);
    if (m_noise.sigma) return std::pow(std::max(*m_noise.sigma, own.value_or(0)), 2);
    if (own) return *own * *own;
    return std::nullopt;
  }

  // Degrees of freedom of the noise: the pooled estimate's, else the intervals' (many samples
  // each: taken as known).
  double df() const { return m_noise.sigma ? m_noise.df : k_infinite; }

  const NoiseEstimate& noise() const { return m_noise; }

 private:
  NoiseEstimate m_noise;
};

// The standard error of a value resting on `runs`: one run's noise over the square root of their
// count, times sqrt(pi/2) for a median of three or more (the median's loss against a mean).
std::optional<double> standard_error(const Model& model, const std::vector<Run>& runs) {
  double sum = 0;
  for (const auto& r : runs) {
    const auto v = model.variance(r);
    if (!v) return std::nullopt;
    sum += *v;
  }
  const auto n = static_cast<double>(runs.size());
  const double efficiency = runs.size() >= 3 ? std::numbers::pi / 2 : 1.0;
  return std::sqrt(efficiency * (sum / n) / n);
}

NoiseLead lead_of(const Model& model, const TrialRuns& best, const TrialRuns& other, bool maximize,
                  const NoiseOptions& options) {
  NoiseLead lead;
  lead.best = best.trial->number;
  lead.other = other.trial->number;
  lead.n_best = static_cast<int>(best.believed.size());
  lead.n_other = static_cast<int>(other.believed.size());
  lead.best_value = best.value();
  lead.other_value = other.value();
  const bool relative = model.noise().scale == NoiseScale::relative;
  lead.difference =
      maximize ? lead.best_value - lead.other_value : lead.other_value - lead.best_value;
  if (relative)
    lead.ratio = maximize ? lead.best_value / lead.other_value : lead.other_value / lead.best_value;
  // A median of 3 or more re-runs on each side: the bootstrap, which assumes no law.
  if (relative && best.from_reruns && other.from_reruns && best.believed.size() >= 3 &&
      other.believed.size() >= 3) {
    std::vector<double> b, o;
    for (const auto& r : best.believed) b.push_back(r.value);
    for (const auto& r : other.believed) o.push_back(r.value);
    if (const auto ci = maximize
                            ? bootstrap_ratio_ci(b, o, options.bootstrap_samples, options.seed)
                            : bootstrap_ratio_ci(o, b, options.bootstrap_samples, options.seed)) {
      lead.low = ci->first;
      lead.high = ci->second;
      lead.method = "bootstrap";
    }
  }
  if (!lead.low) {
    const auto se_best = standard_error(model, best.believed);
    const auto se_other = standard_error(model, other.believed);
    if (se_best && se_other) {
      const double half = student_t_quantile(0.975, model.df()) * std::hypot(*se_best, *se_other);
      const double centre = relative ? std::log(*lead.ratio) : lead.difference;
      lead.low = relative ? std::exp(centre - half) : centre - half;
      lead.high = relative ? std::exp(centre + half) : centre + half;
      lead.method = "noise model";
    }
  }
  if (lead.low) {
    const double none = relative ? 1.0 : 0.0;
    lead.verdict =
        *lead.low > none || *lead.high < none ? NoiseVerdict::beyond : NoiseVerdict::within;
  }
  return lead;
}

// One-way analysis of variance over the settings, each a weighted mean of its runs; none when a
// run's variance is unknown.
std::optional<SettingsTest> settings_test(const Model& model,
                                          const std::vector<std::vector<Run>>& settings) {
  if (settings.size() < 2) return std::nullopt;
  std::vector<double> means, variances;
  for (const auto& runs : settings) {
    double weight = 0, weighted = 0;
    for (const auto& r : runs) {
      const auto v = model.variance(r);
      if (!v) return std::nullopt;
      // A run without noise (identical repeats) weighs as a very precise one, not infinitely.
      const double w = 1 / std::max(*v, 1e-24 * (1 + model.x(r.value) * model.x(r.value)));
      weight += w;
      weighted += w * model.x(r.value);
    }
    means.push_back(weighted / weight);
    variances.push_back(1 / weight);
  }
  double weight = 0, weighted = 0;
  for (std::size_t i = 0; i < means.size(); ++i) {
    weight += 1 / variances[i];
    weighted += means[i] / variances[i];
  }
  const double grand = weighted / weight;
  double q = 0;
  for (std::size_t i = 0; i < means.size(); ++i)
    q += (means[i] - grand) * (means[i] - grand) / variances[i];
  SettingsTest test;
  test.settings = static_cast<int>(settings.size());
  test.df1 = test.settings - 1;
  test.df2 = model.df();
  test.f = q / test.df1;
  test.p = f_upper_tail(test.f, test.df1, test.df2);
  return test;
}

std::string percent(double fraction) {
  const double p = 100 * fraction;
  return p < 0.05 ? fmt::format("{:.2g}%", p) : fmt::format("{:.1f}%", p);
}

// One run's noise as a person reads it: "4.2%" (relative) or "0.031" (absolute).
std::string spread_text(const NoiseEstimate& noise, double sigma) {
  return noise.scale == NoiseScale::relative ? percent(sigma) : format_short(sigma);
}

std::string p_text(double p) {
  if (p < 0.001) return "p < 0.001";
  return p < 0.01 ? fmt::format("p = {:.3f}", p) : fmt::format("p = {:.2f}", p);
}

}  // namespace

std::string to_string(NoiseVerdict verdict) {
  switch (verdict) {
    case NoiseVerdict::within:
      return "within";
    case NoiseVerdict::beyond:
      return "beyond";
    case NoiseVerdict::unknown:
      break;
  }
  return "unknown";
}

namespace {

// Every completed search trial with the runs its believed value stands on, each setting's runs,
// and one run's noise estimated from them.
struct Collected {
  std::map<int, TrialRuns> trials;
  std::map<std::map<std::string, double>, std::vector<Run>> settings;
  NoiseEstimate noise;
};

Collected collect_runs(const search::StudyView& study) {
  Collected c;
  auto& trials = c.trials;
  auto& settings = c.settings;
  std::map<int, std::vector<Run>> reruns;
  for (const auto& t : study.trials()) {
    const auto of = rerun_of(t);
    if (!of || !trusted_run(t)) continue;  // measured under load (ranking.h): not one run's noise
    if (const auto v = rerun_value(t); v && std::isfinite(*v)) reruns[*of].push_back(run_of(t, *v));
  }
  bool positive = true;
  for (const auto& t : study.trials()) {
    if (t.state != TrialState::complete || !t.value || is_rerun(t)) continue;
    // A run measured under load counts only through the re-runs that stand for it.
    if (!trusted_run(t) && !reruns.contains(t.number)) continue;
    const auto own = search_value(t);
    if (!own || !std::isfinite(*own)) continue;
    TrialRuns r;
    r.trial = &t;
    if (const auto it = reruns.find(t.number); it != reruns.end()) {
      r.believed = it->second;
      r.from_reruns = true;
    } else {
      r.believed = {run_of(t, *own)};
    }
    for (const auto& run : r.believed) positive = positive && run.value > 0;
    auto& runs = settings[t.params];
    runs.insert(runs.end(), r.believed.begin(), r.believed.end());
    trials.emplace(t.number, std::move(r));
  }
  if (trials.empty()) return c;

  NoiseEstimate noise;
  noise.scale = positive ? NoiseScale::relative : NoiseScale::absolute;
  const auto x = [&](double v) { return positive ? std::log(v) : v; };
  double squares = 0;
  for (const auto& [params, runs] : settings) {
    if (runs.size() < 2) continue;
    double mean = 0;
    for (const auto& r : runs) mean += x(r.value);
    mean /= static_cast<double>(runs.size());
    for (const auto& r : runs) squares += (x(r.value) - mean) * (x(r.value) - mean);
    const int n = static_cast<int>(runs.size());
    noise.df += n - 1;
    noise.repeated_runs += n;
    ++noise.repeated_settings;
    noise.fewest_runs = noise.fewest_runs == 0 ? n : std::min(noise.fewest_runs, n);
    noise.most_runs = std::max(noise.most_runs, n);
  }
  if (noise.df > 0) noise.sigma = std::sqrt(squares / noise.df);
  {
    NoiseEstimate scale_only;
    scale_only.scale = noise.scale;
    const Model windows(scale_only);
    std::vector<double> errors;
    for (const auto& [params, runs] : settings)
      for (const auto& r : runs)
        if (const auto se = windows.window_se(r)) errors.push_back(*se);
    noise.window_runs = static_cast<int>(errors.size());
    if (!errors.empty()) noise.window_sigma = median(errors);
  }
  c.noise = noise;
  return c;
}

}  // namespace

StudyNoise assess_noise(const search::StudyView& study, const NoiseOptions& options) {
  StudyNoise out;
  if (study.is_multi_objective()) return out;
  Collected collected = collect_runs(study);
  const auto& trials = collected.trials;
  auto& settings = collected.settings;
  if (trials.empty()) return out;
  out.assessed = true;
  out.settings = static_cast<int>(settings.size());
  out.noise = collected.noise;
  const Model model(collected.noise);

  const bool maximize = study.direction() == search::Direction::maximize;
  const auto ranked = ranked_trials(study);
  const auto runs_of = [&](const FrozenTrial* t) -> const TrialRuns* {
    const auto it = t ? trials.find(t->number) : trials.end();
    return it == trials.end() ? nullptr : &it->second;
  };
  const TrialRuns* best = ranked.empty() ? nullptr : runs_of(ranked.front());
  if (options.candidate) {
    const auto it = trials.find(*options.candidate);
    best = it == trials.end() ? nullptr : &it->second;
  }
  if (best != nullptr) {
    const TrialRuns* baseline = runs_of(find_baseline(study));
    if (baseline != nullptr && baseline != best)
      out.over_baseline = lead_of(model, *best, *baseline, maximize, options);
    if (const auto* rule = best_rule_trial(ranked)) {
      out.best_rule = rule->number;
      out.best_rule_names = rules_of(*rule);
      if (const auto* r = runs_of(rule); r != nullptr && r != best)
        out.over_best_rule = lead_of(model, *best, *r, maximize, options);
    }
    // The runner-up is the best's: a candidate picked by hand has none.
    for (const auto* t : ranked) {
      if (options.candidate) break;
      if (t->params == best->trial->params) continue;
      if (const auto* runner_up = runs_of(t)) {
        out.over_runner_up = lead_of(model, *best, *runner_up, maximize, options);
        break;
      }
    }
  }
  std::vector<std::vector<Run>> groups;
  for (auto& [params, runs] : settings) groups.push_back(runs);
  out.test = settings_test(model, groups);
  if (out.test)
    out.settings_verdict = out.test->p < 0.05 ? NoiseVerdict::beyond : NoiseVerdict::within;
  return out;
}

std::map<int, NoiseLead> leads_within_groups(
    const search::StudyView& study,
    const std::function<std::optional<std::string>(const search::FrozenTrial&)>& group_of,
    const NoiseOptions& options) {
  std::map<int, NoiseLead> out;
  if (study.is_multi_objective()) return out;
  const Collected collected = collect_runs(study);
  const Model model(collected.noise);
  const bool maximize = study.direction() == search::Direction::maximize;
  std::map<std::string, std::vector<const TrialRuns*>> groups;
  for (const auto& [number, runs] : collected.trials)
    if (const auto key = group_of(*runs.trial)) groups[*key].push_back(&runs);
  for (const auto& [key, members] : groups) {
    const TrialRuns* best = nullptr;
    for (const TrialRuns* r : members)
      if (best == nullptr || (maximize ? r->value() > best->value() : r->value() < best->value()))
        best = r;
    for (const TrialRuns* r : members)
      if (r != best) out.emplace(r->trial->number, lead_of(model, *best, *r, maximize, options));
  }
  return out;
}

std::map<std::pair<int, int>, NoiseLead> leads_between(
    const search::StudyView& study, const std::vector<std::pair<int, int>>& pairs,
    const NoiseOptions& options) {
  std::map<std::pair<int, int>, NoiseLead> out;
  if (study.is_multi_objective() || pairs.empty()) return out;
  const Collected collected = collect_runs(study);
  const Model model(collected.noise);
  const bool maximize = study.direction() == search::Direction::maximize;
  for (const auto& pair : pairs) {
    const auto a = collected.trials.find(pair.first), b = collected.trials.find(pair.second);
    if (a == collected.trials.end() || b == collected.trials.end()) continue;
    out.emplace(pair, lead_of(model, a->second, b->second, maximize, options));
  }
  return out;
}

std::string noise_text(const NoiseEstimate& noise) {
  if (noise.sigma) {
    const std::string times = noise.fewest_runs == noise.most_runs
                                  ? std::to_string(noise.most_runs)
                                  : fmt::format("{}-{}", noise.fewest_runs, noise.most_runs);
    std::string out = fmt::format(
        "one run varies by {} (the standard deviation of {} measured {} times each, {} of "
        "freedom)",
        spread_text(noise, *noise.sigma), plural(noise.repeated_settings, "setting", "settings"),
        times, plural(noise.df, "degree", "degrees"));
    if (noise.window_sigma)
      out +=
          fmt::format("; {} {} own interval (median {})", plural(noise.window_runs, "run", "runs"),
                      noise.window_runs == 1 ? "carries its" : "carry their",
                      spread_text(noise, *noise.window_sigma));
    return out;
  }
  if (noise.window_sigma)
    return fmt::format(
        "one run varies by {} (the median standard error of {}' own intervals; no setting "
        "was run twice, so how runs differ from each other is not measured)",
        spread_text(noise, *noise.window_sigma), plural(noise.window_runs, "run", "runs"));
  return "one run's noise is unknown: no setting was measured twice and no trial carries its "
         "own interval";
}

std::string lead_text(const NoiseLead& lead) {
  std::string out = lead.ratio ? fmt::format("{:.3f}x", *lead.ratio)
                               : fmt::format("better by {}", format_short(lead.difference));
  if (lead.low) {
    out += lead.ratio ? fmt::format(", 95% CI [{:.3f}x, {:.3f}x]", *lead.low, *lead.high)
                      : fmt::format(", 95% CI [{}, {}]", format_short(*lead.low),
                                    format_short(*lead.high));
    out += " (" + lead.method + ")";
  }
  switch (lead.verdict) {
    case NoiseVerdict::beyond:
      return out + ": beyond the noise";
    case NoiseVerdict::within:
      return out + ": within the noise, not shown to be better";
    case NoiseVerdict::unknown:
      break;
  }
  return out + ": not judged against the noise, which is unknown";
}

std::string noise_verdict_text(const StudyNoise& noise) {
  constexpr const char* k_measure =
      "measure the noise: `tune confirm STUDY --repeats 5` re-runs the baseline and the top 3 "
      "trials 5 times each, or `incumbent_repeats: 3` in the study file re-runs each new best "
      "during the search";
  constexpr const char* k_remeasure =
      "re-measure the best: `tune confirm STUDY --top 3 --repeats 5`";
  if (!noise.noise.known()) return k_measure;
  if (noise.settings < 2) return "only one setting completed: there is nothing to tell apart";
  if (!noise.test)
    return fmt::format(
        "the {} settings cannot be compared: some runs carry no interval and no setting was "
        "measured twice; {}",
        noise.settings, k_measure);
  if (noise.settings_verdict == NoiseVerdict::within)
    return fmt::format(
        "the study cannot tell its {} settings apart: they differ no more than the noise of one "
        "run makes them ({}, F test); no setting is shown to beat another, so no winner and no "
        "parameter ranking; {}",
        noise.settings, p_text(noise.test->p), k_remeasure);
  std::string out = fmt::format("the {} settings differ beyond the noise ({}, F test)",
                                noise.settings, p_text(noise.test->p));
  if (noise.over_runner_up && noise.over_runner_up->verdict != NoiseVerdict::beyond)
    out += fmt::format("; the best is not told apart from the runner-up #{}: {}",
                       noise.over_runner_up->other, k_remeasure);
  return out;
}

std::string best_rule_line(const StudyNoise& noise) {
  if (noise.best_rule < 0) return "";
  const std::string names = fmt::format("{}", fmt::join(noise.best_rule_names, ", "));
  if (!noise.over_best_rule)
    return fmt::format(
        "the best #{} is the setting of rule {}: no setting tried beat the best rule",
        noise.best_rule, names);
  const auto& lead = *noise.over_best_rule;
  std::string line = fmt::format("best #{} vs best rule #{} ({}): {}", lead.best, lead.other, names,
                                 lead_text(lead));
  if (lead.verdict != NoiseVerdict::beyond)
    line += fmt::format("; not shown to beat rule {}", names);
  return line;
}

std::vector<std::string> noise_lines(const StudyNoise& noise) {
  std::vector<std::string> lines = {noise_text(noise.noise)};
  // The baseline may be the runner-up too: one line then.
  const bool same = noise.over_baseline && noise.over_runner_up &&
                    noise.over_baseline->other == noise.over_runner_up->other;
  if (noise.over_baseline)
    lines.push_back(fmt::format("best #{} vs baseline #{}{}: {}", noise.over_baseline->best,
                                noise.over_baseline->other, same ? " (also the runner-up)" : "",
                                lead_text(*noise.over_baseline)));
  if (noise.over_runner_up && !same)
    lines.push_back(fmt::format("best #{} vs runner-up #{}: {}", noise.over_runner_up->best,
                                noise.over_runner_up->other, lead_text(*noise.over_runner_up)));
  if (const auto line = best_rule_line(noise); !line.empty()) lines.push_back(line);
  lines.push_back(noise_verdict_text(noise));
  return lines;
}

}  // namespace tune::tuner
