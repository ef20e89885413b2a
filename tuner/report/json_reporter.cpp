// The JSON report: report_to_json() (also the data the HTML report draws from) and its writer.
#include <cmath>
#include <ostream>

#include "tuner/report/reporter.h"

namespace tune::tuner {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

json opt_text(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

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
          {"rerun_of", r.rerun_of ? json(*r.rerun_of) : nullptr},
          {"params", params},
          {"wall_s", opt(r.wall_s)},
          {"start_s", opt(r.start_s)},
          {"end_s", opt(r.end_s)},
          {"fail_reason", opt_text(r.fail_reason)},
          {"programs", programs},
          {"probe", opt_text(r.probe)},
          {"oversubscribed", r.oversubscribed ? json(*r.oversubscribed) : nullptr}};
}

json speedup_json(const std::optional<SpeedupEstimate>& speedup) {
  if (!speedup) return nullptr;
  const auto& s = *speedup;
  return {{"ratio", s.ratio},
          {"ci95", s.ci_low ? json::array({*s.ci_low, *s.ci_high}) : json(nullptr)},
          {"n_best", s.n_best},
          {"n_baseline", s.n_baseline},
          {"basis", s.basis},
          {"note", s.note}};
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
  j["baseline"] = d.baseline ? trial_json(*d.baseline) : json(nullptr);
  j["speedup"] = speedup_json(d.speedup);
  j["speedup_note"] = d.speedup_note;
  j["top"] = json::array();
  for (const auto& r : d.top) j["top"].push_back(trial_json(r));
  j["trials"] = json::array();
  for (const auto& r : d.trials) j["trials"].push_back(trial_json(r));
  j["importance"] = json::array();
  for (const auto& [name, share] : d.importance)
    j["importance"].push_back({{"param", name}, {"share", share}});
  j["importance_note"] = d.importance_note;
  // A multi-objective study: each objective's, in the order of "objectives".
  j["importance_by_objective"] = json::array();
  for (std::size_t i = 0; i < d.importance_by_objective.size(); ++i) {
    const auto& o = d.importance_by_objective[i];
    json shares = json::array();
    for (const auto& [name, share] : o.shares)
      shares.push_back({{"param", name}, {"share", share}});
    j["importance_by_objective"].push_back(
        {{"objective", d.objectives.at(i)}, {"importance", shares}, {"note", o.note}});
  }
  j["failures"] = json::array();
  for (const auto& f : d.failures)
    j["failures"].push_back(
        {{"reason", f.reason}, {"count", f.trials.size()}, {"trials", f.trials}});
  j["prediction_quality"] = prediction_quality_json(d.prediction);
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
