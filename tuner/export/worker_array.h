// `tune export --format slurm-array --workers K`: a Slurm job array whose K tasks each run one
// `tune` worker on the same study, so a study spreads over K nodes of a cluster. Each task asks
// for whole nodes (--exclusive, as many as one trial spans): trials sharing a node would disturb
// each other's timings. The workers share the study through its storage, which must then be
// reachable from every node at once (postgresql://; SQLite's write-ahead log works on one host
// only, so with SQLite the script says so and the workers should run one at a time).
//
// Each trial inside a task runs as the study says: launch.slurm makes it a job step of the task's
// allocation, launch.mpirun an mpirun that Open MPI fits into the same allocation.
//
// Every path and value written goes through bash_quote (tuner/base/text.h). Pure function of
// its arguments; thread-safe.
#pragma once

#include <string>

#include "tuner/base/result.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

struct WorkerArrayOptions {
  int workers = 0;             // array tasks, one tune worker each
  int trials_per_worker = 10;  // `tune --trials` of each worker
  std::string tune_program;    // absolute path of tune (a shared prefix on every node)
  std::string study_file;      // absolute path of the study file
  // The study's storage URL; the workers get it without its password (--storage), the
  // header shows it masked.
  std::string storage;
  std::string workdir;  // absolute; the workers run there (relative paths in the study)
};

// The sbatch script. Errors: no workers, or a path that is not absolute.
Result<std::string> render_worker_array(const StudySpec& spec, const WorkerArrayOptions& options);

}  // namespace tune::tuner
