// Job-script export (`tune export`): the winning trial's environment and full launch command line,
// rendered through the study's templates exactly as the runner launches a trial (expand_launch in
// tuner/launch/rendered_launch.h), written in the conventions of a bash script, a Slurm or PBS
// batch script, a KEY=VALUE environment file, or a bare mpirun command line.
//
// Every value that reaches the shell goes through bash_quote() (tuner/base/text.h); the two
// placeholders that must stay live in the shell are written as shell expansions: {trial_dir}
// becomes the job's output folder "$TUNE_OUT" (default ./tune-run) and {nproc} becomes "$(nproc)"
// of the machine the script runs on. Slurm and PBS scripts also ask for a time limit (from the
// measured wall time), CPUs per task (the busy threads per rank of the trial's stored prediction,
// k_attr_probe_prediction, or without one the largest *THREADS* variable, never more than the PUs
// of the node the trial ran on allow for its ranks per node), keep the study's mpirun with a
// comment on why and on the flags meant for the development machine, and name the machine the trial
// was tuned on (k_attr_machine), warning when they run on another. A stored prediction that cannot
// be read is an error naming it. Pure functions of their arguments; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/trial.h"
#include "tuner/base/result.h"
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

// The batch time limit for a job whose runs took up to `longest_s` seconds: twice that, at least
// five minutes more, rounded up to whole minutes. The trial may have been shortened (fewer steps
// than a real run), which the script's comment says; the margin covers queue-to-queue noise only.
int walltime_from_measured(double longest_s);
// "HH:MM:SS" (hours past 99 kept), as both #SBATCH --time and #PBS -l walltime take it.
std::string format_walltime(int seconds);

// The script (or line, or file) for `trial` of `spec`. Errors name the template that failed.
Result<std::string> render_export(const StudySpec& spec, const search::FrozenTrial& trial,
                                  ExportFormat format, const ExportOptions& options = {});

// The nodes and ranks per node a batch script asks for: the trial's launch kind's job shape
// (JobShape, tuner/launch/launch_kind.h), expanded with the trial's values.
Result<JobShape> job_shape(const StudySpec& spec, const search::FrozenTrial& trial);

}  // namespace tune::tuner
