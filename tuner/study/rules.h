// Rule baselines: the settings an engineer would type before reaching for a tuner, or that a
// launcher applies by itself, expressed in the study's own parameters so each runs as one
// enqueued trial beside the command as run (issue 38). A report then says by how much the best
// beats the best rule, and whether that is beyond the noise (tuner/judge/noise.h).
//
// The rules, each as its tool applies it, with the tool's own condition (each only where the
// study has a parameter it sets; everything else stays as run, the first `enqueue:` entry):
//   torchrun           OMP_NUM_THREADS=1 when it is unset and there is more than one process per
//                      node (torch/distributed/run.py, config_from_args: `"OMP_NUM_THREADS" not
//                      in os.environ and nproc_per_node > 1`); binds nothing. The parameter of
//                      OMP_NUM_THREADS (the pools left unset follow it at run time); a study
//                      without one: each pool left unset that falls back on it.
//   lightning          torch.set_num_threads(CPUs / local ranks) and OMP_NUM_THREADS to match,
//                      when OMP_NUM_THREADS is unset (lightning_fabric/utilities/distributed.py,
//                      _set_num_threads_if_needed; the CPUs are the cpuset's, or the physical
//                      cores where psutil is installed, 2.2+): torch's intra-op pool, OpenMP and
//                      the OMP_NUM_THREADS parameter. It sets no DataLoader worker.
//   lightning_workers  the worker count Lightning's warning suggests, max(1, CPUs / local ranks
//                      - 1), applied only where the warning fires: a torch DataLoader (not any
//                      other iterator) with fewer than 2 workers while that bound is above 1
//                      (pytorch_lightning/trainer/connectors/data_connector.py, _worker_check;
//                      lightning_fabric/utilities/data.py, suggested_max_num_workers).
//   horovodrun         -bind-to none -map-by slot (the binding; threads as run).
//   openmpi            Open MPI's default binding and mapping (orte/mca/rmaps/base/
//                      rmaps_base_map_job.c, 3.x-4.x): core for np <= 2; above, NUMA when hwloc
//                      reports NUMA nodes (hwloc 2 always does), else the package; none when the
//                      node is oversubscribed (more ranks than cores); threads as run.
//   cores_per_rank     the physical cores split evenly per rank, as Intel's CPU launcher
//                      (torch.backends.xeon.run_cpu) does: every compute pool = cores / local
//                      ranks, each rank bound to its cores (bind to core when that is one core;
//                      else the package or NUMA node when a rank gets a whole one, else unbound,
//                      which the rule's text says).
// A rule whose condition does not hold here changes nothing: it is listed as such ("torchrun:
// changes nothing here: one process per node ...") and labels the command as run, never run
// on its own.
// A rule whose setting is the command as run, or another rule's, is folded into that entry
// (one trial, several labels). A value outside a parameter's domain is clamped into it (or to
// the nearest choice), and the rule's text says so.
//
// Pure functions over the study spec and the machine's figures; thread-safe.
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
