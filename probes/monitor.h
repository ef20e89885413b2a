// Measurement during a trial: samples the trial's process tree at a fixed interval and sums it
// up as a Verdict (CPU per rank, runnable threads per cpuset, binding, oversubscription).
// start() samples on a background thread; verdict() and to_json() are safe from any thread.
// Design: docs/design-notes.md#probesmonitorh
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <expected>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/cpu_profile.h"
#include "probes/predict.h"
#include "probes/queue_cost.h"
#include "probes/sustained.h"
#include "probes/system_source.h"
#include "probes/thread_origin.h"

namespace tune::probes {

// 2: observed_oversubscribed is the sustained verdict (was: mean runnable over the whole run);
// "sustained" and "duty_cycles" added.
// 3: "cpu_time" ({"hz", "samples", "note", "line"}: the CPU time per library, over the measured
// window) and each rank's "cpu_libraries" ([{"library", "share", "samples"}], the top ones and
// "other") and "cpu_samples" added, where MonitorOptions::cpu_profile is on; read by
// read_cpu_time (probes/cpu_profile.h).
inline constexpr int k_verdict_schema_version = 3;

struct MonitorOptions {
  double interval_s = 0.2;  // sampling period of start()'s thread
  // For the first early_s seconds the period is at most early_interval_s: a trial of one second
  // still gets a measured window of a dozen samples (about 0.4 ms of CPU each).
  double early_s = 3.0;
  double early_interval_s = 0.05;
  // The most CPU one rank can use well, in cores (1.0 = 100%). Unset: the rank's fair share of
  // the PUs it is allowed on (its cpuset's PUs divided among the ranks that share them).
  std::optional<double> useful_cpu_per_rank;
  // Runnable threads per PU above this mean oversubscription (1.2 tolerates the odd helper
  // thread waking up).
  double oversubscribed_ratio = 1.2;
  // The measured window and the slowdown check (probes/sustained.h; its ratio is the one above).
  double skip_start = 0.2;
  double skip_end = 0.1;
  double min_waiting_share = 0.1;
  // Per-sample records kept; beyond it neighbours are merged (a long trial stays bounded).
  std::size_t max_records = 4096;
  // Threads' status files (involuntary switches, Cpus_allowed_list) are read at most this often,
  // and always for processes seen for the first time and on the last sample; 0 = every sample.
  double status_interval_s = 1.0;
  // start()'s thread waits at least this many times the CPU time of its last sample, so the
  // sampler stays under 1/200 = 0.5% of a core even on trees of hundreds of threads.
  double min_idle_factor = 200;
  // How many threads per rank the program's pools start that carry no name the monitor knows
  // (an opaque program's BLAS or intra-op pool, as the prediction counts them). A rank's unnamed
  // threads beyond that many, those with the least CPU time so far, are the runtimes' own
  // ("runtime", probes/sustained.h). nullopt (default): only names tell; every unnamed thread is
  // the program's ("other"). The probe hooks set it where the study declares what the program
  // starts (`program:`) or the program is the bundled trainer, whose pools are all named.
  std::optional<int> program_threads;
  // The folder where libtune_threads.so records which library started each thread
  // (probes/thread_origin.h); empty: none. A thread with an origin is grouped by it (its name
  // first, where the name says), and is never one of the runtimes' "by count" above.
  std::string thread_origins_dir;
  // Sample the ranks' threads' instruction pointers (perf_event_open, user space, at
  // cpu_profile_hz) for the CPU time per library (probes/cpu_profile.h). Default on; where perf
  // events are not permitted the verdict says so in one line and the rest goes on.
  bool cpu_profile = true;
  double cpu_profile_hz = 99;
  std::size_t cpu_profile_max_events = 1024;  // open events (fds) at most per trial
  std::size_t cpu_profile_top = 4;            // libraries named per rank; the rest "other"
};

// A pool of threads as its origin names it, over the whole run: "TBB (OpenCV)" with its group,
// the most threads seen at once per process, and its CPU time and run-queue delay.
struct PoolVerdict {
  std::string name;
  std::string group;
  bool in_workers = false;  // its threads are in processes the ranks started (DataLoader workers)
  int threads = 0;          // most seen in one sample, over all the ranks' processes
  double cpu_s = 0;
  double wait_s = 0;
};

struct RankVerdict {
  int rank = 0;
  pid_t pid = 0;
  std::string comm;
  double mean_cpu_pct = 0;  // CPU time / wall time while sampled, 100 = one PU
  double peak_cpu_pct = 0;  // the highest interval
  double useful_cpu_pct = 0;
  int max_threads = 0;
  double mean_runnable = 0;  // threads in state R, mean over samples
  double nonvoluntary_per_s = 0;
  // Voluntary switches (a thread that blocked: a barrier, a lock, I/O), per second: kept for the
  // next sign of what a queue costs (a team sleeping at its barriers), not judged on yet.
  double voluntary_per_s = 0;
  std::vector<int> allowed_pus;  // Cpus_allowed_list of its threads (union)
  // PUs its threads ran on for at least 5% of its CPU time between samples (a rank caught
  // before its binding, still on mpirun's PU for a few milliseconds, is not said to run there)
  std::vector<int> ran_on_pus;
  // Where its CPU time went over the measured window, by library (MonitorOptions::cpu_profile):
  // the top ones, largest first, then "other"; empty when not sampled.
  std::vector<LibraryShare> cpu_libraries;
  long cpu_samples = 0;
  // "rank 0: 71% libopenblas, 12% libgomp, 9% python3.11, 5% libmpi"; "" when not sampled.
  std::string cpu_time_text() const;
};

struct Verdict {
  int samples = 0;
  double duration_s = 0;  // first to last sample
  int pus = 0;            // PUs the trial's ranks may use (union of their cpusets)
  std::vector<RankVerdict> ranks;
  double total_mean_cpu_pct = 0;  // the whole tree, mpirun included
  double total_peak_cpu_pct = 0;
  double mean_runnable = 0;  // whole tree
  int peak_runnable = 0;
  double nonvoluntary_per_s = 0;
  double voluntary_per_s = 0;  // the same, all the tree's threads (RankVerdict's note)
  std::vector<std::string> binding_issues;
  bool observed_oversubscribed = false;  // sustained.oversubscribed
  SustainedVerdict sustained;            // window, loads per cpuset, duty cycles per group
  // Whether the queueing cost CPU time (spin-waiting runtimes, preemption beyond time slicing),
  // judged where observed_oversubscribed (probes/queue_cost.h); recomputed by verdict_from_json.
  QueueCost queue_cost;
  std::optional<bool> predicted_oversubscribed;  // when a prediction was given
  std::string prediction_summary;
  std::vector<PoolVerdict> pools;  // by origin, where libtune_threads.so recorded them
  double sampler_cpu_s = 0;        // CPU time spent in sample_once()
  double sampler_cpu_pct = 0;      // of one core, over the sampled wall time
  std::string diagnosis;           // one line
  // Where the time went, beside the diagnosis: "CPU time per library: rank 0: 71% libopenblas,
  // ...; rank 1: ..." or "CPU time per library: not sampled (why)"; "" when the option is off.
  bool cpu_profiled = false;
  double cpu_time_hz = 0;
  std::string cpu_time_note;  // not sampled and why, the bound on events hit, samples lost
  std::string cpu_time;

  nlohmann::json to_json() const;
};

// The reader beside Verdict::to_json (probes/verdict_json.cpp): a stored verdict back as the
// monitor made it, its sustained verdict and duty cycles included. A field an older schema lacks
// keeps its default; one there but not as written is an error naming its key (JsonReadError,
// probes/predict.h). Keys others add to the stored object (a trial's node watchers) are ignored.
std::expected<Verdict, JsonReadError> verdict_from_json(const nlohmann::json& j);

// The verdict's queue cost from its own fields: the ranks' CPU time per library, its involuntary
// switches, its PUs and observed_oversubscribed.
QueueCost queue_cost_of(const Verdict& v);

// Whether a process of this name (the kernel's comm) is an MPI launcher or launcher daemon.
bool is_launcher_comm(const std::string& comm);

class TrialMonitor {
 public:
  TrialMonitor(SystemSource& source, pid_t root, MonitorOptions options = {});
  ~TrialMonitor();
  TrialMonitor(const TrialMonitor&) = delete;
  TrialMonitor& operator=(const TrialMonitor&) = delete;

  void start();  // samples at once, then every options.interval_s
  void stop();   // takes a last sample and joins; idempotent
  // One sample. `full` forces the threads' status files to be read.
  void sample_once(bool full = false);

  Verdict verdict(const Prediction* predicted = nullptr) const;
  nlohmann::json to_json(const Prediction* predicted = nullptr) const {
    return verdict(predicted).to_json();
  }

 private:
  struct ProcPrev {
    std::uint64_t start_ticks = 0;
    double cpu_s = 0;
  };
  struct ThreadPrev {
    double cpu_s = 0;
    std::uint64_t nonvoluntary = 0;
    std::uint64_t voluntary = 0;
    bool has_status = false;
    double wait_s = 0;
    bool has_wait = false;
  };
  struct RankAcc {
    int rank = -1;
    pid_t pid = 0;
    std::string comm;
    double cpu_s = 0;  // summed deltas
    double wall_s = 0;
    double peak_pct = 0;
    double runnable_sum = 0;
    int samples = 0;
    int max_threads = 0;
    std::uint64_t nonvoluntary = 0;
    std::uint64_t voluntary = 0;
    double status_wall_s = 0;  // time between status reads that both saw this rank
    double last_status_s = -1;
    std::set<int> allowed;
    std::map<int, double> ran_on;  // PU -> CPU seconds seen there (between two samples)
    int number_reads = 0;          // environ reads for the rank number so far
  };
  // How many samples may look for a rank's number (a plain command has none).
  static constexpr int k_number_reads = 10;

  // One sample's reading of the tree: its processes and which of them are ranks.
  struct TreeRead {
    std::map<pid_t, ProcessSample> procs;
    std::set<pid_t> rank_pids;
    bool status_due = false;  // the threads' status files were read this time
  };
  // What one sample adds up before the accumulators take it.
  struct SampleSums {
    SampleRecord record;
    std::map<pid_t, double> rank_cpu;
    std::map<pid_t, bool> rank_has_delta;
    std::map<pid_t, int> rank_threads, rank_runnable;
    std::set<pid_t> allowed_fresh;  // ranks whose allowed PUs this sample has started over
    double total_cpu = 0;
    int runnable = 0;
    std::map<pid_t, ProcPrev> next_proc;
    std::map<pid_t, ThreadPrev> next_thread;
  };
  // The steps of sample_once(): the first two outside the lock (they read /proc), the rest under
  // m_mutex.
  TreeRead read_tree(double now, bool full);
  void number_new_ranks(const TreeRead& read);
  pid_t owner_rank(const TreeRead& read, pid_t pid) const;  // 0 when no rank owns it
  void count_processes(const TreeRead& read, SampleSums& sums);
  // A thread's CPU time and run-queue delay since the previous sample.
  struct ThreadDelta {
    double cpu_s = 0;
    double wait_s = 0;
  };
  ThreadDelta count_thread(const ThreadSample& t, pid_t rank, bool status_due, GroupId group,
                           SampleSums& sums);
  // A thread with a recorded origin, added to its pool's figures.
  void count_pool(const OriginClass& cls, GroupId group, bool in_workers, const ThreadDelta& delta);
  // Each thread of the ranks' processes whose origin is recorded: its class.
  std::map<pid_t, OriginClass> classify_threads(const TreeRead& read);
  // The threads of each rank's own process that are the runtimes' by which pool they are not
  // (MonitorOptions::program_threads): only those without a recorded origin.
  std::set<pid_t> runtime_by_count(const TreeRead& read,
                                   const std::map<pid_t, OriginClass>& classes) const;
  void account_ranks(const TreeRead& read, double now, SampleSums& sums);
  // The ranks' threads added to the CPU profile and its samples drained (outside the lock); the
  // counts are kept by the time of the sample, for the window chosen at the end.
  // The ranks' threads as one sample saw them, for the CPU profile.
  struct ProfileJob {
    struct Thread {
      pid_t pid = 0, tid = 0, owner = 0;
      CpuProfile::ProcessId id;
    };
    std::vector<Thread> threads;
    std::set<pid_t> alive;
  };
  static ProfileJob profile_job(const TreeRead& read, const std::function<pid_t(pid_t)>& owner);
  void run_profile_job(const ProfileJob& job);
  void profile_verdict(Verdict& v) const;

  SystemSource& m_source;
  pid_t m_root;
  MonitorOptions m_options;

  mutable std::mutex m_mutex;
  std::map<pid_t, ProcPrev> m_prev_proc;
  std::map<pid_t, ThreadPrev> m_prev_thread;
  std::map<pid_t, RankAcc> m_ranks;  // by pid
  int m_next_rank = 0;
  int m_samples = 0;
  double m_first_s = 0;
  double m_last_s = 0;
  double m_total_cpu_s = 0;
  double m_total_wall_s = 0;
  double m_total_peak_pct = 0;
  double m_runnable_sum = 0;
  int m_peak_runnable = 0;
  std::uint64_t m_nonvoluntary = 0;
  std::uint64_t m_voluntary = 0;
  double m_status_wall_s = 0;
  double m_last_status_s = -1;
  double m_sampler_cpu_s = 0;
  double m_last_sample_cpu_s = 0;
  int m_machine_pus = 0;
  std::vector<SampleRecord> m_records;
  ThreadOrigins m_origins;
  struct PoolAcc {
    GroupId group = GroupId::other;
    bool in_workers = false;
    int threads = 0;      // most in one sample
    int threads_now = 0;  // in this sample
    double cpu_s = 0;
    double wait_s = 0;
  };
  std::map<std::string, PoolAcc> m_pools;  // by name
  std::vector<int> m_root_allowed;  // what the launcher may use: a rank allowed less is bound

  // The CPU profile (MonitorOptions::cpu_profile): used by its own thread while the monitor runs
  // (reading a process's /proc/PID/maps waits while the process maps files, as an importing
  // Python does: on the sampling thread it stretched 200 ms ticks to 600 ms), else by the caller
  // of sample_once; closed by stop(). Its drained counts (by rank pid, then library) and its
  // note, under m_mutex.
  std::unique_ptr<CpuProfile> m_profile;
  std::thread m_profile_thread;
  std::mutex m_profile_mutex;
  std::condition_variable m_profile_wake;
  std::optional<ProfileJob> m_profile_pending;  // the latest sample's threads, not yet profiled
  bool m_profile_stopping = false;
  struct ProfileBucket {
    double t = 0;
    std::map<pid_t, std::map<std::string, long>> counts;
  };
  std::vector<ProfileBucket> m_profile_buckets;
  std::string m_profile_note;

  std::thread m_thread;
  std::mutex m_wake_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
};

}  // namespace tune::probes
