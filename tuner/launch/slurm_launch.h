// Slurm as the engine that runs each trial: the srun component of the launcher framework
// (launch_kind.h); each trial is one job step in `tune`'s allocation, or a job of its own.
// cancel_slurm_steps() cancels a stopped trial's leftover step. Functions are thread-safe.
// Design: docs/design-notes.md#tunerlaunchslurm_launchh
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
