#include "probes/monitor.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace tune::probes {
namespace {

bool is_launcher(const std::string& comm) { return is_launcher_comm(comm); }

// What a launcher starts to reach other nodes (ssh/rsh by Open MPI's rsh launcher, srun inside a
// Slurm allocation): the ranks it leads to run elsewhere, so it is no rank here.
bool is_remote_agent(const std::string& comm) {
  static const std::set<std::string> k_agents = {"ssh", "rsh", "qrsh", "blaunch", "srun"};
  return k_agents.contains(comm);
}

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string pct(double v) { return std::to_string(static_cast<long>(std::lround(v))) + "%"; }

std::string fixed1(double v) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << v;
  return s.str();
}

std::optional<int> rank_from_env(SystemSource& source, pid_t pid) {
  for (const char* key : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (auto v = source.read_environ(pid, key)) {
      int r = 0;
      auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), r);
      if (ec == std::errc() && r >= 0) return r;
    }
  }
  return std::nullopt;
}

}  // namespace

bool is_launcher_comm(const std::string& comm) {
  static const std::set<std::string> k_launchers = {
      "mpirun",         "mpiexec",        "orterun",         "orted",
      "prted",          "prterun",        "hydra_pmi_proxy", "mpiexec.hydra",
      "mpiexec.openmp", "mpirun.openmpi", "mpiexec.openmpi"};
  return k_launchers.contains(comm);
}

TrialMonitor::TrialMonitor(SystemSource& source, pid_t root, MonitorOptions options)
    : m_source(source), m_root(root), m_options(options), m_origins(m_options.thread_origins_dir) {
  if (auto topo = m_source.topology()) m_machine_pus = topo->pu_count();
  if (m_options.cpu_profile) {
    CpuProfile::Options po;
    po.frequency_hz = m_options.cpu_profile_hz;
    po.max_events = m_options.cpu_profile_max_events;
    m_profile = std::make_unique<CpuProfile>(po);
  }
}

TrialMonitor::~TrialMonitor() { stop(); }

void TrialMonitor::start() {
  if (m_thread.joinable()) return;
  {
    std::lock_guard lock(m_wake_mutex);
    m_stopping = false;
  }
  if (m_profile) {
    m_profile_stopping = false;
    m_profile_thread = std::thread([this] {
      std::unique_lock lock(m_profile_mutex);
      for (;;) {
        m_profile_wake.wait(lock, [this] { return m_profile_stopping || m_profile_pending; });
        if (!m_profile_pending) return;  // stopping, nothing left to profile
        ProfileJob job = std::move(*m_profile_pending);
        m_profile_pending.reset();
        lock.unlock();
        run_profile_job(job);
        lock.lock();
      }
    });
  }
  m_thread = std::thread([this] {
    const double started = m_source.now_s();
    std::unique_lock lock(m_wake_mutex);
    while (!m_stopping) {
      // Short trials need samples for a median: the first seconds are sampled faster.
      const bool early = m_source.now_s() - started < m_options.early_s;
      const auto period = std::chrono::duration<double>(
          std::max(0.001, early ? std::min(m_options.interval_s, m_options.early_interval_s)
                                : m_options.interval_s));
      lock.unlock();
      sample_once();
      double cost = 0;
      {
        std::lock_guard state(m_mutex);
        cost = m_last_sample_cpu_s;
      }
      lock.lock();
      const auto wait =
          std::max(period, std::chrono::duration<double>(cost * m_options.min_idle_factor));
      m_wake.wait_for(lock, wait, [this] { return m_stopping; });
    }
  });
}

void TrialMonitor::stop() {
  if (!m_thread.joinable()) return;
  {
    std::lock_guard lock(m_wake_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
  m_thread.join();
  if (m_profile_thread.joinable()) {
    {
      std::lock_guard lock(m_profile_mutex);
      m_profile_stopping = true;
    }
    m_profile_wake.notify_all();
    m_profile_thread.join();  // after the job pending, if any
  }
  sample_once(/*full=*/true);  // the stretch since the last tick
  m_profile.reset();           // the trial has ended: every perf event's fd closed
}

TrialMonitor::TreeRead TrialMonitor::read_tree(double now, bool full) {
  TreeRead read;
  const std::vector<pid_t> tree = m_source.process_tree(m_root);
  std::set<pid_t> known;
  {
    std::lock_guard lock(m_mutex);
    read.status_due =
        full || m_last_status_s < 0 || now - m_last_status_s >= m_options.status_interval_s - 1e-9;
    for (const auto& [pid, prev] : m_prev_proc) known.insert(pid);
  }
  for (pid_t pid : tree) {
    const bool with_status = read.status_due || !known.contains(pid);
    if (auto p = m_source.read_process_threads(pid, with_status))
      read.procs.emplace(pid, std::move(*p));
  }
  // Which processes are ranks: the first below a launcher, or the root without one.
  bool any_launcher = false;
  for (const auto& [pid, p] : read.procs) any_launcher = any_launcher || is_launcher(p.comm);
  for (const auto& [pid, p] : read.procs) {
    if (is_launcher(p.comm) || is_remote_agent(p.comm)) continue;
    if (!any_launcher) {
      if (pid == m_root) read.rank_pids.insert(pid);
    } else if (auto parent = read.procs.find(p.ppid);
               parent != read.procs.end() && is_launcher(parent->second.comm)) {
      read.rank_pids.insert(pid);
    }
  }
  return read;
}

pid_t TrialMonitor::owner_rank(const TreeRead& read, pid_t pid) const {
  for (int depth = 0; depth < 64; ++depth) {
    if (read.rank_pids.contains(pid)) return pid;
    auto it = read.procs.find(pid);
    if (it == read.procs.end() || pid == m_root) return 0;
    pid = it->second.ppid;
  }
  return 0;
}

void TrialMonitor::number_new_ranks(const TreeRead& read) {
  // Ranks get their number outside the lock (reading /proc/<pid>/environ). A rank caught while
  // its launcher still sets it up may not show the variable yet: asked again on later samples.
  std::map<pid_t, std::optional<int>> numbers;
  {
    std::lock_guard lock(m_mutex);
    for (pid_t pid : read.rank_pids) {
      const auto it = m_ranks.find(pid);
      if (it == m_ranks.end() || (it->second.rank < 0 && it->second.number_reads < k_number_reads))
        numbers[pid];
    }
  }
  for (auto& [pid, number] : numbers) number = rank_from_env(m_source, pid);
  std::lock_guard lock(m_mutex);
  for (const auto& [pid, number] : numbers) {
    RankAcc& acc = m_ranks[pid];
    acc.pid = pid;
    acc.comm = read.procs.at(pid).comm;
    acc.rank = number ? *number : -1;
    acc.number_reads += 1;
  }
}

std::map<pid_t, OriginClass> TrialMonitor::classify_threads(const TreeRead& read) {
  std::map<pid_t, OriginClass> out;
  if (!m_origins.enabled()) return out;
  m_origins.begin_sample();
  for (const auto& [pid, p] : read.procs) {
    if (owner_rank(read, pid) == 0) continue;
    for (const ThreadSample& t : p.threads)
      if (t.tid != pid)
        if (const auto origin = m_origins.origin(pid, t.tid)) out[t.tid] = classify_origin(*origin);
  }
  return out;
}

std::set<pid_t> TrialMonitor::runtime_by_count(const TreeRead& read,
                                               const std::map<pid_t, OriginClass>& classes) const {
  std::set<pid_t> out;
  if (!m_options.program_threads) return out;
  const auto keep = static_cast<std::size_t>(std::max(0, *m_options.program_threads));
  for (pid_t rank : read.rank_pids) {
    const auto it = read.procs.find(rank);
    if (it == read.procs.end()) continue;
    std::vector<const ThreadSample*> unnamed;
    for (const ThreadSample& t : it->second.threads)
      if (thread_group_of(t.comm, t.tid == rank) == GroupId::other && !classes.contains(t.tid))
        unnamed.push_back(&t);
    // The pools' threads work; the runtimes' mostly sleep: the busiest so far are the pools'.
    std::stable_sort(unnamed.begin(), unnamed.end(),
                     [](const ThreadSample* a, const ThreadSample* b) {
                       if (a->cpu_s != b->cpu_s) return a->cpu_s > b->cpu_s;
                       return a->tid < b->tid;
                     });
    for (std::size_t i = keep; i < unnamed.size(); ++i) out.insert(unnamed[i]->tid);
  }
  return out;
}

TrialMonitor::ThreadDelta TrialMonitor::count_thread(const ThreadSample& t, pid_t rank,
                                                     bool status_due, GroupId group,
                                                     SampleSums& sums) {
  const bool is_r = t.state == 'R';
  sums.runnable += is_r ? 1 : 0;
  RankAcc* acc = rank != 0 ? &m_ranks.at(rank) : nullptr;
  const auto tp = m_prev_thread.find(t.tid);
  double dcpu = 0, dwait = 0;
  ThreadPrev next{t.cpu_s,   t.nonvoluntary_switches, t.voluntary_switches, t.has_status, t.wait_s,
                  t.has_wait};
  if (tp != m_prev_thread.end()) {
    dcpu = t.cpu_s - tp->second.cpu_s;
    if (t.has_wait && tp->second.has_wait) dwait = std::max(0.0, t.wait_s - tp->second.wait_s);
    if (t.has_status && tp->second.has_status && status_due) {
      // A counter read lower than before (a reused tid) adds nothing.
      const auto rise = [](std::uint64_t now, std::uint64_t before) {
        return now >= before ? now - before : std::uint64_t{0};
      };
      const std::uint64_t dnv = rise(t.nonvoluntary_switches, tp->second.nonvoluntary);
      const std::uint64_t dv = rise(t.voluntary_switches, tp->second.voluntary);
      m_nonvoluntary += dnv;
      m_voluntary += dv;
      if (acc) {
        acc->nonvoluntary += dnv;
        acc->voluntary += dv;
      }
    }
    if (!t.has_status) {  // keep the last status read for the next delta
      next.nonvoluntary = tp->second.nonvoluntary;
      next.voluntary = tp->second.voluntary;
      next.has_status = tp->second.has_status;
    }
  }
  sums.next_thread[t.tid] = next;
  sums.record.has_wait = sums.record.has_wait || t.has_wait;
  sums.record.wait_s += dwait;
  const ThreadDelta delta{std::max(0.0, dcpu), dwait};
  if (acc == nullptr) return delta;
  RankTally& tally = sums.record.ranks[rank];
  GroupTally& g = tally.groups[static_cast<std::size_t>(group)];
  g.threads += 1;
  g.runnable += is_r ? 1 : 0;
  g.cpu_s += std::max(0.0, dcpu);
  g.wait_s += dwait;
  tally.runnable += is_r ? 1 : 0;
  tally.wait_s += dwait;
  sums.rank_threads[rank] += 1;
  sums.rank_runnable[rank] += is_r ? 1 : 0;
  // A rank's allowed PUs are those of its latest sample: the first sample may catch a rank
  // between mpirun's fork and its binding, still on mpirun's cpuset.
  if (t.has_status) {
    if (sums.allowed_fresh.insert(rank).second) acc->allowed.clear();
    acc->allowed.insert(t.cpus_allowed.begin(), t.cpus_allowed.end());
  }
  // Where it ran since the previous sample, weighed by the CPU time: a thread's first sample
  // says only where it ran last, which for a rank caught between mpirun's fork and its binding
  // is mpirun's PU.
  if (tp != m_prev_thread.end() && dcpu > 0 && t.processor >= 0) acc->ran_on[t.processor] += dcpu;
  return delta;
}

void TrialMonitor::count_pool(const OriginClass& cls, GroupId group, bool in_workers,
                              const ThreadDelta& delta) {
  PoolAcc& pool = m_pools[cls.pool];
  pool.group = group;
  pool.in_workers = pool.in_workers || in_workers;
  pool.threads_now += 1;
  pool.cpu_s += delta.cpu_s;
  pool.wait_s += delta.wait_s;
}

void TrialMonitor::count_processes(const TreeRead& read, SampleSums& sums) {
  const double dt = sums.record.dt;
  const std::map<pid_t, OriginClass> classes = classify_threads(read);
  const std::set<pid_t> runtime = runtime_by_count(read, classes);
  for (auto& [name, pool] : m_pools) pool.threads_now = 0;
  for (const auto& [pid, p] : read.procs) {
    const pid_t rank = owner_rank(read, pid);
    const auto prev = m_prev_proc.find(pid);
    if (prev != m_prev_proc.end() && prev->second.start_ticks == p.start_ticks && dt > 0) {
      const double d = std::max(0.0, p.cpu_s - prev->second.cpu_s);
      sums.total_cpu += d;
      if (rank != 0) {
        sums.rank_cpu[rank] += d;
        sums.rank_has_delta[rank] = true;
      }
    }
    sums.next_proc[pid] = ProcPrev{p.start_ticks, p.cpu_s};
    if (pid == m_root && !p.threads.empty() && p.threads.front().has_status)
      m_root_allowed = p.threads.front().cpus_allowed;
    for (const ThreadSample& t : p.threads) {
      // By name where the name says (a rank's own thread, a worker process's, a named pool or
      // runtime), else by origin, else the runtimes' by count, else the program's ("other").
      GroupId group = thread_group_of(t.comm, pid == rank && t.tid == pid, pid != rank);
      const auto cls = classes.find(t.tid);
      if (cls != classes.end() && group == GroupId::other) group = cls->second.group;
      if (cls == classes.end() && runtime.contains(t.tid)) group = GroupId::runtime;
      const ThreadDelta delta = count_thread(t, rank, read.status_due, group, sums);
      if (cls != classes.end()) count_pool(cls->second, group, pid != rank, delta);
    }
  }
  for (auto& [name, pool] : m_pools) pool.threads = std::max(pool.threads, pool.threads_now);
}

void TrialMonitor::account_ranks(const TreeRead& read, double now, SampleSums& sums) {
  const double dt = sums.record.dt;
  for (pid_t rank : read.rank_pids) {
    RankAcc& acc = m_ranks.at(rank);
    if (read.status_due) {
      if (acc.last_status_s >= 0) acc.status_wall_s += now - acc.last_status_s;
      acc.last_status_s = now;
    }
    acc.samples += 1;
    acc.runnable_sum += sums.rank_runnable[rank];
    acc.max_threads = std::max(acc.max_threads, sums.rank_threads[rank]);
    sums.record.ranks[rank].cpu_s = sums.rank_cpu[rank];
    if (sums.rank_has_delta[rank]) {
      acc.cpu_s += sums.rank_cpu[rank];
      acc.wall_s += dt;
      acc.peak_pct = std::max(acc.peak_pct, 100.0 * sums.rank_cpu[rank] / dt);
    }
  }
}

TrialMonitor::ProfileJob TrialMonitor::profile_job(const TreeRead& read,
                                                   const std::function<pid_t(pid_t)>& owner) {
  ProfileJob job;
  for (const auto& [pid, p] : read.procs) {
    const pid_t rank = owner(pid);
    if (rank == 0) continue;  // the launcher's own time is not the job's
    for (const ThreadSample& t : p.threads) {
      job.alive.insert(t.tid);
      job.threads.push_back({pid, t.tid, rank, {p.start_ticks, p.comm}});
    }
  }
  return job;
}

void TrialMonitor::run_profile_job(const ProfileJob& job) {
  for (const ProfileJob::Thread& t : job.threads)
    m_profile->add_thread(t.pid, t.tid, t.owner, &t.id);
  const double now = m_source.now_s();
  const std::set<pid_t>& alive = job.alive;
  auto counts = m_profile->drain();
  m_profile->retain(alive);
  std::lock_guard lock(m_mutex);
  m_profile_note = m_profile->note();
  if (counts.empty()) return;
  m_profile_buckets.push_back({now, std::move(counts)});
  // Bounded as the records are: neighbours merged, the later one's time kept.
  if (m_profile_buckets.size() > m_options.max_records && m_profile_buckets.size() >= 2) {
    std::vector<ProfileBucket> out;
    for (std::size_t i = 0; i < m_profile_buckets.size(); i += 2) {
      ProfileBucket merged = std::move(m_profile_buckets[i]);
      if (i + 1 < m_profile_buckets.size()) {
        merged.t = m_profile_buckets[i + 1].t;
        for (const auto& [pid, libs] : m_profile_buckets[i + 1].counts)
          for (const auto& [lib, n] : libs) merged.counts[pid][lib] += n;
      }
      out.push_back(std::move(merged));
    }
    m_profile_buckets = std::move(out);
  }
}

void TrialMonitor::sample_once(bool full) {
  const double cpu0 = thread_cpu_s();
  const double now = m_source.now_s();
  const TreeRead read = read_tree(now, full);
  number_new_ranks(read);
  if (m_profile) {
    ProfileJob job = profile_job(read, [&](pid_t pid) { return owner_rank(read, pid); });
    if (m_profile_thread.joinable()) {
      {
        std::lock_guard lock(m_profile_mutex);
        m_profile_pending = std::move(job);  // the latest wins: a thread is added once anyway
      }
      m_profile_wake.notify_one();
    } else {
      run_profile_job(job);
    }
  }

  std::lock_guard lock(m_mutex);
  SampleSums sums;
  sums.record.t = now;
  sums.record.dt = m_samples > 0 ? now - m_last_s : 0;
  const double dt = sums.record.dt;
  count_processes(read, sums);
  account_ranks(read, now, sums);
  const bool any = !read.procs.empty();
  if (dt > 0 && any) {
    m_total_cpu_s += sums.total_cpu;
    m_total_wall_s += dt;
    m_total_peak_pct = std::max(m_total_peak_pct, 100.0 * sums.total_cpu / dt);
  }
  if (read.status_due && any) {
    if (m_last_status_s >= 0) m_status_wall_s += now - m_last_status_s;
    m_last_status_s = now;
  }
  if (any) {
    if (m_samples == 0) m_first_s = now;
    m_samples += 1;
    m_last_s = now;
    m_runnable_sum += sums.runnable;
    m_peak_runnable = std::max(m_peak_runnable, sums.runnable);
    sums.record.runnable = sums.runnable;
    sums.record.cpu_s = sums.total_cpu;
    m_records.push_back(std::move(sums.record));
    thin_records(m_records, m_options.max_records);
  }
  m_prev_proc = std::move(sums.next_proc);
  m_prev_thread = std::move(sums.next_thread);
  m_last_sample_cpu_s = std::max(0.0, thread_cpu_s() - cpu0);
  m_sampler_cpu_s += m_last_sample_cpu_s;
}

namespace {

bool overlaps(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> c;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(c));
  return !c.empty();
}

// Each rank's useful maximum: `per_rank` when given, else its share of the PUs it may use.
void set_useful_cpu(std::vector<RankVerdict>& ranks, int pus_seen,
                    const std::optional<double>& per_rank) {
  for (RankVerdict& r : ranks) {
    if (per_rank) {
      r.useful_cpu_pct = 100.0 * *per_rank;
      continue;
    }
    const int pus =
        r.allowed_pus.empty() ? std::max(1, pus_seen) : static_cast<int>(r.allowed_pus.size());
    int sharing = 0;
    for (const RankVerdict& o : ranks)
      if (o.allowed_pus.empty() || r.allowed_pus.empty() || overlaps(o.allowed_pus, r.allowed_pus))
        ++sharing;
    r.useful_cpu_pct = 100.0 * pus / std::max(1, sharing);
  }
}

// Bound ranks that share PUs, and ranks allowed or run outside their predicted cpuset. A rank
// is bound when it may use less than `all`, its launcher's PUs (a container's cpuset is no
// binding).
std::vector<std::string> binding_issues(const std::vector<RankVerdict>& ranks,
                                        const std::vector<int>& all, const Prediction* predicted) {
  std::vector<std::string> issues;
  auto bound = [&](const RankVerdict& r) {
    return !r.allowed_pus.empty() &&
           static_cast<int>(r.allowed_pus.size()) < static_cast<int>(all.size());
  };
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    for (std::size_t j = i + 1; j < ranks.size(); ++j) {
      const RankVerdict& a = ranks[i];
      const RankVerdict& b = ranks[j];
      if (bound(a) && bound(b) && overlaps(a.allowed_pus, b.allowed_pus)) {
        std::vector<int> c;
        std::set_intersection(a.allowed_pus.begin(), a.allowed_pus.end(), b.allowed_pus.begin(),
                              b.allowed_pus.end(), std::back_inserter(c));
        issues.push_back("ranks " + std::to_string(a.rank) + " and " + std::to_string(b.rank) +
                         " are both bound to PUs " + format_cpu_list(c));
      }
    }
  }
  if (predicted == nullptr) return issues;
  for (const RankVerdict& r : ranks) {
    const RankPrediction* p = nullptr;
    for (const RankPrediction& pr : predicted->ranks)
      if (pr.rank == r.rank) p = &pr;
    if (p == nullptr || r.allowed_pus.empty()) continue;
    std::vector<int> outside;
    std::set_difference(r.allowed_pus.begin(), r.allowed_pus.end(), p->cpuset.begin(),
                        p->cpuset.end(), std::back_inserter(outside));
    if (!outside.empty())
      issues.push_back("rank " + std::to_string(r.rank) + " is allowed on PUs " +
                       format_cpu_list(r.allowed_pus) + ", predicted " +
                       format_cpu_list(p->cpuset));
    std::vector<int> ran_outside;
    std::set_difference(r.ran_on_pus.begin(), r.ran_on_pus.end(), p->cpuset.begin(),
                        p->cpuset.end(), std::back_inserter(ran_outside));
    if (!ran_outside.empty() && outside.empty())
      issues.push_back("rank " + std::to_string(r.rank) + " ran on PUs " +
                       format_cpu_list(ran_outside) + " outside its cpuset " +
                       format_cpu_list(p->cpuset));
  }
  return issues;
}

// What the runtimes' own threads did, when they matter: "; 3 runtime threads per rank (no
// knob's: MPI progress, communication helpers) queued the cpuset 0-1 to 0.9 per PU, 0.2 without
// them; ..." where they alone made the queue, or how many sat beside an oversubscription.
std::string runtime_note(const Verdict& v) {
  const SustainedLoad* by_runtime = nullptr;
  const SustainedLoad* most = nullptr;
  for (std::size_t i = v.sustained.loads.size() > 1 ? 1 : 0; i < v.sustained.loads.size(); ++i) {
    const SustainedLoad& l = v.sustained.loads[i];
    if (l.pu_count <= 0) continue;
    if (l.with_runtime_oversubscribed && !l.oversubscribed && by_runtime == nullptr)
      by_runtime = &l;
    if (most == nullptr || l.runtime_threads > most->runtime_threads) most = &l;
  }
  // The ranks a load's cpuset holds (all of them for the whole tree).
  auto members = [&](const SustainedLoad& l) {
    return std::max<int>(
        1,
        static_cast<int>(std::count_if(v.ranks.begin(), v.ranks.end(), [&](const RankVerdict& r) {
          return l.pus.empty() || std::includes(l.pus.begin(), l.pus.end(), r.allowed_pus.begin(),
                                                r.allowed_pus.end());
        })));
  };
  std::ostringstream d;
  if (by_runtime != nullptr) {
    const SustainedLoad& l = *by_runtime;
    const std::string where = l.pus.empty() ? "the PUs" : "cpuset " + format_cpu_list(l.pus);
    d << "; not oversubscribed by the settings: " << fixed1(l.runtime_threads / members(l))
      << " runtime threads per rank (no knob's: MPI progress, communication helpers) used "
      << fixed1(l.runtime_cpu_rate) << " CPUs and queued " << where << " to "
      << fixed1(l.waiting_threads / l.pu_count) << " per PU, "
      << fixed1(l.knob_waiting_threads / l.pu_count) << " without them; ";
    if (l.knob_demand >= 0.9 * l.pu_count)
      d << "to leave them a PU, run fewer ranks or threads on " << where
        << " than its PUs (the work then has fewer)";
    else
      d << "no setting of the study controls them";
    return d.str();
  }
  if (v.observed_oversubscribed && most != nullptr && most->runtime_threads > 0.5)
    d << "; besides " << fixed1(most->runtime_threads / members(*most))
      << " runtime threads per rank (no knob's), not counted";
  return d.str();
}

// The one-line diagnosis of a judged verdict: what was observed, the rank that shows it as `top`
// would, and how the prediction compares.
std::string diagnosis_of(const Verdict& v, const Prediction* predicted) {
  std::string worst_text;
  if (const SustainedLoad* w = v.sustained.worst(); w != nullptr && v.observed_oversubscribed) {
    const double x = w->median_runnable / w->pu_count;
    worst_text =
        fixed1(w->median_runnable) + " runnable threads on " +
        (w->pus.empty() ? std::to_string(w->pu_count) + (w->pu_count == 1 ? " PU (" : " PUs (")
                        : "cpuset " + format_cpu_list(w->pus) + " (" + std::to_string(w->pu_count) +
                              (w->pu_count == 1 ? " PU, " : " PUs, ")) +
        fixed1(x) + "x, " +
        (w->wait_measured ? pct(100 * w->measured_wait_share) + " waiting, " +
                                fixed1(w->waiting_threads) + " queued for a CPU on average" +
                                (w->by_main ? ", the ranks' own threads " +
                                                  pct(100 * w->main_wait_share) + " waiting)"
                                            : ")")
                          : pct(100 * w->waiting_share) + " waiting)");
  }
  // The pools by origin that worked or waited most, named whether or not a knob sizes them.
  std::string pools_text;
  int named = 0;
  for (const PoolVerdict& p : v.pools) {
    if (p.group == "runtime" || named == 2 || p.cpu_s + p.wait_s <= 0) continue;
    pools_text += (named++ == 0 ? "; busiest pools: " : ", ") + p.name + " " +
                  std::to_string(p.threads) + (p.threads == 1 ? " thread" : " threads") +
                  (p.in_workers ? " in the workers" : "") + " (" + fixed1(p.cpu_s) + " s CPU, " +
                  fixed1(p.wait_s) + " s waiting)";
  }

  // The rank furthest above its useful maximum names the symptom, as `top` would.
  const RankVerdict* hot = nullptr;
  for (const RankVerdict& r : v.ranks)
    if (hot == nullptr || r.mean_runnable > hot->mean_runnable) hot = &r;
  std::ostringstream d;
  d << (v.observed_oversubscribed ? "oversubscribed: " : "ok: ");
  if (v.observed_oversubscribed) {
    d << worst_text;
    if (hot != nullptr)
      d << "; rank " << hot->rank << ": " << pct(hot->mean_cpu_pct) << " CPU (peak "
        << pct(hot->peak_cpu_pct) << ", useful " << pct(hot->useful_cpu_pct) << ") on a "
        << (hot->allowed_pus.empty() ? v.pus : static_cast<int>(hot->allowed_pus.size()))
        << "-PU cpuset, " << hot->max_threads
        << (hot->max_threads == 1 ? " thread, " : " threads, ") << fixed1(hot->mean_runnable)
        << " runnable";
    d << "; " << queue_cost_text(v.queue_cost);
  } else {
    if (v.ranks.empty()) {
      // A command whose processes the samples never caught (it ended first: /bin/cat).
      d << "no rank was sampled";
    } else {
      d << v.ranks.size() << (v.ranks.size() == 1 ? " rank" : " ranks") << " at ";
      std::string sep;
      for (const RankVerdict& r : v.ranks) {
        d << sep << pct(r.mean_cpu_pct);
        sep = "/";
      }
      d << " CPU (useful " << pct(v.ranks.front().useful_cpu_pct) << " each)";
    }
    const double sustained =
        v.sustained.loads.empty() ? v.mean_runnable : v.sustained.loads.front().median_runnable;
    d << "; " << fixed1(sustained) << " runnable threads on " << v.pus
      << (v.pus == 1 ? " PU" : " PUs");
  }
  d << "; " << static_cast<long>(std::lround(v.nonvoluntary_per_s)) << " involuntary switches/s";
  for (const RankVerdict& r : v.ranks) {
    if (r.mean_cpu_pct > 1.2 * r.useful_cpu_pct && r.useful_cpu_pct > 0) {
      d << "; rank " << r.rank << " above its useful " << pct(r.useful_cpu_pct);
      break;
    }
  }
  if (!v.binding_issues.empty()) d << "; " << v.binding_issues.front();
  if (v.observed_oversubscribed) d << pools_text;
  d << runtime_note(v);
  if (predicted != nullptr) {
    if (predicted->oversubscribed == v.observed_oversubscribed) {
      if (v.observed_oversubscribed) {
        const std::string causes = prediction_causes(*predicted, hot != nullptr ? hot->rank : 0);
        d << "; predicted" << (causes.empty() ? "" : ": " + causes);
      } else {
        d << "; as predicted";
      }
      // Ok this time, but runs of these settings are oversubscribed at some odds.
      if (!v.observed_oversubscribed && predicted->at_risk)
        d << " (at risk: " << predicted->risk_percent() << "% of runs)";
    } else {
      if (predicted->oversubscribed)
        d << "; predicted oversubscribed, not observed";
      else if (predicted->at_risk)
        d << "; predicted at risk (" << predicted->risk_percent() << "% of runs), not likely";
      else
        d << "; not predicted";
    }
  }
  if (v.samples < 2) d << " (too few samples: " << v.samples << ")";
  return d.str();
}

}  // namespace

QueueCost queue_cost_of(const Verdict& v) {
  std::vector<std::vector<LibraryShare>> libraries;
  for (const RankVerdict& r : v.ranks) libraries.push_back(r.cpu_libraries);
  return queue_cost(libraries, v.nonvoluntary_per_s, v.pus, v.observed_oversubscribed);
}

std::string RankVerdict::cpu_time_text() const {
  if (cpu_libraries.empty()) return "";
  return "rank " + std::to_string(rank) + ": " + shares_text(cpu_libraries);
}

void TrialMonitor::profile_verdict(Verdict& v) const {
  if (!m_options.cpu_profile) return;
  v.cpu_profiled = true;
  v.cpu_time_hz = m_options.cpu_profile_hz;
  v.cpu_time_note = m_profile_note;
  // The samples drained inside the measured window: a drain covers (previous sample, its time],
  // counted as the window counts a record (probes/sustained.h).
  const double base = m_records.empty() ? 0 : m_records.front().t;
  const bool windowed = v.sustained.window_samples > 0;
  std::map<pid_t, std::map<std::string, long>> counts;
  for (const ProfileBucket& b : m_profile_buckets) {
    if (windowed && (b.t <= base + v.sustained.window_from_s + 1e-9 ||
                     b.t > base + v.sustained.window_to_s + 1e-9))
      continue;
    for (const auto& [pid, libs] : b.counts)
      for (const auto& [lib, n] : libs) counts[pid][lib] += n;
  }
  CpuTimeRead line;
  line.present = true;
  line.note = v.cpu_time_note;
  for (RankVerdict& r : v.ranks) {
    const auto it = counts.find(r.pid);
    if (it == counts.end()) continue;
    r.cpu_libraries = top_shares(it->second, m_options.cpu_profile_top);
    for (const LibraryShare& s : r.cpu_libraries) r.cpu_samples += s.samples;
    line.ranks.push_back({r.rank, r.cpu_samples, r.cpu_libraries});
  }
  v.cpu_time = line.line();
}

Verdict TrialMonitor::verdict(const Prediction* predicted) const {
  std::lock_guard lock(m_mutex);
  Verdict v;
  v.samples = m_samples;
  v.duration_s = m_last_s - m_first_s;
  v.sampler_cpu_s = m_sampler_cpu_s;
  if (v.duration_s > 0) v.sampler_cpu_pct = 100.0 * m_sampler_cpu_s / v.duration_s;
  if (m_total_wall_s > 0) {
    v.total_mean_cpu_pct = 100.0 * m_total_cpu_s / m_total_wall_s;
  }
  if (m_status_wall_s > 0) {
    v.nonvoluntary_per_s = static_cast<double>(m_nonvoluntary) / m_status_wall_s;
    v.voluntary_per_s = static_cast<double>(m_voluntary) / m_status_wall_s;
  }
  v.total_peak_cpu_pct = m_total_peak_pct;
  if (m_samples > 0) v.mean_runnable = m_runnable_sum / m_samples;
  v.peak_runnable = m_peak_runnable;

  // Ranks in rank order; those without a number follow in pid order.
  std::vector<const RankAcc*> accs;
  for (const auto& [pid, acc] : m_ranks) accs.push_back(&acc);
  std::stable_sort(accs.begin(), accs.end(), [](const RankAcc* a, const RankAcc* b) {
    if ((a->rank < 0) != (b->rank < 0)) return a->rank >= 0;
    return a->rank < b->rank;
  });
  std::set<int> union_pus;
  int next = 0;
  for (const RankAcc* a : accs) {
    RankVerdict r;
    r.rank = a->rank >= 0 ? a->rank : next;
    next = std::max(next, r.rank + 1);
    r.pid = a->pid;
    r.comm = a->comm;
    if (a->wall_s > 0) r.mean_cpu_pct = 100.0 * a->cpu_s / a->wall_s;
    if (a->status_wall_s > 0) {
      r.nonvoluntary_per_s = static_cast<double>(a->nonvoluntary) / a->status_wall_s;
      r.voluntary_per_s = static_cast<double>(a->voluntary) / a->status_wall_s;
    }
    r.peak_cpu_pct = a->peak_pct;
    r.max_threads = a->max_threads;
    if (a->samples > 0) r.mean_runnable = a->runnable_sum / a->samples;
    r.allowed_pus.assign(a->allowed.begin(), a->allowed.end());
    double ran_s = 0;
    for (const auto& [pu, cpu] : a->ran_on) ran_s += cpu;
    for (const auto& [pu, cpu] : a->ran_on)
      if (cpu >= 0.05 * ran_s) r.ran_on_pus.push_back(pu);
    union_pus.insert(a->allowed.begin(), a->allowed.end());
    v.ranks.push_back(std::move(r));
  }
  v.pus = union_pus.empty() ? m_machine_pus : static_cast<int>(union_pus.size());

  set_useful_cpu(v.ranks, v.pus, m_options.useful_cpu_per_rank);

  std::vector<int> machine;
  for (int i = 0; i < m_machine_pus; ++i) machine.push_back(i);
  v.binding_issues =
      binding_issues(v.ranks, m_root_allowed.empty() ? machine : m_root_allowed, predicted);

  // Observed oversubscription: the sustained runnable threads against PUs, for the whole trial
  // and for each group of ranks sharing a cpuset (probes/sustained.h).
  std::map<pid_t, std::vector<int>> rank_cpusets;
  for (const RankVerdict& r : v.ranks) rank_cpusets[r.pid] = r.allowed_pus;
  SustainedOptions so;
  so.skip_start = m_options.skip_start;
  so.skip_end = m_options.skip_end;
  so.ratio = m_options.oversubscribed_ratio;
  so.min_waiting_share = m_options.min_waiting_share;
  v.sustained = judge_sustained(m_records, rank_cpusets, v.pus, so);
  v.observed_oversubscribed = v.sustained.oversubscribed;
  profile_verdict(v);
  v.queue_cost = queue_cost_of(v);
  for (const auto& [name, pool] : m_pools)
    v.pools.push_back(PoolVerdict{name, k_group_names[static_cast<std::size_t>(pool.group)],
                                  pool.in_workers, pool.threads, pool.cpu_s, pool.wait_s});
  std::ranges::sort(v.pools, [](const PoolVerdict& a, const PoolVerdict& b) {
    return a.cpu_s + a.wait_s > b.cpu_s + b.wait_s;
  });
  if (predicted != nullptr) {
    v.predicted_oversubscribed = predicted->oversubscribed;
    v.prediction_summary = predicted->summary;
  }
  v.diagnosis = diagnosis_of(v, predicted);
  return v;
}

}  // namespace tune::probes
