// Slurm as the engine that runs each trial: the srun component of the launcher framework
// (tuner/launch/launch_kind.h: srun_launch, render_srun_launch; slurm_launch.cpp). `launch:
// {slurm: {...}}` in the study file makes a trial one job step, `srun --mpi=pmix --nodes ..
// --ntasks .. --cpus-per-task .. --cpu-bind .. COMMAND`, inside the allocation `tune` runs in
// (`salloc -N 4 tune --trials 50 study.yaml`, or a batch job), or, outside any allocation, a job
// of its own.
//
// One launch concept, one spelling per layer (as tuner/launch/rendered_launch.h for mpirun):
//
//   launch.slurm.     srun flag             probes (MpirunOptions)
//   nodes             --nodes               nodes (with ntasks: ranks per node = ceil)
//   ntasks            --ntasks              n
//   ntasks_per_node   --ntasks-per-node     npernode
//   cpus_per_task     --cpus-per-task       -  (map_by core:PE=N when bound)
//   cpu_bind          --cpu-bind            bind_to (cores -> core, threads -> hwthread, ...)
//   mpi               --mpi (pmix)          -
//   program           argv[0] (srun)        -
//   extra             as written            -
//   (study, trial)    --job-name            -
//
// srun passes the whole environment to the tasks (its default --export=ALL), so a trial's env
// reaches every rank on every node without a list of names.
//
// Stopping: the keeper's SIGTERM makes srun cancel its step ("forcing job termination"); if srun
// itself is then killed, the step could outlive it, so after a trial that was stopped or killed
// cancel_slurm_steps() looks the step up by its name (squeue) and cancels what is left (scancel):
// the component's end_trial(), which the runner calls after every trial.
//
// The section as written and as expanded (SlurmLaunchSpec, RenderedSrun) and its option table are
// plain values in tuner/study/launch_spec.h. Functions here are thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/predict.h"
#include "tuner/base/result.h"
#include "tuner/launch/launch_kind.h"
#include "tuner/launch/launcher.h"
#include "tuner/study/launch_spec.h"

namespace tune::tuner {

// srun and its options, up to the command.
std::vector<std::string> srun_prefix(const RenderedSrun& srun);
// The same placement in mpirun's terms, for the probes' prediction.
probes::MpirunOptions srun_probe_options(const RenderedSrun& srun);

// "tune-STUDY-N": what squeue shows for trial N's step, and how cancel_slurm_steps() finds it.
// Characters other than [A-Za-z0-9._-] become '_'.
std::string slurm_step_name(const std::string& study, int trial_number);

// Cancels the steps (inside the allocation in $SLURM_JOB_ID) or, outside one, this user's jobs
// named `step_name` that Slurm still lists, and waits (bounded: 40 s, Slurm's default KillWait
// and a margin) until it lists none; returns how many it cancelled. An error when squeue or
// scancel fail, or the step outlives the wait. Blocks the calling thread.
Result<int> cancel_slurm_steps(const std::string& step_name);

// After a launch.slurm trial ends: if its srun was stopped (timeout, pruning, interrupt) or
// killed, cancel_slurm_steps(step_name); a failure is also printed as a warning. Returns the
// trial's k_attr_slurm_step attribute: {"name", "cancelled", "cancel_error" when it failed}.
nlohmann::json end_slurm_step(const std::string& step_name, const LaunchResult& result);

}  // namespace tune::tuner
