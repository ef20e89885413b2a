// Verdict::to_json (probes/monitor.h): the verdict as stored with the trial, figures rounded.
#include <cmath>

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
  j["observed_oversubscribed"] = observed_oversubscribed;
  j["predicted_oversubscribed"] =
      predicted_oversubscribed ? json(*predicted_oversubscribed) : json(nullptr);
  j["prediction_summary"] = prediction_summary;
  j["binding_issues"] = binding_issues;
  j["sampler_cpu_pct"] = std::round(sampler_cpu_pct * 1000) / 1000;
  j["diagnosis"] = diagnosis;
  j["sustained"] = sustained.to_json();
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

}  // namespace tune::probes
