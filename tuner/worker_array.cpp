#include "tuner/worker_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "tuner/export.h"
#include "tuner/text.h"

namespace tune::tuner {
namespace {

// A launch setting that is a plain positive number in the study file; nullopt for one that
// depends on a trial's parameters (known only when that trial runs) or is not given.
std::optional<int> literal_count(const std::string& text) {
  int v = 0;
  const auto* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || v <= 0) return std::nullopt;
  return v;
}

// What one worker's allocation needs for its trials: whole nodes, and enough tasks (and CPUs per
// task) for the largest step or mpirun a trial starts, where the study fixes those numbers.
struct WorkerShape {
  int nodes = 1;
  std::optional<int> tasks;
  std::optional<int> cpus_per_task;
};

WorkerShape worker_shape(const LaunchSpec& launch) {
  WorkerShape shape;
  if (launch.slurm) {
    const auto& s = *launch.slurm;
    shape.nodes = literal_count(s.nodes).value_or(1);
    shape.tasks = literal_count(s.ntasks);
    if (const auto per_node = literal_count(s.ntasks_per_node); per_node && !shape.tasks)
      shape.tasks = *per_node * shape.nodes;
    shape.cpus_per_task = literal_count(s.cpus_per_task);
  } else if (launch.mpirun) {
    shape.tasks = literal_count(launch.n);
    if (const auto per_node = literal_count(launch.npernode); per_node && shape.tasks)
      shape.nodes = (*shape.tasks + *per_node - 1) / *per_node;
  }
  return shape;
}

std::string array_job_name(const std::string& study) {
  return plain_name("tune-" + study + "-workers", 64);
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

}  // namespace

bool storage_is_shared(const std::string& url) {
  return url.starts_with("postgresql://") || url.starts_with("postgres://") ||
         url.starts_with("postgresql+psycopg2://");
}

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
  s += "# Database: " + one_line(options.storage) + "\n";
  if (!storage_is_shared(options.storage)) {
    s += "# WARNING: this database is a file. SQLite's write-ahead log works on one host only, so\n"
         "# workers on different nodes must not use it at the same time: use a postgresql://\n"
         "# storage (or add --dependency / %1 to --array to run them one at a time).\n";
  }
  s += "# Submit: sbatch THIS_FILE. Each array task is one tune worker on its own node(s); trial\n"
       "# numbers stay unique across workers. Re-submitting continues the study.\n\n";
  s += "set -euo pipefail\n";
  s += "# The folder tune export ran in: the study's relative paths mean the same here.\n";
  s += "cd -- " + shell_quote(options.workdir) + "\n";
  s += fmt::format("exec {} --trials {} --storage {} {}\n", shell_quote(options.tune_program),
                   options.trials_per_worker, shell_quote(options.storage),
                   shell_quote(options.study_file));
  return s;
}

}  // namespace tune::tuner
