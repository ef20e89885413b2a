// Whether threads that queued for a CPU cost the job something, by what their CPU time shows:
// a spin-waiting runtime holding the CPU the work needs, or threads preempted more often than
// time slicing alone preempts them. Queueing without either is what helpers pipelining behind
// their rank look like (DataLoader workers, Elk's OpenMP team on a bound core), which the job's
// own figure does not feel. Pure functions of their arguments: thread-safe.
// Design: docs/design-notes.md#probesqueue_costh
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "probes/cpu_profile.h"

namespace tune::probes {

struct QueueCostOptions {
  // A spin-waiting runtime's share of the ranks' CPU samples at or above which its waits cost
  // CPU time. Judgment: idle OpenMP and TBB pools spin for a while before they sleep, so a few
  // percent is their normal start-up; at 5% a rank gives up a twentieth of its CPU to waiting.
  double spin_share = 0.05;
  // Involuntary switches per second per PU at or above which threads are preempted more often
  // than time slicing alone preempts them. The scheduler's slice for CPU-bound threads sharing a
  // CPU is 0.75-3 ms (EEVDF's base slice scaled by the CPUs, CFS's granularity), so plain time
  // slicing switches 300-1,300 times per CPU-second; threads that yield in a loop (OpenBLAS's
  // idle workers) or hand work back and forth switch far more. Chosen after the second recording
  // of the grids was seen (in-sample there: docs/probes.md).
  double switches_per_pu_s = 1000;
};

// The runtimes whose idle threads spin before they sleep: libgomp, libomp, libiomp5, libtbb.
bool is_spin_runtime(std::string_view library);

struct QueueCost {
  bool judged = false;         // the threads queued (the verdict was oversubscribed)
  bool costly = false;         // judged, and spin or preemption says the queue cost CPU time
  bool spin_measured = false;  // some rank's CPU time per library was sampled
  double spin_share = 0;       // the ranks' mean share of their samples in spin runtimes
  std::string spin_library;    // the largest of them ("" when none was seen)
  double switches_per_pu_s = 0;
  bool spin = false;        // spin_share at or above the option
  bool preemption = false;  // switches_per_pu_s at or above the option
};

// `rank_libraries`: each profiled rank's CPU share per library (RankVerdict::cpu_libraries; an
// empty list: the rank was not sampled); `nonvoluntary_per_s`: the trial's involuntary switches
// per second; `pus`: the PUs its ranks may use; `queued`: the verdict's oversubscribed.
QueueCost queue_cost(const std::vector<std::vector<LibraryShare>>& rank_libraries,
                     double nonvoluntary_per_s, int pus, bool queued,
                     const QueueCostOptions& options = {});

// "it costs CPU time: the ranks spent 69% of their CPU time spin-waiting in libgomp";
// "it costs CPU time: 8100 involuntary switches per PU-second, more than time slicing alone
// makes (1000)"; "no sign it costs the job: no spin-waiting runtime held 5% of the ranks' CPU
// time and 115 involuntary switches per PU-second is time slicing (helpers queued behind their
// rank, as pipelining does)"; without a CPU profile the spin part says it was not sampled.
// "" when not judged.
std::string queue_cost_text(const QueueCost& cost, const QueueCostOptions& options = {});

}  // namespace tune::probes
