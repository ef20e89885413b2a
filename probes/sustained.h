// What a trial's load was while it did its real work, from the monitor's per-sample records:
// the measured window, the sustained runnable threads per cpuset (the observed verdict), and each
// thread group's duty cycle (what later predictions learn from, probes/predict.h).
//
// Why a window and a median: a trial's start-up (MPI wiring, imports, data decoding, every pool
// spinning up at once) and its end (final evaluation, teardown) are short bursts of runnable
// threads that say nothing about the settings being tuned, and a mean over a 3 s trial lets one
// such burst decide the verdict. The window drops the first `skip_start` and the last `skip_end`
// of the sampled time, and starts no earlier than the first sample in which the ranks run all the
// threads they will run (a script's imports hold one thread per rank for seconds; its pools,
// communication threads and loader workers start with the training), unless that leaves less
// than a quarter of the sampled time. Within it a cpuset is oversubscribed when the median of its
// runnable threads exceeds `ratio` x its PUs and more than half of the window's samples do (a
// median that falls between two samples on the limit is a tie, not a verdict), and the slowdown
// that claims is there: the runnable threads were not all running (the share of runnable
// thread-time that got no CPU, estimated as 1 - CPU rate / mean runnable, is at least
// `min_waiting_share`). Runnable counts sampled at the wrong moments with idle CPUs fail that
// test. That is the estimate. Where the source reads each thread's run-queue delay
// (/proc/.../schedstat, nearly every kernel) the cost itself is measured instead, and it decides:
// a cpuset is oversubscribed when the ranks' own threads (the one every allreduce waits for) lost
// `main_wait_share` or more of their runnable time waiting for a CPU (the knobs' threads together
// where the ranks' own were seldom runnable), and the ranks' threads asked for more than `ratio` x
// its PUs (CPU time plus that queue: a queue made by another job on the same CPUs is not the
// settings'). A count of threads, sampled or queued, misleads both ways: a DataLoader worker
// beside its rank on one core, or TBB's workers yielding between OpenCV calls, queue a thread or
// more per PU in the fastest settings while the rank's own thread hardly waits (at most 0.12 of
// its runnable time, measured against each setting's own figure, docs/probes.md), and a team per rank
// that oversubscribes only inside short parallel regions leaves the sampled median at the PUs
// while the rank's thread waits at every barrier (0.26 and more in every slowed setting).
//
// Thread groups. A thread is attributed by its name (the kernel's comm, 15 characters), which a
// program may set (pthread_setname_np): "tt-iter*" iterator workers, "tt-omp*" the OpenMP pool,
// "tt-blas*" the BLAS pool, "tt-cv*" the OpenCV pool, "tt-comm*" a communication thread. The
// bundled trainer names its own threads and, before MPI starts, the libraries' pools (libgomp,
// OpenBLAS and TBB do not name theirs; a thread inherits its creator's name, so the trainer
// renames the threads OpenBLAS started at load and starts the OpenMP and OpenCV pools under a
// borrowed name: trainer/thread_names.h). A rank's own thread (tid == pid) is "main" whatever its
// name; every thread of a process a rank started is "dataloader_workers" (torch's DataLoader
// workers, Python multiprocessing pools: the catalog's process pool). Where the probes preloaded
// libtune_threads.so, a thread no name places is grouped by the library that started it
// (probes/thread_origin.h: libgomp's "openmp", OpenBLAS's "blas", TBB's and OpenCV's "opencv",
// gloo's, Open MPI's, PMIx's "runtime"); everything else is "other".
// Names, not creation order: order changes with the library versions and with what is lazy.
//
// Runtime threads. A runtime's own threads (Open MPI's PMIx and libevent progress threads, gloo's
// and NCCL's helpers, CUDA's event handler) are no knob's: the study cannot turn them down, so a
// setting is not oversubscribed because of them alone. They are "runtime" where their name says
// so (few runtimes name theirs: on Debian 12 Open MPI's, gloo's and OpenBLAS's threads all carry
// the program's name), else by which pool they are not: the monitor is told how many unnamed
// threads per rank the program's pools start (MonitorOptions::program_threads, from the
// prediction), and a rank's unnamed threads beyond that many, those with the least CPU time so
// far, are "runtime". Each cpuset is judged twice: with every thread (the kernel's queue as
// measured) and with the knobs' threads alone (the runtime threads' CPU time handed back to the
// queue they made wait; an optimistic bound); only the second decides, and a cpuset
// oversubscribed by the first alone is reported as such (`runtime_only`).
//
// Duty cycles, per group over the window: `cpu`, CPU seconds per thread-second alive, and
// `runnable`, the fraction of sampled thread-instants in state R (running or waiting for a CPU).
// The prediction uses `runnable`: it is the demand that oversubscribes, and a CPU share measured
// under oversubscription understates it (6 spinning threads on 2 PUs get 1/3 each).
//
// Pure functions of their arguments: thread-safe.
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
