// What `tune init` decided, before it is written out: the study's parameters (one per knob that
// applies), the command and environment with placeholders in place, the launch, the baselines
// and the comments that explain each choice. knob_choice.cpp and objective_proposal.cpp fill it;
// write_init_yaml (tuner/init/init_render.cpp) renders it. Plain values; internal to `tune init`.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/distribution.h"
#include "tuner/base/number_text.h"
#include "tuner/init/init_command.h"

namespace tune::tuner {

// Whether `list` holds `item` (framework, pool and flag lists).
inline bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

struct InitParam {
  std::string name;   // the study's parameter name
  std::string knob;   // the catalog knob it sets
  std::string where;  // "flag --threads", "env OMP_NUM_THREADS", "mpirun --bind-to", ...
  // Domain: categorical `choices` (null first when the knob may be left to its default), or a
  // numeric range when `range_type` is "int" or "float".
  std::vector<search::ParamValue> choices;
  std::string range_type;
  double low = 0, high = 0;
  bool log = false;
  search::ParamValue as_given;  // its value in the user's command; monostate = not set there
  // Its value in the "every library at its default" baseline: null where the domain has null,
  // else the catalog's default (a numeric range); nullopt = none known, no such baseline.
  std::optional<search::ParamValue> library_default = search::ParamValue{};
  std::string comment;      // what it controls and what its default is
  bool sizes_pool = false;  // the knob sizes a thread or process pool
  // A flag of the user's own script (the catalog names no flag for the knob): the study's
  // `knobs:` section must tell the probes which pool the parameter sizes.
  bool declare = false;
  // The size the program's pool takes here when the parameter is null, as measured
  // (ProgramInfo::pool_defaults); written as the declaration's `default:`.
  std::optional<int> program_default;
  // A `type: kernel` parameter (tuner/init/init_kernels.h): the library its choices were checked
  // with; "" for every other parameter. `kernel_library`: its kind (openblas, onednn).
  std::string kernel_file;
  std::string kernel_library = "openblas";
};

// The `program:` section: what the program is and starts, as the probe run saw it (the probes'
// prediction reads it; tuner/study parses it).
struct InitProgram {
  bool present = false;
  // Written as comments only: on a build whose study parser does not know the key yet.
  bool commented = false;
  std::string kind = "any";        // a catalog program tag: any, torch, chainer, tune-trainer
  std::vector<std::string> pools;  // catalog pools the ranks start with nothing set
  std::vector<std::pair<std::string, int>> pool_defaults;  // measured sizes of those pools
  std::optional<int> runtime_threads;
  std::vector<std::string> evidence;  // comment lines: what was seen
};

// One `files:` entry: an input the probe run saw the program read from its folder.
struct InitFile {
  std::string mode;  // copy | link
  std::string src;   // relative to the study file's folder, or absolute
  std::string comment;
};

// The window objective `tune init` proposes when its probe run saw progress lines: the
// `objective: {window: ...}` keys, as written.
struct InitWindow {
  std::string stream = "stdout";  // stdout | stderr
  std::string regex;
  // How the regex's group writes its number (`number:`), written when not plain.
  NumberStyle number = NumberStyle::plain;
  std::string measure;                    // counter | lines | rate
  std::string warmup, min, max, startup;  // durations ("2s")
  std::string target = "2%";
};

struct InitPlan {
  std::string name;
  std::vector<std::string> header;  // comment lines at the top (without "# ")
  bool mpirun = false;
  InitMpirun launch;  // templates; bind_to/map_by may be placeholders
  // Under the launch: how to tune the ranks per node, which is not a parameter by default (the
  // job's global batch changes with it); "" when not under mpirun.
  std::string ranks_note;
  std::vector<std::string> command;                      // templates
  std::vector<std::pair<std::string, std::string>> env;  // templates
  std::vector<std::string> env_notes;                    // comments before them
  std::vector<InitParam> params;
  // How the objective regex's match writes its number (`number:`), written when not plain.
  NumberStyle objective_number = NumberStyle::plain;
  std::string regex;           // "" = wall time
  std::string objective_file;  // "" = the regex reads a stream; else the file the program writes
  std::string objective_stream = "stdout";   // stdout | stderr, without objective_file
  bool maximize = true;                      // with a regex
  std::vector<std::string> objective_notes;  // why this objective, the other candidates
  std::optional<InitWindow> window;          // the objective is a window (maximize)
  // incumbent_repeats, when the probe run showed the rate varying (0 = not written), and why.
  int incumbent_repeats = 0;
  std::string repeats_note;
  InitProgram program;
  std::vector<InitFile> files;
  std::string timeout;
  std::vector<std::string> notes;  // knobs not used and why, for the end of the file
};

// `text` as a template that expands to itself: braces doubled.
std::string escape_braces(const std::string& text);

// The YAML text of `plan`.
std::string write_init_yaml(const InitPlan& plan);

}  // namespace tune::tuner
