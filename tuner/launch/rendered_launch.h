// Launch rendering: a study's templates plus one trial's values -> the structured launch to run
// (RenderedLaunch), from which both the argv the runner launches and the plan the probes predict
// from are derived, so the two cannot disagree. `tune export` writes the same argv into scripts,
// so the exported command is byte for byte what the trial ran.
//
// Placeholders ({param}, {trial_dir}, {tune_trainer}, ...) are expanded in every argv element
// and env value; a null value drops the element or unsets the variable (the library keeps its
// own default). The launch kind (direct, mpirun or srun: tuner/launch/launch_kind.h) is picked
// here, once, and builds its prefix (mpirun: -n, --bind-to, --map-by, --hostfile, --mca, -x for
// every variable set). Argv vectors only, never a shell string. Stateless functions; thread-safe.
//
// One launch concept, one spelling per layer. The study file's key is also the name of its
// StudySpec::launch and RenderedMpirun fields (except `program`: mpirun_program in StudySpec):
//
//   launch.mpirun.  mpirun flag      probes::MpirunOptions  probes::LaunchPlan
//   n               -n               n                      n (total ranks)
//   npernode        --npernode       npernode               ranks_per_node (also ppr:N:node)
//   host            --host           host                   hosts, layout (probes/nodes.h)
//   hosts: [a, b]   --host a:N,b:N   host                   hosts, layout (N: npernode)
//   bind_to         --bind-to        bind_to                bind_to (on each node)
//   map_by          --map-by         map_by                 map_by
//   hostfile        --hostfile       hostfile (read)        hosts, layout; path made absolute
//   oversubscribe   --oversubscribe  -                      -
//   mca             --mca K V        -                      -
//   extra           as written       read as mpirun reads them (a --bind-to there wins)
//   program         argv[0]          -                      uses_mpirun
//   (command)       after the rest   -                      program_argv
//   (env)           -x NAME          env (-x NAME=value)    env
//
// launch.slurm (srun) has its own table, k_srun_value_options. Both tables and the value types
// they join (LaunchSpec, RenderedMpirun, ...) are in tuner/study/launch_spec.h; the mpirun
// spellings read back from `extra` or a user's line are probes/mpirun_flags.h.
//
// With no launch.mpirun section, nodes = ranks_per_node = n = 1 unless the command itself is an
// mpirun line the user wrote; only then are the probes' settings parsed back from an argv
// (probes::launch_plan_from_argv). `tune export`'s batch directives come from the kind's
// job_shape (mpirun: nodes and ranks per node of the same plan's layout; without hosts, n and
// npernode).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probes/predict.h"
#include "search/distribution.h"
#include "tuner/launch/launch_kind.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/slurm_launch.h"
#include "tuner/storage/storage.h"
#include "tuner/study/launch_spec.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// Where the bundled trainer is: next to the tune executable, else tune-trainer in PATH.
std::string bundled_trainer_path();

// The values a trial's templates may use: its parameters (external form) plus the built-ins
// {trial_dir}, {trial_number}, {study}, {study_dir}, {output_dir}, {tune_trainer}, {nproc}.
TemplateValues trial_template_values(const StudySpec& spec,
                                     const std::map<std::string, search::ParamValue>& params,
                                     const std::string& trial_dir, int trial_number,
                                     const std::string& trainer);

// One trial's launch, structured: what the runner launches (argv()) and what the probes predict
// from (probe_plan()) are both derived from it. Copies share the kind (immutable).
struct RenderedLaunch {
  LaunchKindPtr kind = direct_launch();        // direct, mpirun or srun; never null
  std::vector<std::string> command;            // the program and its arguments, expanded
  std::map<std::string, std::string> env_set;  // env values that are not null
  std::vector<std::string> env_unset;          // env entries whose value is null

  // The kind's prefix (none for direct), then the command.
  std::vector<std::string> argv() const;
  // argv, env_set and env_unset; the rest of the request is the runner's.
  LaunchRequest request() const;
  // The probes' plan, each rank starting with `env` (normally environment()). Built from the
  // settings with launch.mpirun or launch.slurm; without, the command is the user's own and is
  // read as one (probes::launch_plan_from_argv: an mpirun line or one rank).
  probes::LaunchPlan probe_plan(const std::map<std::string, std::string>& env) const;
  // What a batch script asks for to run it (tune export).
  JobShape job_shape() const;
  // The environment the trial starts with: tune's own with env_set and env_unset applied
  // (trial_environment, tuner/launch/launcher.h).
  std::map<std::string, std::string> environment() const;
};

// One trial's launch, expanded from the study's templates exactly as the runner launches it.
Result<RenderedLaunch> render_launch(const StudySpec& spec, const TemplateValues& values,
                                     bool allow_run_as_root);

// render_launch(...).request(): only argv, env_set and env_unset are filled. `export` (tune
// export) uses the same expansion.
Result<LaunchRequest> expand_launch(const StudySpec& spec, const TemplateValues& values,
                                    bool allow_run_as_root);

}  // namespace tune::tuner
