// Reading /proc (or a copy of it, in tests): a whole small file with plain syscalls, and the
// numeric entries of a folder (pids, tids, fds). Shared by the trial sampler (system_source) and
// the probe run of `tune init` (program_probe). Plain functions; thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tune::probes {

// The whole file at `path` into `out`; false when it cannot be opened or read. Plain syscalls:
// the sampler reads dozens per tick, and the iostream machinery would cost more than the reading.
bool read_proc_file(const char* path, std::string* out);

// The entries of `dir` whose names are numbers, sorted; empty when it cannot be read.
std::vector<pid_t> numeric_entries(const char* dir);

}  // namespace tune::probes
