// `tune export --format slurm-array --workers K`: a Slurm job array whose K tasks each run one
// `tune` worker on the same study, on whole nodes, sharing the study through its storage.
// Pure function of its arguments; thread-safe.
// Design: docs/design-notes.md#tunerexportworker_arrayh
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
