// What the libraries of a job's ranks said they run (the reader of probes/library_query.c's
// files), summed up over the ranks against what the CPU can run: "OpenBLAS 0.3.21 (pthreads)
// runs its Prescott kernels on a CPU with AVX-512", "oneDNN 2.6.3 (OpenMP) runs its AVX2
// kernels on a CPU with AVX512_CORE_BF16", two OpenMP runtimes in one rank, and the
// variables that forced a kernel. `LibrariesSummary` is stored as the trial's system attr
// probe_libraries (to_json / from_json: its one writer and reader). Pure but for the file reads.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/blas_kernels.h"

namespace tune::probes {

// The variable that names the folder of reports, and the attr key.
inline constexpr const char* k_library_reports_env = "TUNE_LIBRARY_REPORTS";

// One library as one process's report gave it.
struct LibraryAnswer {
  std::string kind;  // openblas | blis | mkl | onednn | openmp
  std::string path;
  std::map<std::string, std::string> fields;  // core, config, threads, parallel, version
};

// One process's report.
struct ProcessLibraries {
  pid_t pid = 0;
  std::string rank;  // "-" when no MPI or torchrun variable names one
  std::string exe;
  std::vector<LibraryAnswer> libraries;
  std::map<std::string, std::string> env;  // the variables that force a kernel, as set
};

ProcessLibraries parse_library_report(std::string_view text);
// Every report in `dir` (one file per process; files being written are skipped).
std::vector<ProcessLibraries> read_library_reports(const std::string& dir);
// The reports as another node's watcher sends them ([{"pid", "rank", "exe", "libraries":
// [{"kind", "path", "fields"}], "env"}]), and back: untrusted text, so entries of the wrong shape
// are dropped and at most 4096 processes read.
nlohmann::json library_reports_to_json(const std::vector<ProcessLibraries>& processes);
std::vector<ProcessLibraries> library_reports_from_json(const nlohmann::json& j);

// One library over the ranks that map it.
struct LibraryUse {
  std::string kind;
  std::string name;             // "OpenBLAS 0.3.21", "oneDNN 2.6.3", "GNU OpenMP (libgomp.so.1)"
  std::string path;             // the first rank's (a real path where it could be resolved)
  std::string core;             // the kernel it runs; "" when it does not say (oneDNN: its
                                // instruction set, "AVX2", said at exit only)
  std::string threading;        // "pthreads", "OpenMP", "sequential"; ""
  std::optional<int> threads;   // the first rank's; none when not asked
  int ranks = 0;                // ranks that map it
  bool older_than_cpu = false;  // its kernel's instruction set is below the CPU's
  std::string cpu_best;         // oneDNN: the best instruction set this CPU runs that it knows
  std::string forced_by;        // "OPENBLAS_CORETYPE=Prescott" when a variable picked the kernel
  std::string text;             // one line, for every output
};

struct LibrariesSummary {
  std::string cpu;  // "AVX-512": the CPU's instruction set, as far as BLAS kernels use it
  int ranks = 0;    // ranks (or processes, without ranks) that reported
  std::vector<LibraryUse> libraries;
  std::map<std::string, std::string> forcing_env;  // name -> value (first rank's)
  std::vector<std::string> notes;  // two OpenMP runtimes in one rank; kernels older than the CPU

  bool empty() const { return libraries.empty() && forcing_env.empty(); }
  // A library of `kind` (openblas, onednn) whose kernel is older than the CPU, or a variable
  // forcing one: worth a kernel knob.
  const LibraryUse* stale(std::string_view kind) const;
  const LibraryUse* stale_openblas() const { return stale("openblas"); }
  // A clause for a trial's verdict line: "OpenBLAS runs Prescott (SSE3) kernels on an AVX-512
  // CPU", "two OpenMP runtimes in one rank"; "" when there is nothing to say.
  std::string verdict_clause() const;
  nlohmann::json to_json() const;
  static std::optional<LibrariesSummary> from_json(const nlohmann::json& j);
};

// The summary of the ranks' reports (processes with a rank; every process when none has one).
// Libraries are told apart by their real paths (Debian's libblas.so.3 is an alternatives link).
// `flags`: the CPU's (read_cpu_flags), for oneDNN's instruction sets; without them none is judged.
LibrariesSummary summarize_libraries(const std::vector<ProcessLibraries>& processes, IsaLevel cpu,
                                     const std::set<std::string>& flags = {});

}  // namespace tune::probes
