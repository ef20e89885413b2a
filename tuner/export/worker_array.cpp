#include "tuner/export/worker_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "tuner/base/text.h"
#include "tuner/export/job_request.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

std::string array_job_name(const std::string& study) {
  return plain_name("tune-" + study + "-workers", 64);
}

}  // namespace

Result<std::string> render_worker_array(const StudySpec& spec, const WorkerArrayOptions& options) {
  if (options.workers < 1)
    return std::unexpected("--format slurm-array needs --workers K (K >= 1)");
  for (const auto* path : {&options.tune_program, &options.study_file, &options.workdir}) {
    if (!path->starts_with('/'))
      return std::unexpected(fmt::format("slurm-array: '{}' is not an absolute path", *path));
  }
  const WorkerShape shape = worker_shape(spec.launch);
  std::string s = "#!/usr/bin/env bash\n";
  s += "#SBATCH --job-name=" + array_job_name(spec.name) + "\n";
  s += fmt::format("#SBATCH --array=0-{}\n", options.workers - 1);
  s += fmt::format("#SBATCH --nodes={}\n", shape.nodes);
  // Whole nodes: another job's (or another worker's) processes would skew the trials' timings.
  s += "#SBATCH --exclusive\n";
  if (shape.tasks) s += fmt::format("#SBATCH --ntasks={}\n", *shape.tasks);
  if (shape.cpus_per_task) s += fmt::format("#SBATCH --cpus-per-task={}\n", *shape.cpus_per_task);
  s += "#SBATCH --output=" + array_job_name(spec.name) + "-%A_%a.out\n";
  s += fmt::format(
      "# Exported by `tune export --format slurm-array`: {} workers of study '{}', "
      "{} trials each.\n",
      options.workers, one_line(spec.name), options.trials_per_worker);
  s += "# Study file: " + one_line(options.study_file) + "\n";
  s += "# Database: " + one_line(redact_storage_url(options.storage)) + "\n";
  if (is_postgres_url(options.storage)) {
    s += "# The database's password is not in this script: each worker's libpq reads it from\n"
         "# PGPASSWORD (sbatch passes on the environment it is run in) or ~/.pgpass on the node.\n";
  }
  if (!is_postgres_url(options.storage)) {
    s += "# WARNING: this database is a file. SQLite's write-ahead log works on one host only, so\n"
         "# workers on different nodes must not use it at the same time: use a postgresql://\n"
         "# storage (or add --dependency / %1 to --array to run them one at a time).\n";
  }
  s += "# Submit: sbatch THIS_FILE. Each array task is one tune worker on its own node(s); trial\n"
       "# numbers stay unique across workers. Re-submitting continues the study.\n\n";
  s += "set -euo pipefail\n";
  s += "# The folder tune export ran in: the study's relative paths mean the same here.\n";
  s += "cd -- " + bash_quote(options.workdir) + "\n";
  s += fmt::format("exec {} --trials {} --storage {} {}\n", bash_quote(options.tune_program),
                   options.trials_per_worker,
                   bash_quote(storage_url_without_password(options.storage)),
                   bash_quote(options.study_file));
  return s;
}

}  // namespace tune::tuner
