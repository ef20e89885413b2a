// mpirun's command-line options as Open MPI spells them: one table of every alias, how many
// values each takes and which setting it gives, walked by every reader of an mpirun line.
// Plain constants; thread-safe.
// Design: docs/design-notes.md#probesmpirun_flagsh
#pragma once

#include <string_view>

namespace tune::probes {

// What an mpirun option sets, for the readers that care; `other` = skipped with its values.
enum class MpirunSetting {
  n,                  // total ranks
  npernode,           // ranks per node
  bind_to,            // --bind-to
  map_by,             // --map-by
  host,               // --host a:2,b
  hostfile,           // --hostfile (read when a plan is made)
  env,                // -x NAME=value (a bare -x NAME exports tune's own value)
  mca,                // --mca KEY VALUE
  oversubscribe,      // more ranks than slots
  hwthread_cpus,      // --use-hwthread-cpus: each hardware thread a slot
  allow_run_as_root,  // needed when tune runs as root
  other,
};

struct MpirunFlag {
  std::string_view spelling;
  int values;  // words after the option (0: a switch); "--opt=value" carries its one value
  MpirunSetting setting;
};

inline constexpr MpirunFlag k_mpirun_flags[] = {
    {"-n", 1, MpirunSetting::n},
    {"-np", 1, MpirunSetting::n},
    {"--np", 1, MpirunSetting::n},
    {"--n", 1, MpirunSetting::n},
    {"-c", 1, MpirunSetting::n},
    {"-N", 1, MpirunSetting::npernode},
    {"--npernode", 1, MpirunSetting::npernode},
    {"-npernode", 1, MpirunSetting::npernode},
    {"--bind-to", 1, MpirunSetting::bind_to},
    {"-bind-to", 1, MpirunSetting::bind_to},
    {"--map-by", 1, MpirunSetting::map_by},
    {"-map-by", 1, MpirunSetting::map_by},
    {"-H", 1, MpirunSetting::host},
    {"--host", 1, MpirunSetting::host},
    {"-host", 1, MpirunSetting::host},
    {"--hostfile", 1, MpirunSetting::hostfile},
    {"-hostfile", 1, MpirunSetting::hostfile},
    {"--machinefile", 1, MpirunSetting::hostfile},
    {"-machinefile", 1, MpirunSetting::hostfile},
    {"-x", 1, MpirunSetting::env},
    {"--mca", 2, MpirunSetting::mca},
    {"-mca", 2, MpirunSetting::mca},
    {"--gmca", 2, MpirunSetting::other},
    {"-gmca", 2, MpirunSetting::other},
    {"--oversubscribe", 0, MpirunSetting::oversubscribe},
    {"-oversubscribe", 0, MpirunSetting::oversubscribe},
    {"--use-hwthread-cpus", 0, MpirunSetting::hwthread_cpus},
    {"-use-hwthread-cpus", 0, MpirunSetting::hwthread_cpus},
    {"--allow-run-as-root", 0, MpirunSetting::allow_run_as_root},
    {"-allow-run-as-root", 0, MpirunSetting::allow_run_as_root},
    {"--rank-by", 1, MpirunSetting::other},
    {"-rank-by", 1, MpirunSetting::other},
    {"--prefix", 1, MpirunSetting::other},
    {"-wdir", 1, MpirunSetting::other},
    {"--wdir", 1, MpirunSetting::other},
    {"-wd", 1, MpirunSetting::other},
    {"--output-filename", 1, MpirunSetting::other},
    {"--timeout", 1, MpirunSetting::other},
    {"--cpus-per-proc", 1, MpirunSetting::other},
    {"--cpus-per-rank", 1, MpirunSetting::other},
    {"--tag-output-file", 1, MpirunSetting::other},
    {"--app", 1, MpirunSetting::other},
    {"--preload-files", 1, MpirunSetting::other},
    {"--path", 1, MpirunSetting::other},
    {"--rankfile", 1, MpirunSetting::other},
    {"-rf", 1, MpirunSetting::other},
    {"--report-child-jobs-separately", 1, MpirunSetting::other},
};

// The table's entry for `key` (an option without its "=value"); nullptr: not in the table, a
// switch the readers pass over.
constexpr const MpirunFlag* find_mpirun_flag(std::string_view key) {
  for (const MpirunFlag& flag : k_mpirun_flags)
    if (flag.spelling == key) return &flag;
  return nullptr;
}

}  // namespace tune::probes
