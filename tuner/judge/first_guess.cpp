#include "tuner/judge/first_guess.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "probes/cpu_profile.h"
#include "probes/library_report.h"
#include "probes/monitor.h"
#include "probes/sustained.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {
namespace {

using search::ParamValue;

// The verdict's own limit on the ranks' threads' wait share (probes/sustained.h).
const double k_wait_limit = probes::SustainedOptions{}.main_wait_share;
// The job used at least this share of the node's cores: they were all busy.
constexpr double k_busy_node = 0.90;

bool worker_pool(const std::string& pool) {
  return pool == "dataloader_workers" || pool == "iterator_workers";
}
// Pools that can be a rank's main compute pool: they take b - workers threads.
bool main_compute_pool(const std::string& pool) {
  return pool == "torch_intra_op" || pool == "openmp" || pool == "blas";
}

// One cpuset's (or the whole tree's) measured wait share: the ranks' own threads' where run-queue
// delays were measured, else every thread's, as the verdict recorded it.
double wait_share_of(const probes::SustainedLoad& load) {
  return load.wait_measured ? load.main_wait_share : load.waiting_share;
}

bool has_null_choice(const search::Distribution& dist) {
  const auto* c = std::get_if<search::CategoricalDistribution>(&dist);
  return c != nullptr && std::any_of(c->choices.begin(), c->choices.end(), [](const auto& v) {
           return std::holds_alternative<std::monostate>(v);
         });
}

const search::Distribution* domain_of(const StudySpec& spec, const std::string& param) {
  for (const auto& [name, dist] : spec.space)
    if (name == param) return &dist;
  return nullptr;
}

std::string pct(double share) { return fmt::format("{:.0f}%", share * 100); }

}  // namespace

Result<std::map<std::string, ParamValue>> baseline_params(const StudySpec& spec) {
  if (spec.enqueue.empty())
    return std::unexpected(fmt::format(
        "{}: no `enqueue:` entry, so no command as run (the baseline) to start the guess from",
        spec.file));
  auto params = spec.enqueue.front();
  for (const auto& [name, dist] : spec.space) {
    if (params.contains(name)) continue;
    if (!has_null_choice(dist))
      return std::unexpected(
          fmt::format("{}: the first `enqueue:` entry (the baseline) does not give parameter '{}'",
                      spec.file, name));
    params[name] = ParamValue{};
  }
  return params;
}

std::map<std::string, ParamValue> trial_params(const search::FrozenTrial& trial) {
  std::map<std::string, ParamValue> out;
  for (const auto& [name, internal] : trial.params) {
    const auto dist = trial.distributions.find(name);
    if (dist != trial.distributions.end()) out[name] = search::to_external(dist->second, internal);
  }
  return out;
}

std::optional<GuessBasis> guess_basis(const search::FrozenTrial& baseline) {
  const auto verdict = baseline.system_attrs.find(k_attr_probe_verdict);
  if (verdict == baseline.system_attrs.end() || !verdict->is_object()) return std::nullopt;
  return GuessBasis{
      *verdict, trial_params(baseline),
      baseline.state == search::TrialState::complete ? baseline.value : std::optional<double>()};
}

Result<FirstGuess> first_guess(const StudySpec& spec, const RuleMachine& machine,
                               const nlohmann::json& verdict,
                               const std::map<std::string, ParamValue>& baseline,
                               std::optional<double> baseline_value) {
  if (!verdict.is_object())
    return std::unexpected("probe_verdict: expected a JSON object (probes::Verdict)");
  const auto duty_cycles = verdict.find("duty_cycles");
  const auto sustained = verdict.find("sustained");
  if (duty_cycles == verdict.end() || !duty_cycles->is_object())
    return std::unexpected(
        "probe_verdict: no `duty_cycles` (a verdict of schema_version 2 or later has them)");
  if (sustained == verdict.end() || !sustained->is_object() || !sustained->contains("loads") ||
      !(*sustained)["loads"].is_array() || (*sustained)["loads"].empty())
    return std::unexpected("probe_verdict: no `sustained.loads` (the measured window's loads)");
  const auto read = probes::verdict_from_json(verdict);
  if (!read)
    return std::unexpected(fmt::format("probe_verdict{}: {}", read.error().key, read.error().why));

  FirstGuess g;
  g.params = baseline;
  const auto& loads = read->sustained.loads;
  const auto& duty = read->sustained.duty;
  // The load that decides: the first oversubscribed one, else the one whose threads waited most.
  const probes::SustainedLoad* decisive = nullptr;
  for (const auto& l : loads)
    if (l.oversubscribed) {
      decisive = &l;
      break;
    }
  if (decisive == nullptr)
    for (const auto& l : loads)
      if (decisive == nullptr || wait_share_of(l) > wait_share_of(*decisive)) decisive = &l;
  const double wait = wait_share_of(*decisive);
  const bool oversubscribed = read->observed_oversubscribed;
  const std::string where =
      decisive->pus.empty() ? std::string("on all their PUs")
                            : fmt::format("on PU(s) {}", probes::format_cpu_list(decisive->pus));
  if (!oversubscribed && wait < k_wait_limit) {
    g.reasoning.push_back(fmt::format(
        "no contention: the ranks' threads waited {} of their runnable time for a CPU {} (the "
        "verdict's limit: {}), and the verdict is not oversubscribed; the setting as run stays",
        pct(wait), where, pct(k_wait_limit)));
    return g;
  }
  // The verdict's whole test: a wait over its limit is the settings' only when the threads also
  // asked for more than `ratio` x the PUs (CPU time plus queue); else another job's work queued
  // them (probes/sustained.cpp), and the settings are not what to change.
  if (!oversubscribed) {
    const double ratio = probes::SustainedOptions{}.ratio;
    std::string why;
    if (decisive->wait_measured && decisive->with_runtime_oversubscribed) {
      // The queue passed the test with every thread, not with the settings' own: the runtimes'
      // threads (gloo, Open MPI's progress, NCCL) made it, which no pool of the study sizes.
      why = fmt::format(
          " and asked for {:.2f} CPUs' worth on {} PU(s), but the runtimes' own threads used "
          "{:.2f} of it; without them the settings' threads {}: the runtimes queued them",
          decisive->cpu_rate + decisive->waiting_threads, decisive->pu_count,
          decisive->runtime_cpu_rate,
          decisive->knob_demand > 0
              ? fmt::format("asked for {:.2f}, under the {:.1f}x the verdict's demand test needs",
                            decisive->knob_demand, ratio)
              : std::string("do not pass the verdict's test"));
    } else {
      why = fmt::format(
          ", but asked for {} on {} PU(s), not the {:.1f}x the verdict's demand test needs: other "
          "work queued them",
          decisive->wait_measured
              ? fmt::format("{:.2f} CPUs' worth", decisive->cpu_rate + decisive->waiting_threads)
              : std::string("no more"),
          decisive->pu_count, ratio);
    }
    g.reasoning.push_back(fmt::format(
        "no contention of the settings' making: the ranks' threads waited {} of their runnable "
        "time for a CPU {} (the verdict's limit: {}){}; the setting as run stays",
        pct(wait), where, pct(k_wait_limit), why));
    return g;
  }
  g.reasoning.push_back(fmt::format(
      "contention: the ranks' threads waited {} of their runnable time for a CPU {} (the "
      "verdict's limit: {}){}",
      pct(wait), where, pct(k_wait_limit),
      oversubscribed ? fmt::format(", {:.1f} runnable threads on {} PUs", decisive->median_runnable,
                                   decisive->pu_count)
                     : std::string()));

  const int rpn = std::max(1, machine.ranks_per_node);
  const int b = std::max(1, machine.cores / rpn);
  g.reasoning.push_back(fmt::format("budget per rank: {} physical cores / {} local ranks = {}",
                                    machine.cores, rpn, b));

  // Demand per rank over the measured window: threads x runnable share, per group.
  const auto demand = [&](const char* group) {
    const auto it = duty.find(group);
    return it == duty.end() ? 0.0 : it->second.threads * it->second.runnable;
  };
  std::vector<std::string> compute_parts;
  double compute = 0;
  for (const char* group : {"main", "openmp", "blas", "opencv"}) {
    const double d = demand(group);
    compute += d;
    if (d > 0) compute_parts.push_back(fmt::format("{} {:.2f}", group, d));
  }
  const double workers_demand = demand("dataloader_workers") + demand("iterator_workers");
  g.reasoning.push_back(fmt::format(
      "demand per rank over the measured window (threads x runnable share): compute {:.2f} ({}), "
      "workers {:.2f}",
      compute, fmt::join(compute_parts, ", "), workers_demand));

  const auto targets = param_targets(spec);
  bool sizes_workers = false, sizes_compute = false;
  for (const auto& [param, t] : targets) {
    if (!domain_of(spec, param)) continue;
    sizes_workers = sizes_workers || worker_pool(t.pool);
    sizes_compute = sizes_compute || main_compute_pool(t.pool);
  }
  int workers = 0;
  if (sizes_workers && compute + workers_demand > 0) {
    const double share = b * workers_demand / (compute + workers_demand);
    workers = share < 0.5 ? 0 : static_cast<int>(std::lround(share));
    g.reasoning.push_back(fmt::format("workers = {} x {:.2f} / {:.2f} = {:.2f}{}", b,
                                      workers_demand, compute + workers_demand, share,
                                      workers == 0
                                          ? ": below 0.5, so 0 (the loading runs in the rank)"
                                          : fmt::format(", rounded: {}", workers)));
  } else if (workers_demand >= 0.5) {
    // Workers no parameter sizes keep their CPUs.
    workers = static_cast<int>(std::lround(workers_demand));
    g.reasoning.push_back(
        fmt::format("workers no parameter sizes keep about {} of the budget", workers));
  }
  const int threads = std::max(1, b - workers);
  if (threads + workers > b) workers = std::max(0, b - threads);
  if (sizes_compute)
    g.reasoning.push_back(
        fmt::format("compute pool = {} - {} = {} thread(s) (at least 1)", b, workers, threads));
  const int busy = threads + workers;

  // The binding, as the cores_per_rank rule binds, by the busy threads per rank.
  std::string bind = "none";
  if (busy <= 1)
    bind = "core";
  else if (rpn == machine.packages)
    bind = "socket";
  else if (rpn == machine.numa_nodes)
    bind = "numa";

  std::map<std::string, ParamValue> wants;
  for (const auto& [param, t] : targets) {
    if (worker_pool(t.pool) && sizes_workers) wants[param] = std::int64_t{workers};
    if (main_compute_pool(t.pool)) wants[param] = std::int64_t{threads};
    if (t.pool == "opencv") wants[param] = std::int64_t{1};
    if (t.control == "binding") wants[param] = bind;
  }
  for (const auto& [param, want] : wants) {
    const auto* dist = domain_of(spec, param);
    if (dist == nullptr) continue;
    bool clamped = false;
    auto got = fit_into_domain(*dist, want, clamped);
    if (!got && targets.at(param).control == "binding" && has_null_choice(*dist)) {
      // null leaves the binding to mpirun: Open MPI binds to core for np <= 2, else package.
      const std::string by_default = machine.ranks <= 2 ? "core" : "socket";
      if (std::get<std::string>(want) == by_default) {
        got = ParamValue{};
        g.reasoning.push_back(fmt::format(
            "binding: {} busy thread(s) per rank, bound to {}: {}=null (Open MPI's default for "
            "{} ranks)",
            busy, bind, param, machine.ranks));
      }
    }
    if (!got) {
      g.reasoning.push_back(fmt::format("{} cannot take {}; left as run", param,
                                        search::param_value_to_string(want)));
      continue;
    }
    if (clamped)
      g.reasoning.push_back(fmt::format("{}={} (clamped into its domain, for {})", param,
                                        search::param_value_to_string(*got),
                                        search::param_value_to_string(want)));
    g.params[param] = *got;
  }
  g.change = g.params != baseline;
  if (!g.change) {
    g.reasoning.push_back("the split is the setting as run: no change to propose");
    return g;
  }

  // The predicted factor. Cores left idle: the job gains at most what it did not use. Every
  // core busy: each rank's threads asked for more than its budget and ran that much slower.
  const double used = loads.front().cpu_rate;
  const int node_cores = b * rpn;
  if (used > 0 && used < k_busy_node * node_cores) {
    g.speedup = std::max(1.0, node_cores / used);
    g.reasoning.push_back(fmt::format(
        "predicted {:.2f}x, a rough estimate: the job used {:.2f} of {} cores (below {}), so at "
        "most {} / {:.2f} = {:.2f}x",
        g.speedup, used, node_cores, pct(k_busy_node), node_cores, used, node_cores / used));
  } else {
    const double asked = compute + workers_demand;
    g.speedup = std::max(1.0, asked / b);
    g.reasoning.push_back(fmt::format(
        "predicted {:.2f}x, a rough estimate: every core was busy, and each rank's threads asked "
        "for {:.2f} CPUs' worth against a budget of {}: {:.2f} / {} = {:.2f}x",
        g.speedup, asked, b, asked, b, asked / b));
  }
  if (baseline_value && spec.directions.size() == 1) {
    // A maximized objective is taken as a rate, a minimized one as a time.
    g.predicted = spec.direction == search::Direction::maximize ? *baseline_value * g.speedup
                                                                : *baseline_value / g.speedup;
  }
  return g;
}

nlohmann::json first_guess_json(const FirstGuess& guess) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, value] : guess.params) params[name] = search::param_value_to_json(value);
  return {{"change", guess.change},
          {"params", params},
          {"predicted", guess.predicted ? nlohmann::json(*guess.predicted) : nlohmann::json()},
          {"reasoning", guess.reasoning}};
}

std::string first_guess_line(const FirstGuess& guess,
                             const std::map<std::string, ParamValue>& baseline) {
  if (!guess.change) return "no change";
  std::vector<std::string> changed;
  for (const auto& [name, value] : guess.params) {
    const auto it = baseline.find(name);
    if (it == baseline.end() || it->second != value)
      changed.push_back(fmt::format("{}={}", name, search::param_value_to_string(value)));
  }
  std::string why = guess.reasoning.empty() ? std::string() : guess.reasoning.front();
  if (guess.kernel_changed && !guess.threads_changed)
    return fmt::format("{} ({})", fmt::join(changed, " "), why);  // no speed-up predicted
  return fmt::format("{} (predicted {:.2f}x{}: {})", fmt::join(changed, " "), guess.speedup,
                     guess.kernel_changed ? " from the threads alone" : "", why);
}

void add_kernel_guess(const StudySpec& spec, const nlohmann::json& libraries,
                      const nlohmann::json& verdict, FirstGuess& guess) {
  const auto summary = probes::LibrariesSummary::from_json(libraries);
  if (!summary) return;
  const probes::CpuTimeRead time = probes::read_cpu_time(verdict);
  for (const auto& k : spec.kernel_params) {
    const probes::KernelLibrary* library = probes::kernel_library(k.library);
    const probes::LibraryUse* stale = library ? summary->stale(library->kind) : nullptr;
    if (stale == nullptr) continue;
    // The rank that spent the largest share of its CPU time in the library, under the names
    // the CPU profile gives it (KernelLibrary::profile_names: oneDNN's generated code included).
    const std::string file(library->profile_names.front());
    const auto counts = [&](const std::string& name) {
      return std::ranges::find(library->profile_names, name) != library->profile_names.end();
    };
    double share = 0;
    int rank = -1;
    for (const auto& r : time.ranks) {
      double in_library = 0;
      for (const auto& s : r.shares)
        if (counts(s.library)) in_library += s.share;
      const bool most = !r.shares.empty() && counts(r.shares.front().library);
      if ((most || in_library >= k_kernel_time_share) && in_library > share) {
        share = in_library;
        rank = r.rank;
      }
    }
    if (rank < 0) continue;
    const auto d =
        std::ranges::find_if(spec.space, [&](const auto& p) { return p.first == k.name; });
    if (d == spec.space.end()) continue;
    const auto* c = std::get_if<search::CategoricalDistribution>(&d->second);
    if (c == nullptr) continue;
    const auto best = std::ranges::find_if(c->choices, [](const search::ParamValue& v) {
      return std::holds_alternative<std::string>(v);
    });
    if (best == c->choices.end()) continue;  // nothing passed the check
    const bool threads_changed = guess.kernel_changed ? guess.threads_changed : guess.change;
    guess.params[k.name] = *best;
    guess.threads_changed = threads_changed;
    guess.kernel_changed = true;
    guess.change = true;
    const std::string cpu = stale->cpu_best.empty() ? summary->cpu : stale->cpu_best;
    std::string line = fmt::format(
        "kernel: rank {} spent {} of its CPU time in {}{}, which runs {} kernels{} on this "
        "{} CPU: {} = {}, the best {} that passed the check (its speed-up is not in the "
        "prediction)",
        rank, pct(share), file, library->kind == "onednn" ? " and its generated code" : "",
        stale->core.empty() ? "older" : stale->core,
        stale->forced_by.empty() ? "" : fmt::format(" ({})", stale->forced_by), cpu, k.name,
        std::get<std::string>(*best), library->kernel_word);
    if (guess.threads_changed) {
      guess.reasoning.push_back(std::move(line));
    } else {
      for (auto& r : guess.reasoning)
        if (r.ends_with("the setting as run stays"))
          r.replace(r.size() - std::string_view("the setting as run stays").size(),
                    std::string::npos, "the threads stay as run");
      guess.reasoning.insert(guess.reasoning.begin(), std::move(line));
    }
  }
}

}  // namespace tune::tuner
