// The command `tune init` was given, taken apart (an optional mpirun prefix, the program and its
// arguments), and what the program is (from the probe run, else its script's text), so that init
// can pick the knobs that apply. Functions returning plain values; thread-safe.
// measure_pool_defaults() runs the program's interpreter once.
// Design: docs/design-notes.md#tunerinitinit_commandh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/base/result.h"
#include "tuner/init/help_reader.h"
#include "tuner/init/init_probe.h"
#include "tuner/launch/kernel_checks.h"

namespace tune::tuner {

struct InitMpirun {
  std::string program = "mpirun";                            // as given (mpirun, mpiexec, a path)
  std::string n, npernode, bind_to, map_by, host, hostfile;  // "" = not given
  bool oversubscribe = false;
  std::vector<std::pair<std::string, std::string>> mca;  // --mca NAME VALUE, in order
  std::vector<std::pair<std::string, std::string>> env;  // -x NAME=VALUE, in order
  std::vector<std::string> extra;                        // every other option, verbatim
};

struct InitCommand {
  bool has_mpirun = false;
  InitMpirun mpirun;
  std::vector<std::string> program;  // argv of one rank
};

// Splits `argv` (what followed `--`). An error for an empty command or an mpirun with no
// program after its options.
Result<InitCommand> split_init_command(const std::vector<std::string>& argv);

struct ProgramInfo {
  std::string display;                  // "train.py", "tune-trainer", the binary's name
  std::string stem;                     // a study name from it: "train"
  std::vector<std::string> frameworks;  // of the catalog's programs: torch, chainer, ...
  std::vector<std::string> notes;       // how each was found, for the study's header
  // Pool sizes the program takes here with nothing set, measured (measure_pool_defaults): the
  // catalog's rule is what most machines do ("one intra-op thread per physical core"), but a
  // build or a VM may differ (Debian's torch 1.13 starts 1 thread on a 2-core VM).
  std::map<std::string, int> pool_defaults;
  // What the probe run saw; nullopt when there was none (--no-probe) or it could not run.
  std::optional<ProbeFindings> probe;
  // What the program's --help listed (tuner/init/help_reader.h); nullopt when it was not asked
  // (--no-probe).
  std::optional<ProgramHelp> help;
  // The kernels checked for the study's kernel parameters (tuner/init/init_kernels.h), one offer
  // per library (OpenBLAS, oneDNN); empty when the ranks' kernels are current (or no probe run).
  std::vector<KernelOffer> kernels;
};

// What the program is. `program` is InitCommand::program, with relative paths already made
// absolute (absolute_paths). With `probe` (a probe run that ran), the frameworks are those the
// ranks mapped (libtorch -> torch, libnccl -> nccl); a Python script's import lines (`import
// torch`, `import numpy as np, torch`, `from torch import nn`) are read only when there was no
// probe run, or it failed or showed no library tune knows (stopped before the imports ended).
ProgramInfo inspect_program(const std::vector<std::string>& program,
                            const ProbeFindings* probe = nullptr);

// Frameworks a script imports, by its import lines (one module or several per line: `import
// numpy as np, torch`), and an NCCL backend named in it; added to `info` with a note each.
void detect_imports(const std::string& text, ProgramInfo& info);

// The program a command runs must be there: `program[0]` a file (a name with a '/') or found
// on PATH, and for a Python interpreter the script it is given. The error names what is
// missing.
Result<void> check_program_exists(const std::vector<std::string>& program);

// For a Python program that imports torch: runs the same interpreter once with nothing set
// (OMP_NUM_THREADS and MKL_NUM_THREADS removed) and records torch.get_num_threads() and
// torch.get_num_interop_threads() as the torch_intra_op and torch_inter_op pools' defaults, with
// a note each. A failure (no torch, a timeout of `timeout_s`)
// records nothing: the catalog's rule stays.
void measure_pool_defaults(const std::vector<std::string>& program, ProgramInfo& info,
                           double timeout_s = 60);

// Each argument (or the value of a --flag=value) that names an existing file or folder relative
// to the current folder, made absolute: trials run in their own folders.
std::vector<std::string> absolute_paths(const std::vector<std::string>& args);

}  // namespace tune::tuner
