#include "probes/sustained.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "probes/topology.h"

namespace tune::probes {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double round_to(double x, double unit) { return std::round(x / unit) * unit; }

int rank_threads(const SampleRecord& r) {
  int n = 0;
  for (const auto& [pid, rank] : r.ranks)
    for (const GroupTally& g : rank.groups) n += g.threads;
  return n;
}

// When the ranks have started every thread they will run: the first record (before the end that
// is left out) with the most threads, or nullopt when that leaves too little. A script's imports
// take one thread per rank for seconds (`import torch`: 1.2 s of a 2.5 s run); its pools,
// communication threads and loader workers start with the training itself.
std::optional<double> threads_started_at(const std::vector<SampleRecord>& records, double to,
                                         double span) {
  int most = 0;
  for (const SampleRecord& r : records)
    if (r.t <= to + 1e-9) most = std::max(most, rank_threads(r));
  for (const SampleRecord& r : records) {
    if (r.t > to + 1e-9 || rank_threads(r) < most) continue;
    // Too late to judge by (a pool started for the final evaluation): the fixed window.
    if (to - r.t < 0.25 * span) return std::nullopt;
    return r.t;
  }
  return std::nullopt;
}

// The records inside the measured window, [first, last). Too few left (a short trial): all.
std::pair<std::size_t, std::size_t> window_of(const std::vector<SampleRecord>& records,
                                              const SustainedOptions& o) {
  if (records.size() < 2) return {0, records.size()};
  const double t0 = records.front().t;
  const double span = records.back().t - t0;
  const double to = records.back().t - o.skip_end * span;
  double from = t0 + o.skip_start * span;
  if (const auto started = threads_started_at(records, to, span)) from = std::max(from, *started);
  std::size_t first = records.size(), last = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    // A record covers (t - dt, t]: inside when it ends in the window.
    if (records[i].t > from + 1e-9 && records[i].t <= to + 1e-9) {
      first = std::min(first, i);
      last = i + 1;
    }
  }
  if (first >= last || last - first < 3) return {0, records.size()};
  return {first, last};
}

SustainedLoad judge_load(const std::vector<SampleRecord>& records, std::size_t first,
                         std::size_t last, const std::vector<pid_t>* ranks, int pu_count,
                         const SustainedOptions& o) {
  SustainedLoad load;
  load.pu_count = pu_count;
  constexpr auto k_runtime = static_cast<std::size_t>(GroupId::runtime);
  std::vector<double> runnable, knob_runnable;
  double cpu = 0, wall = 0, over = 0, knob_over = 0, wait = 0, rt_cpu = 0, rt_wait = 0;
  double rt_threads = 0, main_cpu = 0, main_wait = 0, rank_wall = 0;
  bool wait_measured = true;
  constexpr auto k_main = static_cast<std::size_t>(GroupId::main);
  for (std::size_t i = first; i < last; ++i) {
    const SampleRecord& r = records[i];
    double run = 0, c = 0, w = 0, rc = 0, rw = 0, rr = 0, rn = 0, mc = 0, mw = 0, nr = 0;
    auto add_rank = [&](const RankTally& t) {
      const GroupTally& g = t.groups[k_runtime];
      rc += g.cpu_s;
      rw += g.wait_s;
      rr += g.runnable;
      rn += g.threads;
      mc += t.groups[k_main].cpu_s;
      mw += t.groups[k_main].wait_s;
      nr += t.groups[k_main].threads > 0 ? 1 : 0;
    };
    if (ranks == nullptr) {
      run = r.runnable;
      c = r.cpu_s;
      w = r.wait_s;
      for (const auto& [pid, t] : r.ranks) add_rank(t);
    } else {
      for (pid_t pid : *ranks) {
        if (auto it = r.ranks.find(pid); it != r.ranks.end()) {
          run += it->second.runnable;
          c += it->second.cpu_s;
          w += it->second.wait_s;
          add_rank(it->second);
        }
      }
    }
    runnable.push_back(run);
    knob_runnable.push_back(std::max(0.0, run - rr));
    rt_threads += rn;
    if (r.dt > 0) {
      cpu += c;
      wall += r.dt;
      wait += w;
      rt_cpu += rc;
      rt_wait += rw;
      main_cpu += mc;
      main_wait += mw;
      rank_wall += nr * r.dt;
      wait_measured = wait_measured && r.has_wait;
    }
    if (pu_count > 0 && run / pu_count > o.ratio) over += 1;
    if (pu_count > 0 && (run - rr) / pu_count > o.ratio) knob_over += 1;
  }
  if (runnable.empty() || pu_count <= 0) return load;
  const double samples = static_cast<double>(runnable.size());
  load.median_runnable = median_of(runnable);
  double sum = 0;
  for (double x : runnable) sum += x;
  load.mean_runnable = sum / samples;
  load.over_fraction = over / samples;
  load.runtime_threads = rt_threads / samples;
  if (wall > 0) {
    load.cpu_rate = cpu / wall;
    load.runtime_cpu_rate = rt_cpu / wall;
  }
  if (load.mean_runnable > 0)
    load.waiting_share = std::max(0.0, 1.0 - load.cpu_rate / load.mean_runnable);
  if (wall > 0 && wait_measured) {
    load.wait_measured = true;
    load.waiting_threads = wait / wall;
    if (wait + cpu > 0) load.measured_wait_share = wait / (wait + cpu);
  }
  // Measured (schedstat), what the waiting cost the job decides: the share of the ranks' own
  // threads' runnable time spent waiting for a CPU (`main_wait_share` or more), where those
  // threads were runnable enough to say (else the share of every thread of the knobs). A count of
  // queued threads does not: a DataLoader worker beside its rank on one core, or TBB's workers
  // yielding between OpenCV calls, queue a thread or more per PU in the fastest settings, while
  // the rank's own thread, which the whole job waits for at every allreduce, hardly waits; in a
  // slowed setting it loses half its time to the queue.
  // And the queue must be of the ranks' own making: their threads asked for more than `ratio` x
  // PUs (CPU time plus queue). Another job on those CPUs (or another namespace "host" sharing
  // them) makes threads queue without the settings asking for more than the PUs.
  // The knobs' threads alone: without the runtime threads they would have had the CPU time those
  // used, so their queue is at most their own delay less that time (an optimistic bound: a
  // setting is oversubscribed only when its own threads are, whatever the runtimes add).
  if (load.wait_measured) {
    load.knob_waiting_threads = std::max(0.0, wait - rt_wait - rt_cpu) / wall;
    load.knob_demand = (cpu - rt_cpu + std::max(0.0, wait - rt_wait)) / wall;
    const double knob_busy = cpu - rt_cpu + std::max(0.0, wait - rt_wait);
    if (knob_busy > 0) load.knob_wait_share = std::max(0.0, wait - rt_wait - rt_cpu) / knob_busy;
    if (main_cpu + main_wait > 0) load.main_wait_share = main_wait / (main_cpu + main_wait);
    if (rank_wall > 0) load.main_busy = (main_cpu + main_wait) / rank_wall;
    load.by_main = load.main_busy >= o.main_busy_floor;
    const double share = load.by_main ? load.main_wait_share : load.measured_wait_share;
    const double knob_share = load.by_main ? load.main_wait_share : load.knob_wait_share;
    load.with_runtime_oversubscribed =
        share >= o.main_wait_share && load.cpu_rate + load.waiting_threads >= o.ratio * pu_count;
    load.oversubscribed = load.with_runtime_oversubscribed && knob_share >= o.main_wait_share &&
                          load.knob_demand >= o.ratio * pu_count;
    return load;
  }
  // Estimated: the sampled median over the limit in more than half of the window (a median that
  // lands on the limit between two samples, 2.5 threads on 2 PUs, is a tie), and the slowdown
  // that claims (the runnable thread-time that got no CPU, 1 - CPU rate / mean runnable);
  // without CPU deltas (a single sample) the count decides. The knobs' threads alone: the same
  // on the runnable threads that are not the runtimes'.
  const bool slowed = wall <= 0 || load.waiting_share >= o.min_waiting_share;
  load.with_runtime_oversubscribed =
      load.median_runnable / pu_count > o.ratio && load.over_fraction > 0.5 && slowed;
  load.oversubscribed = load.with_runtime_oversubscribed &&
                        median_of(knob_runnable) / pu_count > o.ratio && knob_over / samples > 0.5;
  return load;
}

std::map<std::string, DutyCycle> duty_of(const std::vector<SampleRecord>& records,
                                         std::size_t first, std::size_t last) {
  struct Sum {
    double threads = 0, runnable = 0, cpu = 0, wait = 0, thread_wall = 0, rank_samples = 0;
  };
  bool measured = true;  // every record of the window has run-queue delays
  std::array<Sum, k_group_count> sums{};
  for (std::size_t i = first; i < last; ++i) {
    const SampleRecord& r = records[i];
    for (const auto& [pid, rank] : r.ranks) {
      for (std::size_t g = 0; g < k_group_count; ++g) {
        const GroupTally& t = rank.groups[g];
        Sum& s = sums[g];
        s.rank_samples += 1;
        s.threads += t.threads;
        s.runnable += t.runnable;
        if (r.dt > 0) {
          s.cpu += t.cpu_s;
          s.wait += t.wait_s;
          s.thread_wall += r.dt * t.threads;
        }
      }
    }
    if (r.dt > 0) measured = measured && r.has_wait;
  }
  std::map<std::string, DutyCycle> out;
  for (std::size_t g = 0; g < k_group_count; ++g) {
    const Sum& s = sums[g];
    if (s.threads <= 0) continue;
    DutyCycle d;
    d.threads = s.threads / s.rank_samples;
    d.runnable = s.runnable / s.threads;
    if (s.thread_wall > 0) d.cpu = std::min(1.0, s.cpu / s.thread_wall);
    // Measured, the share of thread-time runnable is CPU time plus run-queue delay: exact where a
    // dozen sampled states of a bursty pool (a loader worker filling its queue) are a guess.
    if (measured && s.thread_wall > 0) d.runnable = std::min(1.0, (s.cpu + s.wait) / s.thread_wall);
    out[k_group_names[g]] = d;
  }
  return out;
}

// The ranks' own threads against the knobs' other threads over the window (all ranks).
void add_critical_path(const std::vector<SampleRecord>& records, std::size_t first,
                       std::size_t last, SustainedVerdict& v) {
  constexpr auto k_main = static_cast<std::size_t>(GroupId::main);
  constexpr auto k_runtime = static_cast<std::size_t>(GroupId::runtime);
  double main_cpu = 0, main_wait = 0, helper_cpu = 0, helper_wait = 0, rank_wall = 0;
  bool measured = first < last;
  for (std::size_t i = first; i < last; ++i) {
    const SampleRecord& r = records[i];
    if (r.dt <= 0) continue;
    measured = measured && r.has_wait;
    for (const auto& [pid, rank] : r.ranks) {
      for (std::size_t g = 0; g < k_group_count; ++g) {
        const GroupTally& t = rank.groups[g];
        if (g == k_main) {
          main_cpu += t.cpu_s;
          main_wait += t.wait_s;
          rank_wall += t.threads > 0 ? r.dt : 0;
        } else if (g != k_runtime) {
          helper_cpu += t.cpu_s;
          helper_wait += t.wait_s;
        }
      }
    }
  }
  if (!measured || rank_wall <= 0) return;
  v.main_measured = true;
  if (main_cpu + main_wait > 0) v.main_wait_share = main_wait / (main_cpu + main_wait);
  v.main_busy = (main_cpu + main_wait) / rank_wall;
  if (helper_cpu + helper_wait > 0) v.helper_wait_share = helper_wait / (helper_cpu + helper_wait);
}

}  // namespace

GroupId thread_group_of(const std::string& comm, bool rank_main, bool child_process) {
  if (rank_main) return GroupId::main;
  if (child_process) return GroupId::dataloader_workers;
  static const std::pair<const char*, GroupId> k_prefixes[] = {
      {"tt-iter", GroupId::iterator_workers},
      {"tt-omp", GroupId::openmp},
      {"tt-blas", GroupId::blas},
      {"tt-cv", GroupId::opencv},
      {"tt-comm", GroupId::comm},
      // Runtimes that name their threads: NCCL ("NCCL Progress", "NCCL Service"), CUDA's event
      // handler and its internal threads, PyTorch's autograd device threads, PMIx and Open MPI
      // progress threads where a build names them, gloo's where it does.
      {"NCCL", GroupId::runtime},
      {"cuda-EvtHandlr", GroupId::runtime},
      {"cuda0", GroupId::runtime},
      {"pt_autograd", GroupId::runtime},
      {"pmix", GroupId::runtime},
      {"ompi_", GroupId::runtime},
      {"opal_", GroupId::runtime},
      {"gloo", GroupId::runtime}};
  for (const auto& [prefix, id] : k_prefixes)
    if (comm.starts_with(prefix)) return id;
  return GroupId::other;
}

void thin_records(std::vector<SampleRecord>& records, std::size_t limit) {
  if (records.size() <= limit || records.size() < 2) return;
  std::vector<SampleRecord> out;
  out.reserve(records.size() / 2 + 1);
  for (std::size_t i = 0; i < records.size(); i += 2) {
    if (i + 1 == records.size()) {
      out.push_back(std::move(records[i]));
      break;
    }
    SampleRecord merged = std::move(records[i + 1]);
    const SampleRecord& a = records[i];
    merged.dt += a.dt;
    merged.cpu_s += a.cpu_s;
    merged.wait_s += a.wait_s;
    merged.has_wait = merged.has_wait && a.has_wait;
    for (auto& [pid, rank] : merged.ranks) {
      const auto it = a.ranks.find(pid);
      if (it == a.ranks.end()) continue;
      rank.cpu_s += it->second.cpu_s;
      rank.wait_s += it->second.wait_s;
      for (std::size_t g = 0; g < k_group_count; ++g) {
        rank.groups[g].cpu_s += it->second.groups[g].cpu_s;
        rank.groups[g].wait_s += it->second.groups[g].wait_s;
      }
    }
    out.push_back(std::move(merged));
  }
  records = std::move(out);
}

const SustainedLoad* SustainedVerdict::worst() const {
  const SustainedLoad* w = nullptr;
  for (const SustainedLoad& l : loads) {
    if (l.pu_count <= 0) continue;
    const double x = l.median_runnable / l.pu_count;
    if (w == nullptr || (l.oversubscribed && !w->oversubscribed) ||
        (l.oversubscribed == w->oversubscribed && x > w->median_runnable / w->pu_count))
      w = &l;
  }
  return w;
}

SustainedVerdict judge_sustained(const std::vector<SampleRecord>& records,
                                 const std::map<pid_t, std::vector<int>>& rank_cpusets, int pus,
                                 const SustainedOptions& options) {
  SustainedVerdict v;
  const auto [first, last] = window_of(records, options);
  v.window_samples = static_cast<int>(last - first);
  if (first < last) {
    v.window_from_s = records[first].t - records[first].dt - records.front().t;
    v.window_from_s = std::max(0.0, v.window_from_s);
    v.window_to_s = records[last - 1].t - records.front().t;
  }
  v.loads.push_back(judge_load(records, first, last, nullptr, pus, options));
  std::map<std::vector<int>, std::vector<pid_t>> by_cpuset;
  for (const auto& [pid, cpus] : rank_cpusets)
    if (!cpus.empty()) by_cpuset[cpus];
  for (auto& [cpus, members] : by_cpuset)
    for (const auto& [pid, own] : rank_cpusets)
      if (!own.empty() && std::includes(cpus.begin(), cpus.end(), own.begin(), own.end()))
        members.push_back(pid);
  for (const auto& [cpus, members] : by_cpuset) {
    SustainedLoad l =
        judge_load(records, first, last, &members, static_cast<int>(cpus.size()), options);
    l.pus = cpus;
    v.loads.push_back(std::move(l));
  }
  // The ranks' own cpusets decide when they are known: the whole tree also holds mpirun and the
  // launcher, unbound, whose odd runnable thread beside two ranks bound to a PU each is no queue
  // of the ranks'. Without a cpuset (a rank not yet read), the whole tree decides.
  for (std::size_t i = v.loads.size() > 1 ? 1 : 0; i < v.loads.size(); ++i) {
    v.oversubscribed = v.oversubscribed || v.loads[i].oversubscribed;
    v.runtime_only =
        v.runtime_only || (v.loads[i].with_runtime_oversubscribed && !v.loads[i].oversubscribed);
  }
  v.duty = duty_of(records, first, last);
  add_critical_path(records, first, last, v);
  return v;
}

nlohmann::json duty_cycles_json(const std::map<std::string, DutyCycle>& duty) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, d] : duty)
    j[name] = {{"threads", round_to(d.threads, 0.01)},
               {"cpu", round_to(d.cpu, 0.001)},
               {"runnable", round_to(d.runnable, 0.001)}};
  return j;
}

nlohmann::json SustainedVerdict::to_json() const {
  nlohmann::json j;
  j["samples"] = window_samples;
  j["window_s"] = {round_to(window_from_s, 0.001), round_to(window_to_s, 0.001)};
  j["loads"] = nlohmann::json::array();
  for (const SustainedLoad& l : loads)
    j["loads"].push_back(
        {{"pus", l.pus.empty() ? "all" : format_cpu_list(l.pus)},
         {"pu_count", l.pu_count},
         {"median_runnable", round_to(l.median_runnable, 0.1)},
         {"mean_runnable", round_to(l.mean_runnable, 0.01)},
         {"over_fraction", round_to(l.over_fraction, 0.01)},
         {"cpu_rate", round_to(l.cpu_rate, 0.01)},
         {"waiting_share", round_to(l.waiting_share, 0.01)},
         {"waiting_threads",
          l.wait_measured ? nlohmann::json(round_to(l.waiting_threads, 0.001)) : nlohmann::json()},
         {"measured_wait_share", l.wait_measured
                                     ? nlohmann::json(round_to(l.measured_wait_share, 0.001))
                                     : nlohmann::json()},
         {"runtime_threads", round_to(l.runtime_threads, 0.01)},
         {"runtime_cpu_rate", round_to(l.runtime_cpu_rate, 0.01)},
         {"main_wait_share",
          l.wait_measured ? nlohmann::json(round_to(l.main_wait_share, 0.001)) : nlohmann::json()},
         {"main_busy",
          l.wait_measured ? nlohmann::json(round_to(l.main_busy, 0.001)) : nlohmann::json()},
         {"knob_waiting_threads", l.wait_measured
                                      ? nlohmann::json(round_to(l.knob_waiting_threads, 0.001))
                                      : nlohmann::json()},
         {"knob_demand",
          l.wait_measured ? nlohmann::json(round_to(l.knob_demand, 0.001)) : nlohmann::json()},
         {"with_runtime_oversubscribed", l.with_runtime_oversubscribed},
         {"oversubscribed", l.oversubscribed}});
  j["runtime_only"] = runtime_only;
  const auto measured = [&](double x) {
    return main_measured ? nlohmann::json(round_to(x, 0.001)) : nlohmann::json();
  };
  j["main_wait_share"] = measured(main_wait_share);
  j["main_busy"] = measured(main_busy);
  j["helper_wait_share"] = measured(helper_wait_share);
  return j;
}

}  // namespace tune::probes
