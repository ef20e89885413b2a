// The order of `tune init`'s parameters: the knobs that act on the libraries holding the probe
// run's CPU time come first, most time first (a pool's `libraries:` in the knob catalog; a kernel
// parameter's own library); the others keep their order. Pure.
#pragma once

#include <map>
#include <string>

#include "probes/knob_catalog.h"
#include "tuner/init/init_plan.h"

namespace tune::tuner {

// A knob moves when its libraries held at least this share of the ranks' CPU time.
inline constexpr double k_knob_time_share = 0.05;

// The share of the ranks' CPU time (`library_time`: library -> mean share, ProbeFindings) that
// `p` acts on: the libraries of its pool and of the pools that are the same threads (either side
// of an `includes`); a kernel
// parameter's library (oneDNN's generated code, "[anon]", counted as oneDNN's).
double param_time_share(const InitParam& p, const std::map<std::string, double>& library_time,
                        const probes::KnobCatalog& catalog);

// Reorders `plan.params` (stable) and adds to each moved parameter's comment what its libraries
// held: "its libraries held 71% of the ranks' CPU time in the probe run (libopenblas 71%)".
void order_by_library_time(InitPlan& plan, const std::map<std::string, double>& library_time,
                           const probes::KnobCatalog& catalog);

}  // namespace tune::tuner
