// The JSON report: report_to_json() (also the data the HTML report draws from) and its writer.
#include <cmath>
#include <ostream>

#include "tuner/report/report_cells.h"
#include "tuner/report/reporter.h"

namespace tune::tuner {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

json opt_text(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// A trial's verdict cost (judge/verdict_cost.h); null where it was not judged.
json cost_json(const std::optional<VerdictCost>& c) {
  if (!c) return nullptr;
  return {{"flagged", c->flagged},
          {"main_wait_share", opt(c->main_wait_share)},
          {"helper_wait_share", opt(c->helper_wait_share)},
          {"comparable", c->comparable},
          {"against", c->against},
          {"smaller_pools", c->smaller_pools},
          {"ratio", c->ratio},
          {"noise_known", c->noise_known},
          {"slowed", c->slowed}};
}

json trial_json(const ReportTrial& r) {
  json params = json::object();
  for (const auto& p : r.params) params[p.name] = p.value;
  json programs = json::array();
  for (const auto& p : r.programs) programs.push_back(to_json(p));
  return {{"number", r.number},
          {"state", r.state_text()},
          {"value", opt(r.value)},
          {"values", r.values},
          {"rerun_values", r.rerun_values},
          {"reruns_failed", r.reruns_failed},
          {"median", opt(r.median)},
          {"feasible", r.feasible},
          {"baseline", r.baseline},
          {"rules", r.rules},
          {"rerun_of", r.rerun_of ? json(*r.rerun_of) : nullptr},
          {"params", params},
          {"wall_s", opt(r.wall_s)},
          {"start_s", opt(r.start_s)},
          {"end_s", opt(r.end_s)},
          {"fail_reason", opt_text(r.fail_reason)},
          {"programs", programs},
          {"probe", opt_text(r.probe)},
          {"cpu_time", opt_text(r.cpu_time)},
          {"oversubscribed", r.oversubscribed ? json(*r.oversubscribed) : nullptr},
          {"external_cpus", opt(r.external_cpus)},
          {"measured_under_load", r.under_load},
          {"verdict_cost", cost_json(r.cost)}};
}

json speedup_json(const std::optional<SpeedupEstimate>& speedup) {
  if (!speedup) return nullptr;
  const auto& s = *speedup;
  return {{"ratio", s.ratio},
          {"ci95", s.ci_low ? json::array({*s.ci_low, *s.ci_high}) : json(nullptr)},
          {"ci_method", opt_text(s.ci_method)},
          {"verdict", to_string(s.verdict)},
          {"n_best", s.n_best},
          {"n_baseline", s.n_baseline},
          {"basis", s.basis},
          {"note", s.note}};
}

json lead_json(const std::optional<NoiseLead>& lead) {
  if (!lead) return nullptr;
  const auto& l = *lead;
  return {{"best", l.best},
          {"other", l.other},
          {"n_best", l.n_best},
          {"n_other", l.n_other},
          {"best_value", l.best_value},
          {"other_value", l.other_value},
          {"ratio", opt(l.ratio)},
          {"difference", l.difference},
          {"ci95", l.low ? json::array({*l.low, *l.high}) : json(nullptr)},
          {"method", opt_text(l.method)},
          {"verdict", to_string(l.verdict)},
          {"text", lead_text(l)}};
}

// The noise model's findings (tuner/judge/noise.h) and the sentences every other format prints.
json noise_json(const ReportData& d) {
  const auto& n = d.noise;
  const auto& e = n.noise;
  json test = nullptr;
  if (n.test)
    test = {{"settings", n.test->settings},
            {"f", std::isfinite(n.test->f) ? json(n.test->f) : json(nullptr)},
            {"df1", n.test->df1},
            {"df2", std::isfinite(n.test->df2) ? json(n.test->df2) : json(nullptr)},
            {"p", n.test->p}};
  return {{"assessed", n.assessed},
          {"known", e.known()},
          {"scale", e.scale == NoiseScale::relative ? "relative" : "absolute"},
          {"sigma", opt(e.sigma)},
          {"df", e.df},
          {"repeated_settings", e.repeated_settings},
          {"repeated_runs", e.repeated_runs},
          {"window_runs", e.window_runs},
          {"window_sigma", opt(e.window_sigma)},
          {"settings", n.settings},
          {"over_baseline", lead_json(n.over_baseline)},
          {"over_best_rule", lead_json(n.over_best_rule)},
          {"over_runner_up", lead_json(n.over_runner_up)},
          {"settings_test", test},
          {"settings_verdict", to_string(n.settings_verdict)},
          {"lines", noise_section(d)}};
}

json shares_json(const std::vector<search::ImportanceShare>& shares) {
  json out = json::array();
  for (const auto& s : shares)
    out.push_back({{"param", s.name}, {"share", s.share}, {"low", s.low}, {"high", s.high}});
  return out;
}

json axis_json(const ParamAxis& a) {
  json j = {{"name", a.name}, {"kind", a.kind}, {"log", a.log}};
  if (a.kind == "categorical") {
    j["choices"] = a.choices;
  } else {
    j["low"] = a.low;
    j["high"] = a.high;
  }
  return j;
}

class JsonReporter final : public Reporter {
 public:
  void write(std::ostream& out, const ReportData& d) const override {
    out << report_to_json(d).dump(2) << '\n';
  }
};

}  // namespace

json report_to_json(const ReportData& d) {
  json j;
  j["schema_version"] = d.schema_version;
  j["study"] = d.study;
  j["direction"] = d.direction;
  j["objective"] = d.objective;
  j["storage"] = d.storage;
  j["counts"] = {{"complete", d.counts.complete},
                 {"failed", d.counts.fail},
                 {"pruned", d.counts.pruned},
                 {"running", d.counts.running},
                 {"waiting", d.counts.waiting},
                 {"total", d.counts.total()},
                 {"reruns", d.reruns}};
  j["best"] = d.best ? trial_json(*d.best) : json(nullptr);
  j["best_basis"] = d.best_basis;
  j["best_measured_under_load"] = d.best_under_load;
  j["baseline"] = d.baseline ? trial_json(*d.baseline) : json(nullptr);
  j["speedup"] = speedup_json(d.speedup);
  j["speedup_note"] = d.speedup_note;
  j["best_rule"] = d.best_rule ? trial_json(*d.best_rule) : json(nullptr);
  j["rule_speedup"] = speedup_json(d.rule_speedup);
  j["rule_speedup_note"] = d.rule_speedup_note;
  j["top"] = json::array();
  for (const auto& r : d.top) j["top"].push_back(trial_json(r));
  j["trials"] = json::array();
  for (const auto& r : d.trials) j["trials"].push_back(trial_json(r));
  j["noise"] = noise_json(d);
  j["importance"] = shares_json(d.importance);
  j["importance_note"] = d.importance_note;
  j["importance_verdict"] = to_string(d.importance_verdict);
  j["importance_caveat"] = opt_text(d.importance_caveat);
  // A multi-objective study: each objective's, in the order of "objectives".
  j["importance_by_objective"] = json::array();
  for (std::size_t i = 0; i < d.importance_by_objective.size(); ++i) {
    const auto& o = d.importance_by_objective[i];
    j["importance_by_objective"].push_back({{"objective", d.objectives.at(i)},
                                            {"importance", shares_json(o.shares)},
                                            {"note", o.note}});
  }
  j["failures"] = json::array();
  for (const auto& f : d.failures)
    j["failures"].push_back(
        {{"reason", f.reason}, {"count", f.trials.size()}, {"trials", f.trials}});
  j["under_load"] = json::array();
  for (const auto& t : d.under_load)
    j["under_load"].push_back({{"trial", t.number},
                               {"rerun_of", t.rerun_of ? json(*t.rerun_of) : nullptr},
                               {"external_cpus", t.external_cpus},
                               {"limit", t.limit},
                               {"rank_cpu_share", opt(t.rank_cpu_share)},
                               {"quiet_reruns", t.quiet_reruns}});
  j["first_guess"] = nullptr;
  if (const auto& g = d.first_guess)
    j["first_guess"] = {{"trial", g->number},
                        {"changed", g->changed},
                        {"predicted", opt(g->predicted)},
                        {"predicted_factor", opt(g->predicted_factor)},
                        {"measured", opt(g->measured)},
                        {"measured_factor", opt(g->measured_factor)},
                        {"reasoning", g->reasoning}};
  j["libraries"] = nullptr;
  if (const auto& l = d.libraries)
    j["libraries"] = {{"trial", l->trial},
                      {"lines", l->lines},
                      {"notes", l->notes},
                      {"best_trial", l->best_trial >= 0 ? json(l->best_trial) : json(nullptr)},
                      {"best_lines", l->best_lines},
                      {"kernels_tried", l->kernels_tried}};
  j["prediction_quality"] = prediction_quality_json(d.prediction);
  j["verdict_quality"] = figure_quality_json(d.figure);
  j["params"] = json::array();
  for (const auto& a : d.axes) j["params"].push_back(axis_json(a));
  // Multi-objective studies: one direction and name per objective, and the Pareto front.
  j["directions"] = d.directions;
  j["objectives"] = d.objectives;
  j["pareto_front"] = json::array();
  for (const auto& r : d.front) j["pareto_front"].push_back(trial_json(r));
  return j;
}

std::unique_ptr<Reporter> make_json_reporter() { return std::make_unique<JsonReporter>(); }

}  // namespace tune::tuner
