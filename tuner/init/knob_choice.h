// Which of the catalog's knobs `tune init` offers for a command: the flags it types or names
// (--knob), the flags its --help lists, the variables its libraries read, mpirun's options; each
// a parameter of the plan with its range and why. Stateless functions; thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "probes/env_reads.h"
#include "probes/knob_catalog.h"
#include "tuner/base/result.h"
#include "tuner/init/init_command.h"
#include "tuner/init/init_plan.h"
#include "tuner/init/init_study.h"

namespace tune::tuner {

// --knob FLAG=KNOB: each flag of the user's program the user named, with its catalog knob.
using NamedFlags = std::vector<std::pair<std::string, const probes::Knob*>>;
Result<NamedFlags> named_flags(const InitRequest& request, const probes::KnobCatalog& catalog);

// What the choice reads besides the command: the machine, the frameworks the program uses, the
// pools its ranks started in the probe run (nullopt: no probe run) and the variables they read.
struct KnobChoiceInput {
  const probes::KnobCatalog& catalog;
  probes::KnobContext context;
  std::vector<std::string> frameworks;
  std::optional<std::set<std::string>> found_pools;
  const probes::EnvReads* env_reads = nullptr;
};

// Adds a parameter to `plan` per knob that applies (its command, env and launch rewritten with
// the placeholders), and the notes on those left out.
Result<void> choose_knobs(InitPlan& plan, const KnobChoiceInput& in, const NamedFlags& flags,
                          const InitCommand& command, const ProgramInfo& program);

}  // namespace tune::tuner
