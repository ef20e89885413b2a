// The launcher framework: one LaunchKind interface with one component per launch kind (direct,
// mpirun, srun) that owns everything that differs between them. Components are immutable and
// shared; every const member is thread-safe; end_trial() may block.
// Design: docs/design-notes.md#tunerlaunchlaunch_kindh
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/predict.h"
#include "tuner/base/result.h"
#include "tuner/launch/launcher.h"
#include "tuner/study/launch_spec.h"
#include "tuner/study/study_file.h"
#include "tuner/study/templates.h"

namespace tune::tuner {

// The nodes and ranks per node a batch script asks for (`tune export`'s #SBATCH / #PBS lines, a
// worker array's allocation). Each kind reads it from its own settings (LaunchKind::job_shape).
struct JobShape {
  int nodes = 1;
  std::optional<int> tasks_per_node;  // none: let the scheduler's default stand
  int total_tasks = 1;
};

// The counting rule behind every shape: `nodes` when given, else enough for `tasks` at
// `tasks_per_node`, else 1; tasks per node given, or the tasks spread over the nodes; total
// tasks given, or one row of tasks per node. nullopt = not known (not given, or not a plain
// number).
JobShape job_shape_of(std::optional<int> nodes, std::optional<int> tasks,
                      std::optional<int> tasks_per_node);

// Open MPI's remote shell: plm_rsh_agent (the first of "ssh : rsh") and plm_rsh_args, the last
// of each in `mca` (a command line's --mca, in order), else OMPI_MCA_* in `env`; "ssh" and no
// arguments by default (tuner/launch/mpirun_launch.cpp).
std::vector<std::string> open_mpi_remote_shell(
    const std::vector<std::pair<std::string, std::string>>& mca,
    const std::map<std::string, std::string>& env);

// LaunchKind::batch_launch_note: a sentence, and a command line to quote after it.
struct BatchLaunchNote {
  std::string why;
  std::string equivalent;
};

class LaunchKind {
 public:
  virtual ~LaunchKind() = default;

  // "direct", "mpirun" or "srun": for messages and tests, never for branching.
  virtual std::string_view name() const = 0;
  // The launcher program as the study wrote it (argv[0] of the prefix); nullopt for direct.
  virtual std::optional<std::string> program() const = 0;
  // The argv before the command. `env_set`: the trial's variables (mpirun exports each by name
  // with -x, so ranks on other hosts get them).
  virtual std::vector<std::string> prefix(
      const std::map<std::string, std::string>& env_set) const = 0;
  // The probes' plan of `command` started this way, each rank with `env` (the trial's
  // environment, trial_environment in tuner/launch/launcher.h).
  virtual probes::LaunchPlan probe_plan(const std::vector<std::string>& command,
                                        const std::map<std::string, std::string>& env) const = 0;
  // The job a batch script asks for to run `command` this way. A count that is no plain number
  // ("$(nproc)") is left to the scheduler.
  virtual JobShape job_shape(const std::vector<std::string>& command) const = 0;

  // CPUs per task as the launcher itself gives them (srun's --cpus-per-task, as written);
  // nullopt: not given, or the kind has no such setting.
  virtual std::optional<std::string> cpus_per_task() const { return std::nullopt; }
  // Whether the launcher places the tasks on CPUs itself (srun: a step's tasks get
  // --cpus-per-task each, one unless set), so the trial's thread variables do not size them.
  virtual bool places_tasks() const { return false; }
  // Whether the ranks are descendants of the launched process (the local monitor can read
  // them); srun's are slurmstepd's children, outside the tree.
  virtual bool ranks_in_tree() const { return true; }
  // Whether a variable added to the trial's env_set reaches the ranks on other hosts (mpirun
  // exports every one with -x): the node watchers' tag is forwarded only then.
  virtual bool forwards_env_to_hosts() const { return false; }
  // The remote shell the launcher reaches other hosts with, which the probes' node samplers reuse:
  // Open MPI's (open_mpi_remote_shell), from OMPI_MCA_* in `env` (the trial's environment) for a
  // command that starts its own mpirun, and from --mca in the launch too for the mpirun kind.
  virtual std::vector<std::string> remote_shell(
      const std::map<std::string, std::string>& env) const {
    return open_mpi_remote_shell({}, env);
  }
  // The lines an exported job script needs before this launcher can start (bash; commented);
  // mpirun: Open MPI's run-as-root consent, when the script runs as root. Empty for others.
  virtual std::string script_setup() const { return ""; }

  // After a trial that started: stops what it may have left running outside the process tree
  // the keeper swept, and returns the attributes that record it ({} when there is nothing to
  // record). srun: {k_attr_slurm_step: end_slurm_step(...)}. May block.
  virtual nlohmann::json end_trial(const LaunchResult& result) const {
    (void)result;
    return nlohmann::json::object();
  }

  // What an exported job script says of this launcher, in its own words (export writes them as
  // comments): the flags kept from the study's machine that a cluster may not want, one sentence
  // each (mpirun: --oversubscribe, an MCA parameter naming that machine's network); empty for
  // none.
  virtual std::vector<std::string> kept_flag_notes() const { return {}; }
  // A Slurm batch script: why it starts the job with this launcher rather than srun, and the srun
  // line that would match, for a job of `shape` with `cpus_per_task` CPUs a task (nullopt: the
  // scheduler's default); {} when the script says nothing (srun itself, or no launcher).
  virtual BatchLaunchNote batch_launch_note(const JobShape& shape,
                                            std::optional<int> cpus_per_task) const {
    (void)shape;
    (void)cpus_per_task;
    return {};
  }
};

using LaunchKindPtr = std::shared_ptr<const LaunchKind>;

// The components (one file each, above), from settings already expanded.
LaunchKindPtr direct_launch();
LaunchKindPtr mpirun_launch(RenderedMpirun settings);
LaunchKindPtr srun_launch(RenderedSrun settings);

// A component from the study's launch.mpirun / launch.slurm templates expanded with one trial's
// values (render_launch picks the kind). Errors name the study file and key.
Result<LaunchKindPtr> render_mpirun_launch(const StudySpec& spec, const TemplateValues& values,
                                           bool allow_run_as_root);
Result<LaunchKindPtr> render_srun_launch(const StudySpec& spec, const TemplateValues& values);

}  // namespace tune::tuner
