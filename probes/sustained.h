// What a trial's load was while it did its real work: the measured window, the sustained
// runnable threads per cpuset (the observed verdict) and each thread group's duty cycle.
// Pure functions of their arguments: thread-safe.
// Design: docs/design-notes.md#probessustainedh
#pragma once

#include <sys/types.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune::probes {

enum class GroupId {
  main,
  iterator_workers,
  openmp,
  blas,
  opencv,
  comm,
  dataloader_workers,
  other,
  runtime
};
inline constexpr std::size_t k_group_count = 9;
inline constexpr std::array<const char*, k_group_count> k_group_names = {
    "main", "iterator_workers",   "openmp", "blas",   "opencv",
    "comm", "dataloader_workers", "other",  "runtime"};

// The group of a thread named `comm`; `rank_main` when it is a rank's own thread (tid == pid);
// `child_process` when it belongs to a process the rank started (a DataLoader or
// multiprocessing worker: the catalog's process pool, whatever the process calls itself).
// A runtime's own thread where the runtime names it ("NCCL Progress", "cuda-EvtHandlr",
// "pt_autograd_0", a PMIx or Open MPI progress thread that carries its name) is "runtime".
GroupId thread_group_of(const std::string& comm, bool rank_main, bool child_process = false);

// One group of one rank in one sample.
struct GroupTally {
  int threads = 0;
  int runnable = 0;
  double cpu_s = 0;   // CPU time since the previous sample
  double wait_s = 0;  // run-queue delay since the previous sample (schedstat)
};

struct RankTally {
  int runnable = 0;
  double cpu_s = 0;
  double wait_s = 0;  // run-queue delay of its threads since the previous sample
  std::array<GroupTally, k_group_count> groups{};
};

// One sample of the trial's tree.
struct SampleRecord {
  double t = 0;                      // source clock
  double dt = 0;                     // since the previous sample (0 for the first)
  int runnable = 0;                  // whole tree, launcher included
  double cpu_s = 0;                  // whole tree, since the previous sample
  double wait_s = 0;                 // whole tree's run-queue delay, since the previous sample
  bool has_wait = false;             // the source gave run-queue delays (schedstat)
  std::map<pid_t, RankTally> ranks;  // by the rank's pid
};

// Keeps long trials' records bounded: when over `limit`, neighbours are merged (time and CPU
// summed, the later one's counts kept), halving the count.
void thin_records(std::vector<SampleRecord>& records, std::size_t limit);

struct SustainedOptions {
  double skip_start = 0.2;  // fraction of the sampled time left out at each end
  double skip_end = 0.1;
  double ratio = 1.2;  // runnable threads per PU above this are oversubscribed
  double min_waiting_share = 0.1;
  // The measure that decides where run-queue delays are measured: the share of the ranks' own
  // threads' runnable time spent waiting for a CPU (delay / (delay + CPU time)). Measured on this
  // project's 2-PU machine against each setting's own figure (a PyTorch DDP job whose DataLoader
  // workers augment with OpenCV, docs/probes.md): the settings within 10% of the best by hand
  // stayed at or under 0.12 (one unbound run the kernel placed badly aside), the slowed ones at
  // 0.26 and more, but for one setting at 0.23-0.27 (2 cores, 36 trials against 3 interleaved
  // runs of each setting by hand, 2026-11-27).
  double main_wait_share = 0.25;
  // Below this share of the window runnable, the ranks' own threads say too little (a rank that
  // waits on its workers or its pool): the wait share of every thread of the knobs decides.
  double main_busy_floor = 0.2;
};

// The sustained load of one cpuset (or of the whole tree on every PU the ranks may use).
struct SustainedLoad {
  std::vector<int> pus;  // empty: the whole tree
  int pu_count = 0;
  double median_runnable = 0;
  double mean_runnable = 0;
  double over_fraction = 0;  // of the window's samples over ratio x PUs
  double cpu_rate = 0;       // CPUs' worth used over the window
  double waiting_share = 0;  // 1 - cpu_rate / mean_runnable, >= 0
  // Measured from run-queue delays where the source has them (every sample of the window):
  bool wait_measured = false;
  double waiting_threads = 0;      // mean threads waiting for a CPU: delay / wall
  double measured_wait_share = 0;  // delay / (delay + CPU time): runnable time that got no CPU
  // The ranks' own threads (group "main"): the share of their runnable time that got no CPU, and
  // how busy they were (runnable time per rank-second). The knobs' threads' share where the
  // ranks' threads were too seldom runnable to say (`by_main` false).
  double main_wait_share = 0;
  double main_busy = 0;
  double knob_wait_share = 0;
  bool by_main = false;
  // The runtimes' own threads (group "runtime"): mean per sample, and their CPUs' worth.
  double runtime_threads = 0;
  double runtime_cpu_rate = 0;
  // The knobs' threads alone (the runtime threads' CPU time handed back): what decides.
  double knob_waiting_threads = 0;
  double knob_demand = 0;                    // CPUs' worth they asked for: CPU rate plus queue
  bool with_runtime_oversubscribed = false;  // judged with every thread, as the kernel queued
  bool oversubscribed = false;               // judged on the knobs' threads
};

struct DutyCycle {
  double threads = 0;   // mean threads per rank
  double cpu = 0;       // 0..1
  double runnable = 0;  // 0..1
};

struct SustainedVerdict {
  int window_samples = 0;
  double window_from_s = 0;  // from the first sample
  double window_to_s = 0;
  // The whole tree first (it decides only when no rank's cpuset is known), then each cpuset.
  std::vector<SustainedLoad> loads;
  const SustainedLoad* worst() const;  // oversubscribed first, then the highest per PU
  bool oversubscribed = false;
  // A cpuset oversubscribed with the runtimes' threads and not without them.
  bool runtime_only = false;
  std::map<std::string, DutyCycle> duty;  // groups seen in the window
  // Every rank's own thread (tid == pid, the critical path every allreduce waits for) against
  // the knobs' other threads (its pools, workers: helpers that may queue while it runs), over the
  // window and all ranks, where run-queue delays were measured: the share of their runnable time
  // that got no CPU (delay / (delay + CPU time)), and how busy the ranks' own were (runnable time
  // per rank-second). What the queueing cost is judged by (tuner/judge/verdict_cost.h).
  bool main_measured = false;
  double main_wait_share = 0;
  double main_busy = 0;
  double helper_wait_share = 0;

  // {"window_s", "samples", "loads": [...], "runtime_only", "main_wait_share", "main_busy",
  // "helper_wait_share"} (the last three null where delays were not measured)
  nlohmann::json to_json() const;
};

// `rank_cpusets`: each rank's pid and allowed PUs; `pus`: the PUs the ranks may use together.
SustainedVerdict judge_sustained(const std::vector<SampleRecord>& records,
                                 const std::map<pid_t, std::vector<int>>& rank_cpusets, int pus,
                                 const SustainedOptions& options);

// {"iterator_workers": {"threads": 2, "cpu": 0.31, "runnable": 0.42}, ...}
nlohmann::json duty_cycles_json(const std::map<std::string, DutyCycle>& duty);

}  // namespace tune::probes
