// `tune init`: a commented, ready study file for the user's own command, from the command, the
// machine, the knob catalog and, when it ran, the probe run. render_init_study() is a pure
// function of its arguments (tests give it invented machines and programs). Thread-safe.
// Design: docs/design-notes.md#tunerinitinit_studyh
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probes/knob_catalog.h"
#include "probes/topology.h"
#include "tuner/base/result.h"
#include "tuner/init/init_command.h"
#include "tuner/init/init_plan.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

struct InitRequest {
  std::vector<std::string> command;     // what followed `--`; may start with mpirun
  int ranks = 0;                        // --ranks; 0 = the command's mpirun -n, else 1
  std::string name;                     // --name; "" = the program's file stem
  std::string throughput_regex;         // --throughput-regex; "" = objective wall_time
  std::vector<std::string> knob_flags;  // --knob FLAG=KNOB: a flag of the program, its knob
  std::vector<std::string> frameworks;  // --framework: added to those inspect_program found
  std::string trial_timeout = "1h";     // --trial-timeout: the study's per-trial timeout
  std::string generated_by;             // the header's "written by" line (command, host, date)
  // Where the probe run's inputs are (the folder init ran in) and where the study file goes
  // (`files:` sources are relative to it); "" = the same folder, names as they are.
  std::string source_dir, study_dir;
  // Write the `program:` section as YAML (true), or as comments for a study parser that does
  // not know the key (the CLI retries with false when its parser refuses the key).
  bool program_key = true;
  // Set in the study's env: when its objective is a window over progress lines, so that trials
  // read them as printed (tuner/init/init_probe.h's LineBuffering); nullopt = none here.
  std::optional<LineBuffering> line_buffering;
  // Whether a library file exists here (the allocator's choices); empty = the real file
  // system. Tests give an invented one.
  std::function<bool(const std::string&)> file_exists;
};

// The study text. `command` is split_init_command(request.command) with absolute paths in its
// program; `program` what inspect_program found. Errors are bad input (a --knob that names no
// knob, ranks given twice and different, a regex RE2 refuses).
// The `rules:` section for a study init wrote (`spec`, as parsed back): every rule baseline
// (tuner/study/rules.h) that sets one of its parameters on `topo`, each with what it sets in a
// comment, and a comment naming those that set none; "" when no rule applies. Appended to the
// study's text.
std::string init_rules_section(StudySpec spec, const probes::Topology& topo);

// What the study will hold: knobs (knob_choice.h), header (init_header.h), objective and files
// (objective_proposal.h), kernel parameter (init_kernels.h). A pure function of its arguments.
Result<InitPlan> plan_init_study(const InitRequest& request, const InitCommand& command,
                                 const ProgramInfo& program, const probes::Topology& topo,
                                 const probes::KnobCatalog& catalog);

// plan_init_study, written as YAML (init_plan.h write_init_yaml).
Result<std::string> render_init_study(const InitRequest& request, const InitCommand& command,
                                      const ProgramInfo& program, const probes::Topology& topo,
                                      const probes::KnobCatalog& catalog);

}  // namespace tune::tuner
