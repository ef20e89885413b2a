// What a batch script asks of the scheduler: nodes and tasks, CPUs per task, a time limit and a
// job name; for one trial's script (export.h) and for the worker array (worker_array.h). Pure
// functions of their arguments; thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/launch/launch_kind.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// The batch time limit for a job whose runs took up to `longest_s` seconds: twice that, at least
// five minutes more, rounded up to whole minutes. The trial may have been shortened (fewer steps
// than a real run), which the script's comment says; the margin covers queue-to-queue noise only.
int walltime_from_measured(double longest_s);
// "HH:MM:SS" (hours past 99 kept), as both #SBATCH --time and #PBS -l walltime take it.
std::string format_walltime(int seconds);

// The time limit line's value and the comment that says where it came from; nullopt = no limit
// written (nothing measured, none given): the scheduler's default stands.
struct TimeLimit {
  int seconds = 0;
  std::string why;  // comment lines, each "# ...\n"
};

// Threads per rank, and the CPUs per task a batch script asks for them.
//
// Where the threads per rank come from, first that applies:
//  - step: with launch.slurm, the step's --cpus-per-task when it is a number (Slurm granted it).
//  - prediction: the trial's stored prediction (k_attr_probe_prediction): the busy threads of a
//    rank, each pool's share as the probes counted it for this trial from the knob catalog and
//    the study's `knobs:`, so a pool sized by the program's own flag (`--threads={t}`) counts; the
//    rank with the most, the main thread included and the runtimes' own threads (no knob's) not.
//  - variable names: the trial has no prediction (probes off): the largest plain positive number
//    among the trial's variables whose name holds "THREADS" (OMP_NUM_THREADS, MKL_NUM_THREADS,
//    OPENBLAS_NUM_THREADS, OPENCV_FOR_THREADS_NUM, ...). The largest, not the sum: a rank's
//    pools take turns (OpenMP regions, then BLAS calls), as the prediction assumes too.
// nullopt: none of them applies, and the scheduler's default (one CPU per task) stands.
//
// The CPUs asked never exceed the node the trial ran on (k_attr_machine): ranks per node x CPUs
// per task <= its PUs. A winner that oversubscribed its node on purpose (2 ranks x 2 OpenMP
// threads on 2 cores) is asked floor(PUs / ranks per node) CPUs, at least 1: what it had, and
// what a scheduler of that very machine can grant (more stays pending forever).
struct ThreadsPerRank {
  enum class Basis { step, prediction, variable_names };
  Basis basis = Basis::variable_names;
  int threads = 0;         // the threads per rank the trial ran (busy at once)
  int cpus = 0;            // what the script asks per task: `threads`, capped to the tuned node
  std::string source;      // "OMP_NUM_THREADS=4", "main 1, openmp 1 (OMP_NUM_THREADS=2)"
  std::optional<int> omp;  // OMP_NUM_THREADS, when the trial set it to a plain number
  std::string fit;  // comment lines: how the threads relate to the tuned node's cores; "" = none
};

// The machine the trial ran on (k_attr_machine), when the runner recorded it.
struct TunedMachine {
  std::string host;
  int packages = 0, numa_nodes = 0, cores = 0, pus = 0;
};

// The limit: `walltime_s` when the user gave one (--walltime), else from the longest of the
// trial's wall time and its re-runs' (`rerun_wall_times`); `override_how` names the scheduler's
// own option for the comment ("sbatch --time").
std::optional<TimeLimit> time_limit(const search::FrozenTrial& trial,
                                    std::optional<double> walltime_s,
                                    const std::vector<double>& rerun_wall_times,
                                    const std::string& override_how);

std::optional<TunedMachine> tuned_machine(const search::FrozenTrial& trial);
// "vm: 1 package, 1 NUMA node, 2 cores, 2 PUs".
std::string machine_text(const TunedMachine& m);

// Threads per rank by the rules above (`env_set`: the trial's variables; `kind`: its launch),
// with the CPUs asked capped to the tuned node (`shape`: the job's ranks per node) and the
// header's lines on how they relate to its cores. `asked` spells the request for those lines
// from the CPUs per rank ("--cpus-per-task=1", "ncpus=2"). An error names a stored prediction
// that is not as the probes write it.
Result<std::optional<ThreadsPerRank>> threads_per_rank(
    const std::map<std::string, std::string>& env_set, const LaunchKind& kind,
    const search::FrozenTrial& trial, const JobShape& shape,
    const std::function<std::string(int cpus_per_rank)>& asked);
// The header's lines on the CPUs per task: how many (`what`: "CPUs per task: 1"), from where, how
// they fit the tuned node.
std::string cpus_note(const ThreadsPerRank& t, const std::string& what);

// The scheduler's job name for a study: "tune-NAME", plain characters, at most `limit` of them
// (Slurm takes 64 here, PBS 15).
std::string job_name(const std::string& study, std::size_t limit);

// What one worker's allocation needs for its trials: whole nodes, and enough tasks (and CPUs per
// task) for the largest step or mpirun a trial starts, where the study fixes those numbers.
struct WorkerShape {
  int nodes = 1;
  std::optional<int> tasks;
  std::optional<int> cpus_per_task;
};

WorkerShape worker_shape(const LaunchSpec& launch);

}  // namespace tune::tuner
