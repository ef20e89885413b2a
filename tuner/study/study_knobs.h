// Knob semantics in the study file: which parameter sets which pool (or catalog knob) of the
// program the study runs, so the probes can predict an opaque program (a PyTorch script whose
// `--threads {threads}` is its intra-op pool) from what it is told, not from its name:
//
//   knobs:
//     threads: {pool: torch_intra_op}             # {threads} sizes the intra-op/OpenMP pool
//     workers: {knob: torch_dataloader_workers}   # a catalog knob, by name
//
// Variables the knob catalog knows (OMP_NUM_THREADS...) need no declaration: the prediction
// reads them from each rank's environment. parse_study_knobs checks the section against the
// catalog and the study's parameters; study_program_model turns it and one trial's parameter
// values into the probes' ProgramModel. Plain values and functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "search/distribution.h"
#include "search/trial.h"

namespace YAML {
class Node;
}

namespace tune::probes {
struct ProgramModel;
}  // namespace tune::probes

namespace tune::tuner {

class YamlReader;

struct StudyKnob {
  std::string param;  // the parameter whose value sets it (the `knobs:` key)
  std::string knob;   // the catalog knob named by `knob:`; "" when given as `pool:`
  std::string pool;   // the catalog pool it sizes; "" when the knob controls something else
  // The catalog's program tag the declaration implies ("torch" for torch_intra_op), by which the
  // prediction judges which environment variables the program reads; "" = any.
  std::string program;
  // `default: N`: the pool's size when the parameter is null, as this program on this machine
  // takes it (e.g. measured by `tune init`), instead of the catalog's library default.
  std::optional<int> program_default;
};

// The `knobs:` section at `node`: a mapping of parameter name to {pool: NAME} or {knob: NAME},
// either with an optional `default: N` (the pool's size when the parameter is null).
// Throws SpecError ("FILE:LINE: key 'knobs.threads.pool': unknown pool 'x' (pools: ...)") for an
// unknown pool or knob, a key that names no parameter, or a pool sized by a parameter that can
// take a non-integer value.
std::vector<StudyKnob> parse_study_knobs(const YamlReader& reader, const YAML::Node& node,
                                         const search::SearchSpace& space);

// The program model the prediction uses for one trial: `base` (the bundled trainer's, or an
// empty one for any other program) with each declared pool sized by the trial's value of its
// parameter (a null or absent value leaves the pool at its declared `default:`, else the
// library's).
probes::ProgramModel study_program_model(probes::ProgramModel base,
                                         const std::vector<StudyKnob>& knobs,
                                         const search::FrozenTrial& trial);

}  // namespace tune::tuner
