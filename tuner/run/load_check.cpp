#include "tuner/run/load_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "probes/monitor.h"
#include "probes/topology.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {

namespace {

// The union of the ranks' cpusets the verdict saw (each rank's allowed PUs); empty when a rank's
// is not known.
std::vector<int> ranks_cpus(const probes::Verdict& verdict) {
  std::vector<int> all;
  for (const probes::RankVerdict& r : verdict.ranks) {
    if (r.allowed_pus.empty()) return {};
    all.insert(all.end(), r.allowed_pus.begin(), r.allowed_pus.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// The busy time of the ranks' CPUs alone, where they are fewer than the CPUs the keeper summed
// and it sent each one's: `cpu` and `j` (its CPUs and their count) are changed then.
void restrict_to_ranks(const probes::Verdict& verdict, TrialCpu& cpu, LoadJudgement& j) {
  const auto cpus = ranks_cpus(verdict);
  if (cpus.empty() || cpus.size() >= cpu.per_cpu_busy_s.size()) return;
  double busy = 0;
  int lines = 0;
  for (const auto& [index, s] : cpu.per_cpu_busy_s) {
    if (!std::binary_search(cpus.begin(), cpus.end(), index)) continue;
    busy += s;
    ++lines;
  }
  if (lines != static_cast<int>(cpus.size())) return;  // a rank's CPU the keeper did not read
  cpu.busy_s = busy;
  cpu.busy_lines = lines;
  j.cpus = cpus;
  j.usable_cpus = static_cast<double>(cpus.size());
}

}  // namespace

double load_limit(const LoadSpec& spec, double usable_cpus) {
  return std::max(spec.max_external_cpus, spec.max_external_share * usable_cpus);
}

LoadJudgement judge_load(const LoadSpec& spec, const std::optional<TrialCpu>& cpu,
                         const nlohmann::json& probe_verdict, int allowed_cpus) {
  LoadJudgement j;
  j.usable_cpus = std::max(1, allowed_cpus);
  // The probes' verdict, when there is one as they write it (a stored attr is untrusted).
  std::optional<probes::Verdict> verdict;
  if (probe_verdict.is_object()) {
    if (auto read = probes::verdict_from_json(probe_verdict)) verdict = std::move(*read);
  }
  if (verdict) {
    // The PUs the trial's ranks may use (the union of their cpusets), as the monitor saw them.
    if (verdict->pus > 0) j.usable_cpus = verdict->pus;
    if (!verdict->ranks.empty()) {
      double sum = 0;
      for (const probes::RankVerdict& r : verdict->ranks) sum += r.mean_cpu_pct / 100;
      j.rank_cpu_share = sum / static_cast<double>(verdict->ranks.size());
    }
  }
  std::optional<TrialCpu> judged = cpu;
  if (verdict && judged && !judged->per_cpu_busy_s.empty()) restrict_to_ranks(*verdict, *judged, j);
  j.limit = load_limit(spec, j.usable_cpus);
  if (!judged) return j;
  const auto load = external_load(*judged);
  if (!load) return j;
  j.external_cpus = load->cpus;
  j.uncertainty = load->uncertainty;
  // Only what the reading's resolution cannot explain: a trial of 20 ms on a quiet machine is
  // not judged by one clock tick.
  j.under_load = spec.check && load->cpus - load->uncertainty > j.limit;
  return j;
}

namespace {
double round3(double x) { return std::round(x * 1000) / 1000; }
}  // namespace

void add_load_attrs(const LoadJudgement& load, nlohmann::json& user_attrs) {
  if (load.external_cpus) user_attrs[k_attr_external_cpu] = round3(*load.external_cpus);
  if (load.rank_cpu_share) user_attrs[k_attr_rank_cpu_share] = round3(*load.rank_cpu_share);
  if (load.under_load && load.external_cpus) {
    user_attrs[k_attr_measured_under_load] = {{"external_cpus", round3(*load.external_cpus)},
                                              {"uncertainty", round3(load.uncertainty)},
                                              {"limit", round3(load.limit)}};
    if (!load.cpus.empty())
      user_attrs[k_attr_measured_under_load]["cpus"] = probes::format_cpu_list(load.cpus);
  }
}

std::string load_note(const LoadJudgement& load) {
  if (!load.under_load || !load.external_cpus) return "";
  std::string note = fmt::format("measured under load: {:.2g} CPUs of other work (limit {:.2g})",
                                 *load.external_cpus, load.limit);
  if (load.rank_cpu_share) note += fmt::format(", ranks at {:.0f}% CPU", *load.rank_cpu_share * 100);
  return note;
}

QuietWait wait_until_quiet(const LoadSample& sample, double step_s, double limit, double budget_s,
                           int trial_number, std::ostream& out, const std::function<bool()>& stop) {
  QuietWait wait;
  if (budget_s <= 0) return wait;
  int quiet_steps = 0;
  while (!stop()) {
    const auto cpus = sample();
    wait.waited_s += step_s;
    if (!cpus) {  // the machine's load cannot be read: nothing to wait for
      wait.quiet = true;
      break;
    }
    wait.last_cpus = *cpus;
    // Two quiet steps in a row: a build between two compilations is not a quiet machine.
    if (*cpus <= limit) {
      if (++quiet_steps >= 2) {
        wait.quiet = true;
        break;
      }
    } else {
      quiet_steps = 0;
      if (!wait.said) {
        out << fmt::format(
                   "tune: waiting for the machine to be quiet: {:.2g} CPUs busy outside the study "
                   "(trial {} was measured under that load)\n",
                   *cpus, trial_number)
            << std::flush;
        wait.said = true;
      }
    }
    if (wait.waited_s >= budget_s) break;
  }
  return wait;
}

LoadSample live_load_sample(double step_s, std::vector<int> cpus) {
  return [step_s, cpus]() -> std::optional<double> {
    const auto busy_before = read_busy_cpu(cpus);
    const auto self_before = self_cpu_ns();
    const auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(step_s));
    const auto busy_after = read_busy_cpu(cpus);
    const auto self_after = self_cpu_ns();
    if (!busy_before || !busy_after || busy_after->ns < busy_before->ns) return std::nullopt;
    TrialCpu cpu;
    cpu.window_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cpu.busy_s = static_cast<double>(busy_after->ns - busy_before->ns) / 1e9;
    cpu.busy_lines = busy_after->lines;
    cpu.tune_s = static_cast<double>(self_after - self_before) / 1e9;
    cpu.tick_s = clock_tick_ns() / 1e9;
    const auto load = external_load(cpu);
    if (!load) return std::nullopt;
    return load->cpus;
  };
}

LoadSpec effective_load_spec(const LoadSpec& spec) {
  LoadSpec out = spec;
  if (const char* v = std::getenv("TUNE_LOAD_CHECK")) {
    const std::string_view s(v);
    if (s == "off" || s == "0" || s == "false") out.check = false;
  }
  return out;
}

}  // namespace tune::tuner
