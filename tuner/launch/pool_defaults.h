// Pool sizes a program takes on this machine with nothing set, measured by running it (the
// knob catalog's rules can be wrong for a build or a VM). Each measurement runs a process,
// bounded in time, and blocks the calling thread.
// Design: docs/design-notes.md#tunerlaunchpool_defaultsh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/study/study_knobs.h"

namespace tune::tuner {

struct MeasuredPools {
  std::map<std::string, int> defaults;  // pool -> size: torch_intra_op, torch_inter_op
  std::vector<std::string> notes;       // one per measured pool, for the study or the banner
};

// Runs `python` (looked up in PATH as a trial's program is) once with OMP_NUM_THREADS and
// MKL_NUM_THREADS removed and records torch.get_num_threads() and
// torch.get_num_interop_threads() as the torch_intra_op and torch_inter_op pools' sizes. A
// failure (no such interpreter, no torch, past `timeout_s`) records nothing.
MeasuredPools measure_torch_pools(const std::string& python, double timeout_s = 60);

// A study whose program is a Python interpreter (`command[0]`) and whose `knobs:` leave a torch
// pool without a `default:`: that pool's size as torch takes it on this machine, measured once
// with that interpreter (measure_torch_pools), set as the knob's default, so a trial that leaves
// the parameter null is predicted as it runs, as in a study `tune init` wrote. Returns one note
// per measured pool; a failed measurement changes nothing (the catalog's rule stays). The same
// for a torch pool `program:` lists without `pool_defaults:` (and no knob's `default:`): its
// measured size joins `program->pool_defaults`. Runs a process (about a second): once per study.
std::vector<std::string> measure_missing_pool_defaults(std::vector<StudyKnob>& knobs,
                                                       std::optional<StudyProgram>& program,
                                                       const std::vector<std::string>& command);

}  // namespace tune::tuner
