// What `tune init` proposes from its probe run besides the knobs: the inputs the ranks read as
// `files:`, and the objective (a window over progress lines, the best figure printed at the end,
// or the wall time), with the other candidates as notes. Stateless; thread-safe.
#pragma once

#include "tuner/init/init_command.h"
#include "tuner/init/init_plan.h"
#include "tuner/init/init_study.h"

namespace tune::tuner {

// Fills plan.files, the objective and its notes from `probe` (--throughput-regex, in
// request.throughput_regex, wins over what the probe saw).
void probe_files_and_objective(const InitRequest& request, const ProbeFindings& probe,
                               InitPlan& plan);

}  // namespace tune::tuner
