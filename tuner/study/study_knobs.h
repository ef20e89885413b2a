// Knob semantics in the study file: which parameter sets which pool or catalog knob (`knobs:`)
// and what the program starts with nothing set (`program:`), turned into the probes'
// ProgramModel. Plain values and functions; thread-safe.
// Design: docs/design-notes.md#tunerstudystudy_knobsh
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

// The `program:` section: what the program is and starts with nothing set.
struct StudyProgram {
  std::string kind;                // catalog program tag; "" = not given (any)
  std::vector<std::string> pools;  // catalog pools every rank starts; default none
  // A pool's size when nothing sets it (`pool_defaults:`), instead of the catalog's rule; a pool
  // named here is started too. Default none.
  std::vector<std::pair<std::string, int>> pool_defaults;
  // Threads per rank the runtimes start on their own (MPI progress/event threads, gloo/NCCL
  // helpers) that no knob controls; nullopt = not given.
  std::optional<int> runtime_threads;
};

// The program tags `kind:` takes: any, torch, chainer, tune-trainer.
const std::vector<std::string>& program_kinds();

// The `program:` section at `node`. Throws SpecError ("FILE:LINE: key 'program.pools[1]':
// unknown pool 'x' (pools: ...)") for an unknown kind or pool, a size that is not a
// non-negative integer, or an unknown key.
StudyProgram parse_study_program(const YamlReader& reader, const YAML::Node& node);

// The `knobs:` section at `node`: a mapping of parameter name to {pool: NAME} or {knob: NAME},
// either with an optional `default: N` (the pool's size when the parameter is null).
// Throws SpecError ("FILE:LINE: key 'knobs.threads.pool': unknown pool 'x' (pools: ...)") for an
// unknown pool or knob, a key that names no parameter, or a pool sized by a parameter that can
// take a non-integer value.
std::vector<StudyKnob> parse_study_knobs(const YamlReader& reader, const YAML::Node& node,
                                         const search::SearchSpace& space);

// The program model the prediction uses for one trial: `base` (the bundled trainer's, or an
// empty one for any other program) with `program`'s kind, pools, their defaults and runtime
// threads, then each declared knob's pool sized by the trial's value of its parameter (a null or
// absent value leaves the pool at its declared `default:`, else `pool_defaults:`, else the
// library's).
probes::ProgramModel study_program_model(probes::ProgramModel base, const StudyProgram& program,
                                         const std::vector<StudyKnob>& knobs,
                                         const search::FrozenTrial& trial);

}  // namespace tune::tuner
