// The study file's `launch:` section as plain values, as written (LaunchSpec) and as expanded
// for one trial (RenderedMpirun, RenderedSrun), and the key-by-key tables that the study parser
// and the launch kinds both walk. Plain values; thread-safe.
// Design: docs/design-notes.md#tunerstudylaunch_spech
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tune::tuner {

// launch.slurm of the study file; every field a template, "" = not given.
struct SlurmLaunchSpec {
  std::string program = "srun";
  std::string nodes;
  std::string ntasks;
  std::string ntasks_per_node;
  std::string cpus_per_task;
  std::string cpu_bind;
  std::string mpi = "pmix";  // Debian's Open MPI needs pmix under srun (pmi2 and none fail)
  std::vector<std::string> extra;
};

// launch: of the study file; every string a template, "" = not given.
struct LaunchSpec {
  bool mpirun = false;  // false: run `command` directly
  std::string mpirun_program = "mpirun";
  std::string n;         // template; total ranks (-n)
  std::string npernode;  // template; ranks per node (--npernode)
  std::string bind_to;   // template; --bind-to
  std::string map_by;    // template; --map-by
  std::string hostfile;  // template; --hostfile
  std::string host;      // template; --host
  std::vector<std::string>
      hosts;                   // templates; --host a:N,b:N (N: npernode, unless an entry has :N)
  bool oversubscribe = false;  // --oversubscribe
  std::vector<std::pair<std::string, std::string>> mca;  // --mca KEY VALUE (templates)
  std::vector<std::string> extra;                        // further mpirun arguments (templates)
  std::optional<SlurmLaunchSpec>
      slurm;  // launch.slurm: each trial a job step (srun); not with mpirun
};

// The mpirun part of a rendered launch (launch.mpirun): every option expanded, nullopt where it
// is left out (no template, or a template whose value is null).
struct RenderedMpirun {
  std::string program = "mpirun";
  bool allow_run_as_root = false;  // --allow-run-as-root (tune runs as root)
  std::optional<std::string> n;
  std::optional<std::string> npernode;
  std::optional<std::string> bind_to;
  std::optional<std::string> map_by;
  std::optional<std::string> hostfile;
  std::optional<std::string> host;
  bool oversubscribe = false;
  std::vector<std::pair<std::string, std::string>> mca;  // --mca KEY VALUE
  std::vector<std::string> extra;                        // as the user wrote them, expanded
};

// launch.slurm expanded for one trial: nullopt where left out (no template, or a null value).
struct RenderedSrun {
  std::string program = "srun";
  std::string step_name;  // --job-name: slurm_step_name(study, trial)
  std::optional<std::string> nodes;
  std::optional<std::string> ntasks;
  std::optional<std::string> ntasks_per_node;
  std::optional<std::string> cpus_per_task;
  std::optional<std::string> cpu_bind;
  std::optional<std::string> mpi;
  std::vector<std::string> extra;
};

// The launch.mpirun options that take one templated value, in the order mpirun gets them: the
// study-file key, the mpirun flag, and the field that holds it in StudySpec::launch and in
// RenderedMpirun. The study parser, render_mpirun_launch and the mpirun kind's prefix all walk
// this one list, so an option added here is read, expanded and passed on alike.
struct MpirunValueOption {
  const char* key;
  const char* flag;
  std::string LaunchSpec::*spec;
  std::optional<std::string> RenderedMpirun::*rendered;
};
inline constexpr MpirunValueOption k_mpirun_value_options[] = {
    {"n", "-n", &LaunchSpec::n, &RenderedMpirun::n},
    {"npernode", "--npernode", &LaunchSpec::npernode, &RenderedMpirun::npernode},
    {"bind_to", "--bind-to", &LaunchSpec::bind_to, &RenderedMpirun::bind_to},
    {"map_by", "--map-by", &LaunchSpec::map_by, &RenderedMpirun::map_by},
    {"hostfile", "--hostfile", &LaunchSpec::hostfile, &RenderedMpirun::hostfile},
    {"host", "--host", &LaunchSpec::host, &RenderedMpirun::host},
};

// srun's value options: the study file's key, srun's flag (written --flag=value), and the field in
// each layer. One table for parsing (study_file.cpp), rendering and the argv
// (tuner/launch/slurm_launch.cpp).
struct SrunValueOption {
  const char* key;
  const char* flag;
  std::string SlurmLaunchSpec::*spec;
  std::optional<std::string> RenderedSrun::*rendered;
};
inline constexpr SrunValueOption k_srun_value_options[] = {
    {"mpi", "--mpi", &SlurmLaunchSpec::mpi, &RenderedSrun::mpi},
    {"nodes", "--nodes", &SlurmLaunchSpec::nodes, &RenderedSrun::nodes},
    {"ntasks", "--ntasks", &SlurmLaunchSpec::ntasks, &RenderedSrun::ntasks},
    {"ntasks_per_node", "--ntasks-per-node", &SlurmLaunchSpec::ntasks_per_node,
     &RenderedSrun::ntasks_per_node},
    {"cpus_per_task", "--cpus-per-task", &SlurmLaunchSpec::cpus_per_task,
     &RenderedSrun::cpus_per_task},
    {"cpu_bind", "--cpu-bind", &SlurmLaunchSpec::cpu_bind, &RenderedSrun::cpu_bind},
};

}  // namespace tune::tuner
