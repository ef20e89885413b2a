// Rule baselines: the settings torchrun, Lightning, horovodrun, Open MPI or a cores-per-rank
// split would apply, in the study's own parameters, each run as one enqueued trial (issue 38).
// Pure functions over the study spec and the machine's figures; thread-safe.
// Design: docs/design-notes.md#tunerstudyrulesh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/distribution.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// The rules by name, in the order they are enqueued.
const std::vector<std::string>& rule_names();

// The machine a rule is worked out for, and how the command as run places its ranks.
struct RuleMachine {
  int pus = 1;
  int cores = 1;
  int packages = 1;
  int numa_nodes = 1;
  int ranks = 1;           // np, all nodes
  int ranks_per_node = 1;  // local ranks
  // OMP_NUM_THREADS is in the environment the trials inherit (tune's own); a study's `env:`
  // entry for it is read from the study.
  bool omp_env_set = false;
};

// What a study parameter sets, read from where its placeholder stands: an environment variable
// (`OMP_NUM_THREADS: '{threads}'`), mpirun's binding or mapping, a program flag the knob
// catalog knows (`--omp-threads={omp}`), or the study's `knobs:` declaration. `pool` is the
// catalog pool it sizes ("" when none), `control` the catalog's other control ("binding",
// "mapping"); `variable` the variable or flag.
struct ParamTarget {
  std::string pool;
  std::string control;
  std::string variable;
};
std::map<std::string, ParamTarget> param_targets(const StudySpec& spec);

// `want` in `dist`'s domain, as the rules fit their values: the same value, the nearest numeric
// one (`clamped` set: an integer clamped into its range and onto its step, the nearest numeric
// choice), or none (a string that is no choice). Also the first guess's (judge/first_guess.h).
std::optional<search::ParamValue> fit_into_domain(const search::Distribution& dist,
                                                  const search::ParamValue& want, bool& clamped);

// One entry to enqueue: the full parameter values, and the rules it stands for ("" entries:
// none, the study's own `enqueue:`), each with its text ("torchrun: OMP_NUM_THREADS=1 ...").
struct RuleEntry {
  std::map<std::string, search::ParamValue> params;
  std::vector<std::string> rules;
  std::vector<std::string> texts;
  bool from_enqueue = false;  // one of the study's `enqueue:` entries (the first is the baseline)
};

// The study's `enqueue:` entries, then each rule of `spec.rules` that sets at least one of its
// parameters, folded as said above. `notes` receives a line per rule that cannot be applied
// (no parameter it sets; no command as run to start from).
std::vector<RuleEntry> enqueue_with_rules(const StudySpec& spec, const RuleMachine& machine,
                                          std::vector<std::string>& notes);

}  // namespace tune::tuner
