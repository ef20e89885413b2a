// Verdict::to_json (probes/monitor.h): the verdict as stored with the trial, figures rounded;
// and verdict_from_json, its reader.
#include <cmath>

#include "probes/json_fields.h"
#include "probes/monitor.h"

namespace tune::probes {

nlohmann::json Verdict::to_json() const {
  using nlohmann::json;
  auto r1 = [](double x) { return std::round(x * 10) / 10; };
  json j;
  j["schema_version"] = k_verdict_schema_version;
  j["samples"] = samples;
  j["duration_s"] = std::round(duration_s * 1000) / 1000;
  j["pus"] = pus;
  j["total_mean_cpu_pct"] = r1(total_mean_cpu_pct);
  j["total_peak_cpu_pct"] = r1(total_peak_cpu_pct);
  j["mean_runnable"] = r1(mean_runnable);
  j["peak_runnable"] = peak_runnable;
  j["nonvoluntary_per_s"] = r1(nonvoluntary_per_s);
  j["voluntary_per_s"] = r1(voluntary_per_s);
  j["observed_oversubscribed"] = observed_oversubscribed;
  j["predicted_oversubscribed"] =
      predicted_oversubscribed ? json(*predicted_oversubscribed) : json(nullptr);
  j["prediction_summary"] = prediction_summary;
  j["binding_issues"] = binding_issues;
  j["sampler_cpu_pct"] = std::round(sampler_cpu_pct * 1000) / 1000;
  j["diagnosis"] = diagnosis;
  j["sustained"] = sustained.to_json();
  j["queue_cost"] = {{"costly", queue_cost.costly},
                     {"spin_measured", queue_cost.spin_measured},
                     {"spin_share", std::round(queue_cost.spin_share * 1000) / 1000},
                     {"spin_library", queue_cost.spin_library},
                     {"switches_per_pu_s", r1(queue_cost.switches_per_pu_s)}};
  j["duty_cycles"] = duty_cycles_json(sustained.duty);
  if (!pools.empty()) {
    j["pools"] = json::array();
    for (const PoolVerdict& p : pools)
      j["pools"].push_back({{"name", p.name},
                            {"group", p.group},
                            {"in_workers", p.in_workers},
                            {"threads", p.threads},
                            {"cpu_s", std::round(p.cpu_s * 1000) / 1000},
                            {"wait_s", std::round(p.wait_s * 1000) / 1000}});
  }
  if (cpu_profiled) {
    long total = 0;
    for (const RankVerdict& r : ranks) total += r.cpu_samples;
    j["cpu_time"] = {
        {"hz", cpu_time_hz}, {"samples", total}, {"note", cpu_time_note}, {"line", cpu_time}};
  }
  j["ranks"] = json::array();
  for (const RankVerdict& r : ranks) {
    json rank = {{"rank", r.rank},
                 {"pid", r.pid},
                 {"comm", r.comm},
                 {"mean_cpu_pct", r1(r.mean_cpu_pct)},
                 {"peak_cpu_pct", r1(r.peak_cpu_pct)},
                 {"useful_cpu_pct", r1(r.useful_cpu_pct)},
                 {"max_threads", r.max_threads},
                 {"mean_runnable", r1(r.mean_runnable)},
                 {"nonvoluntary_per_s", r1(r.nonvoluntary_per_s)},
                 {"voluntary_per_s", r1(r.voluntary_per_s)},
                 {"allowed_pus", format_cpu_list(r.allowed_pus)},
                 {"ran_on_pus", format_cpu_list(r.ran_on_pus)}};
    if (cpu_profiled) {
      rank["cpu_libraries"] = json::array();
      for (const LibraryShare& s : r.cpu_libraries)
        rank["cpu_libraries"].push_back({{"library", s.library},
                                         {"share", std::round(s.share * 1000) / 1000},
                                         {"samples", s.samples}});
      rank["cpu_samples"] = r.cpu_samples;
    }
    j["ranks"].push_back(std::move(rank));
  }
  return j;
}

namespace {

ReadResult read_sustained(const nlohmann::json& j, SustainedVerdict& v) {
  if (!j.is_object()) return JsonReadError{".sustained", "is not a JSON object"};
  FieldReader f(j, ".sustained");
  f.get("samples", v.window_samples);
  if (const auto w = j.find("window_s"); w != j.end() && w->is_array() && w->size() == 2 &&
                                         (*w)[0].is_number() && (*w)[1].is_number()) {
    v.window_from_s = (*w)[0].get<double>();
    v.window_to_s = (*w)[1].get<double>();
  }
  f.get("runtime_only", v.runtime_only);
  v.main_measured = f.measured("main_wait_share", v.main_wait_share);
  f.measured("main_busy", v.main_busy);
  f.measured("helper_wait_share", v.helper_wait_share);
  if (f.error()) return f.error();
  return each_object(j, ".sustained", "loads", [&](const nlohmann::json& o, const std::string& at) {
    SustainedLoad l;
    FieldReader lf(o, at);
    std::string pus;
    lf.get("pus", pus);
    if (pus != "all") l.pus = parse_cpu_list(pus);
    lf.get("pu_count", l.pu_count);
    lf.get("median_runnable", l.median_runnable);
    lf.get("mean_runnable", l.mean_runnable);
    lf.get("over_fraction", l.over_fraction);
    lf.get("cpu_rate", l.cpu_rate);
    lf.get("waiting_share", l.waiting_share);
    l.wait_measured = lf.measured("waiting_threads", l.waiting_threads);
    lf.measured("measured_wait_share", l.measured_wait_share);
    lf.get("runtime_threads", l.runtime_threads);
    lf.get("runtime_cpu_rate", l.runtime_cpu_rate);
    lf.measured("main_wait_share", l.main_wait_share);
    lf.measured("main_busy", l.main_busy);
    lf.measured("knob_waiting_threads", l.knob_waiting_threads);
    lf.measured("knob_demand", l.knob_demand);
    lf.get("with_runtime_oversubscribed", l.with_runtime_oversubscribed);
    lf.get("oversubscribed", l.oversubscribed);
    v.loads.push_back(std::move(l));
    return lf.error();
  });
}

ReadResult read_duty_cycles(const nlohmann::json& j, std::map<std::string, DutyCycle>& duty) {
  if (!j.is_object()) return JsonReadError{".duty_cycles", "is not a JSON object"};
  for (const auto& [name, d] : j.items()) {
    const std::string at = ".duty_cycles." + name;
    if (!d.is_object()) return JsonReadError{at, "is not a JSON object"};
    DutyCycle c;
    FieldReader f(d, at);
    f.get("threads", c.threads);
    f.get("cpu", c.cpu);
    f.get("runnable", c.runnable);
    if (f.error()) return f.error();
    duty[name] = c;
  }
  return std::nullopt;
}

ReadResult read_rank(const nlohmann::json& o, const std::string& at, RankVerdict& r) {
  FieldReader f(o, at);
  f.get("rank", r.rank);
  f.get("pid", r.pid);
  f.get("comm", r.comm);
  f.get("mean_cpu_pct", r.mean_cpu_pct);
  f.get("peak_cpu_pct", r.peak_cpu_pct);
  f.get("useful_cpu_pct", r.useful_cpu_pct);
  f.get("max_threads", r.max_threads);
  f.get("mean_runnable", r.mean_runnable);
  f.get("nonvoluntary_per_s", r.nonvoluntary_per_s);
  f.get("voluntary_per_s", r.voluntary_per_s);
  f.cpus("allowed_pus", r.allowed_pus);
  f.cpus("ran_on_pus", r.ran_on_pus);
  f.get("cpu_samples", r.cpu_samples);
  if (f.error()) return f.error();
  return each_object(o, at, "cpu_libraries", [&](const nlohmann::json& s, const std::string& p) {
    LibraryShare share;
    FieldReader sf(s, p);
    sf.get("library", share.library);
    sf.get("share", share.share);
    sf.get("samples", share.samples);
    r.cpu_libraries.push_back(std::move(share));
    return sf.error();
  });
}

}  // namespace

std::expected<Verdict, JsonReadError> verdict_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::unexpected(JsonReadError{"", "is not a JSON object"});
  if (const auto v = j.find("schema_version");
      v != j.end() && (!v->is_number_integer() || v->get<std::int64_t>() < 1 ||
                       v->get<std::int64_t>() > k_verdict_schema_version))
    return std::unexpected(
        JsonReadError{".schema_version", "is not a version this tune reads (1 to " +
                                             std::to_string(k_verdict_schema_version) + ")"});
  Verdict v;
  FieldReader f(j, "");
  f.get("samples", v.samples);
  f.get("duration_s", v.duration_s);
  f.get("pus", v.pus);
  f.get("total_mean_cpu_pct", v.total_mean_cpu_pct);
  f.get("total_peak_cpu_pct", v.total_peak_cpu_pct);
  f.get("mean_runnable", v.mean_runnable);
  f.get("peak_runnable", v.peak_runnable);
  f.get("nonvoluntary_per_s", v.nonvoluntary_per_s);
  f.get("voluntary_per_s", v.voluntary_per_s);
  f.get("observed_oversubscribed", v.observed_oversubscribed);
  if (const auto p = j.find("predicted_oversubscribed"); p != j.end() && p->is_boolean())
    v.predicted_oversubscribed = p->get<bool>();
  f.get("prediction_summary", v.prediction_summary);
  f.get("binding_issues", v.binding_issues);
  f.get("sampler_cpu_pct", v.sampler_cpu_pct);
  f.get("diagnosis", v.diagnosis);
  if (f.error()) return std::unexpected(*f.error());
  ReadResult error;
  if (const auto s = j.find("sustained"); s != j.end() && !s->is_null())
    error = read_sustained(*s, v.sustained);
  if (const auto d = j.find("duty_cycles"); !error && d != j.end() && !d->is_null())
    error = read_duty_cycles(*d, v.sustained.duty);
  if (!error)
    error = each_object(j, "", "pools", [&](const nlohmann::json& o, const std::string& at) {
      PoolVerdict p;
      FieldReader pf(o, at);
      pf.get("name", p.name);
      pf.get("group", p.group);
      pf.get("in_workers", p.in_workers);
      pf.get("threads", p.threads);
      pf.get("cpu_s", p.cpu_s);
      pf.get("wait_s", p.wait_s);
      v.pools.push_back(std::move(p));
      return pf.error();
    });
  if (const auto c = j.find("cpu_time"); !error && c != j.end() && c->is_object()) {
    v.cpu_profiled = true;
    FieldReader cf(*c, ".cpu_time");
    cf.get("hz", v.cpu_time_hz);
    cf.get("note", v.cpu_time_note);
    cf.get("line", v.cpu_time);
    error = cf.error();
  }
  if (!error)
    error = each_object(j, "", "ranks", [&](const nlohmann::json& o, const std::string& at) {
      RankVerdict r;
      auto e = read_rank(o, at, r);
      v.ranks.push_back(std::move(r));
      return e;
    });
  if (error) return std::unexpected(*error);
  v.sustained.oversubscribed = v.observed_oversubscribed;  // the same verdict since schema 2
  v.queue_cost = queue_cost_of(v);  // from the fields it rests on, whatever "queue_cost" says
  return v;
}

}  // namespace tune::probes
