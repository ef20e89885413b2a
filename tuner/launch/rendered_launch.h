// Launch rendering: a study's templates plus one trial's values -> RenderedLaunch, from which
// both the argv the runner launches and the probes' plan derive, so the two cannot disagree.
// Argv vectors only, never a shell string. Stateless functions; thread-safe.
// Design: docs/design-notes.md#tunerlaunchrendered_launchh
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
