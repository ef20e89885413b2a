// The machine and placement the rule baselines (tuner/study/rules.h) are worked out for: the
// machine tune runs on (on a cluster the nodes are taken to be alike) and the ranks of the
// command as run (the study's first `enqueue:` entry), as its launch renders them. Used when a
// study starts (the runner enqueues the rules) and by `tune init` (which writes them). Reads
// the machine through hwloc; thread-compatible.
#pragma once

#include "probes/topology.h"
#include "tuner/study/rules.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// `topo`'s figures (or, without one, the CPUs tune may use as cores), and the ranks in all and
// per node that rendering the first `enqueue:` entry's launch gives (1 without an entry).
RuleMachine rule_machine(const StudySpec& spec, const probes::Topology* topo);

}  // namespace tune::tuner
