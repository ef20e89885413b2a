// The header comment of a study `tune init` writes: the command, the machine, the program, and
// what the probe run saw (libraries, child processes, variables read); and its `program:`
// section. Stateless functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "probes/knob_catalog.h"
#include "probes/topology.h"
#include "tuner/init/init_command.h"
#include "tuner/init/init_plan.h"
#include "tuner/init/init_study.h"

namespace tune::tuner {

// The first lines: who wrote it for which command, the machine and ranks, the program.
std::vector<std::string> init_header(const InitRequest& request, const ProgramInfo& program,
                                     const probes::Topology& topo, int ranks, int per_node,
                                     const std::vector<std::string>& frameworks);
// What the probe run saw: how it ran, each library that told something; appended to `h`.
void probe_header(const ProbeFindings& probe, std::vector<std::string>& h);
// The catalog's variables among those the processes read through getenv; appended to `h`.
void env_reads_header(const ProbeFindings& probe, const probes::KnobCatalog& catalog,
                      std::vector<std::string>& h);
// The processes the ranks started, for a comment: "2 child processes per rank (python3 x2)".
std::string children_evidence(const ProbeFindings& probe);
// The `program:` section from the probe run; `live`: as YAML, else as comments.
InitProgram program_section(const ProgramInfo& program, const ProbeFindings& probe,
                            const probes::KnobCatalog& catalog, bool live);

}  // namespace tune::tuner
