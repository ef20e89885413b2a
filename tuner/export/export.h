// Job-script export (`tune export`): a trial's environment and launch command, rendered as the
// runner launches it, written as a bash, Slurm or PBS script, an environment file or an mpirun
// line, every value quoted for the shell. Pure functions of their arguments; thread-safe.
// Design: docs/design-notes.md#tunerexportexporth
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/trial.h"
#include "tuner/base/result.h"
#include "tuner/export/job_request.h"  // walltime_from_measured, format_walltime: with these
#include "tuner/launch/launch_kind.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// slurm_array is a job array of tune workers for the whole study (tuner/export/worker_array.h), not
// a trial's script: render_export() refuses it.
enum class ExportFormat { bash, slurm, pbs, env, mpirun, slurm_array };

// The format names parse_export_format() takes: "bash", "slurm", "pbs", "env", "mpirun",
// "slurm-array".
const std::vector<std::string>& export_format_names();
Result<ExportFormat> parse_export_format(const std::string& text);

struct ExportOptions {
  std::string trainer;                     // {tune_trainer}; empty = bundled_trainer_path()
  std::string default_out = "./tune-run";  // $TUNE_OUT when the user sets none
  std::string measured;                    // header text: "elapsed_time = 1.23 (median of 5 runs)"
  // Header sentences after its first line, each a comment paragraph: why this trial was written
  // and how it compares with the baseline (ExportChoice::notes, tuner/export/export_choice.h).
  std::vector<std::string> notes;
  std::string storage;  // header text: the database it came from (shown with its password masked)
  // --format mpirun: --allow-run-as-root in the line, as the trials had it (tune export sets it
  // when run as root; the scripts set Open MPI's variables for that themselves).
  bool allow_run_as_root = false;
  // Slurm --time / PBS walltime: the limit the user gave (--walltime), in seconds; none = from
  // the trial's measured wall time (walltime_from_measured), none at all when nothing was
  // measured.
  std::optional<double> walltime_s;
  // The wall times (seconds) of the trial's re-runs (tune confirm, incumbent_repeats), which are
  // trials of their own: the caller, who has the study, collects them. Empty: the trial's own.
  std::vector<double> rerun_wall_times;
};

// The script (or line, or file) for `trial` of `spec`. Errors name the template that failed.
Result<std::string> render_export(const StudySpec& spec, const search::FrozenTrial& trial,
                                  ExportFormat format, const ExportOptions& options = {});

// The nodes and ranks per node a batch script asks for: the trial's launch kind's job shape
// (JobShape, tuner/launch/launch_kind.h), expanded with the trial's values.
Result<JobShape> job_shape(const StudySpec& spec, const search::FrozenTrial& trial);

}  // namespace tune::tuner
