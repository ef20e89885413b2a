// Launch rendering: a study's templates plus one trial's values -> the argv and environment to
// run. The runner launches exactly this, and `tune export` writes exactly this into scripts, so
// the exported command is byte for byte what the trial ran.
//
// Placeholders ({param}, {trial_dir}, {tune_trainer}, ...) are expanded in every argv element
// and env value; a null value drops the element or unsets the variable (the library keeps its
// own default). With launch.mpirun the mpirun prefix is built here as well (-n, --bind-to,
// --map-by, --hostfile, --mca, -x for every variable set). Argv vectors only, never a shell
// string. Stateless functions; thread-safe.
#pragma once

#include <map>
#include <string>

#include "search/distribution.h"
#include "tuner/launcher.h"
#include "tuner/storage.h"
#include "tuner/study_spec.h"

namespace tune::tuner {

// Where the bundled trainer is: next to the tune executable, else tune-trainer in PATH.
std::string bundled_trainer_path();

// The values a trial's templates may use: its parameters (external form) plus the built-ins
// {trial_dir}, {trial_number}, {study}, {study_dir}, {output_dir}, {tune_trainer}, {nproc}.
TemplateValues trial_template_values(const StudySpec& spec,
                                     const std::map<std::string, search::ParamValue>& params,
                                     const std::string& trial_dir, int trial_number,
                                     const std::string& trainer);

// One trial's argv (the mpirun prefix when launch.mpirun, then the command) and environment
// (env_set / env_unset), expanded from the study's templates exactly as the runner launches it.
// Only argv, env_set and env_unset are filled. `export` (tune export) uses the same expansion.
Result<LaunchRequest> expand_launch(const StudySpec& spec, const TemplateValues& values,
                                    bool allow_run_as_root);

}  // namespace tune::tuner
