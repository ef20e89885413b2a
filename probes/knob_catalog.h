// The knob catalog's reader: every setting tune knows how to turn, what it controls, its range
// and default, from probes/knobs.yaml embedded at build time. knob_catalog() parses it once and
// returns the same immutable object: thread-safe.
// Design: docs/design-notes.md#probesknob_catalogh
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probes/topology.h"

namespace tune::probes {

// How many of a pool's threads are runnable at the same time (knobs.yaml explains each).
enum class PoolBusy { all, spin, turns, idle };

struct KnobPool {
  std::string name;                   // openmp | blas | opencv | iterator_workers | ...
  std::string unit = "thread";        // thread | process
  bool counts_caller = false;         // a pool of n adds n - 1 threads (the caller is one)
  PoolBusy busy = PoolBusy::all;      // default: every thread it adds
  std::vector<std::string> env;       // variables that size it, first set wins
  bool env_capped = false;            // an environment value is capped at the cpuset's PUs
  std::string default_expr;           // its size when unset: "cpuset_pus", "cores", "0"
  std::string default_text;           // what that means, for people
  std::vector<std::string> includes;  // pools that are the same threads (predicted once)
  // The libraries its threads run in, as the CPU profile names them (probes/cpu_profile.h
  // library_name: "libopenblas", "libgomp"): where its CPU time shows.
  std::vector<std::string> libraries;
};

// One choice of a choice knob; `when` keeps it only on machines that have the feature
// (smt | multi_package | multi_numa | gpus), or, `file`, where the value (a library's path)
// exists; "" = always.
struct KnobChoice {
  std::string value;
  std::string when;
};

struct Knob {
  std::string name;      // unique, snake_case: "omp_num_threads"
  std::string set_by;    // env | flag | mpirun | mca
  std::string variable;  // "OMP_NUM_THREADS", "--iterator-workers", "--bind-to", MCA name;
                         // "" = a flag of the user's own script (the study names it)
  std::string example;   // a usual flag name when `variable` is "" ("--threads")
  std::string controls;  // a pool name, or one of the catalog's other_controls
  std::string type;      // int | float | bool | choice | bytes
  std::string low;       // range bounds as expressions (int, float, bytes); "" otherwise
  std::string high;
  std::vector<KnobChoice> choices;  // type choice
  bool log = false;                 // sample on a log scale
  // The value when unset, as written: a number, a word ("mpi", "false"), "pool" (the controlled
  // pool's default) or "default" (the library decides; default_text says how).
  std::string default_value;
  std::string default_text;
  std::vector<std::string> programs;  // any | torch | chainer | tune-trainer | openmpi | nccl
  std::vector<std::string>
      needs;  // `requires:`, other settings it needs: "coll_tuned_use_dynamic_rules=1"
  std::string note;
  // Kept only where the machine has this feature (smt | multi_package | multi_numa | gpus);
  // "" = everywhere.
  std::string when;
  // The pool whose threads it changes without sizing them (OMP_WAIT_POLICY: openmp); "" none.
  std::string affects;
  // How its value changes the busy model of the pool it affects, first match wins: a value
  // ("active", "0", compared without case) or ">N" (a number above N). Empty: no effect.
  std::vector<std::pair<std::string, PoolBusy>> busy;

  // True when `program` is one of `programs`, or they include "any".
  bool applies_to(std::string_view program) const;
};

// The machine (and launch) the expressions of range bounds and pool defaults are evaluated on.
struct KnobContext {
  int pus = 1;
  int cores = 1;
  int packages = 1;
  int numa_nodes = 1;
  int gpus = 0;
  int ranks_per_node = 1;
  int cpuset_pus = 0;  // PUs of the rank's cpuset; 0 = unknown (then pus_per_rank)
  // Whether a file exists (a choice's `when: file`); empty = the real file system. Tests give
  // an invented one.
  std::function<bool(const std::string&)> file_exists;

  int pus_per_rank() const;
  int cores_per_rank() const;
};

// Whether the machine of `ctx` has the feature a `when` names ("" = always; `file` needs a
// value: whether that path exists).
bool machine_has(std::string_view when, const KnobContext& ctx, std::string_view value = {});

// The busy model `knob`'s value `value` gives the pool it affects (its `busy` rules), nullopt
// when no rule matches or it has none.
std::optional<PoolBusy> knob_busy(const Knob& knob, std::string_view value);

// `topo` with `ranks_per_node` ranks on it (cpuset_pus unknown).
KnobContext knob_context(const Topology& topo, int ranks_per_node);

// "4", "2.5", "pus_per_rank", "2*cores" on `ctx`; an unknown name or junk is an error naming it.
std::expected<double, std::string> evaluate_knob_expression(std::string_view expr,
                                                            const KnobContext& ctx);

// A knob's range on one machine: numeric bounds (high is raised to low where the machine is
// smaller than the range, e.g. one PU per rank: a one-value range) or the choices that exist there.
struct KnobRange {
  std::string type;  // the knob's type
  double low = 0;
  double high = 0;
  bool log = false;
  std::vector<std::string> choices;  // choice: those kept on this machine; bool: false, true
};

class KnobCatalog {
 public:
  // Parses and checks catalog text; every error is one line "FILE:LINE: key 'a.b': what".
  static std::expected<KnobCatalog, std::string> parse(const std::string& yaml_text,
                                                       const std::string& file);

  const std::vector<Knob>& knobs() const { return m_knobs; }  // file order
  const std::vector<KnobPool>& pools() const { return m_pools; }
  const std::vector<std::string>& programs() const { return m_programs; }
  const std::vector<std::string>& other_controls() const { return m_other_controls; }

  const Knob* find(std::string_view name) const;  // nullptr when unknown
  // The knob set through `variable` ("OMP_NUM_THREADS", "--bind-to"); for a flag several
  // programs may share a name, so `program` picks the one that applies ("" = the first).
  const Knob* find_variable(std::string_view variable, std::string_view program = {}) const;
  const KnobPool* pool(std::string_view name) const;  // nullptr when not a pool
  std::vector<const Knob*> controlling(std::string_view pool_or_control) const;
  std::vector<const Knob*> for_program(std::string_view program) const;  // applies_to
  bool is_control(std::string_view name) const;  // a pool or an other_controls entry

  // Whether the knob exists on `ctx`'s machine (its `when`).
  bool available(const Knob& knob, const KnobContext& ctx) const {
    return machine_has(knob.when, ctx);
  }
  // The knob's range on `ctx`'s machine (an error when an expression cannot be evaluated).
  std::expected<KnobRange, std::string> resolve(const Knob& knob, const KnobContext& ctx) const;
  // The same on `topo` with `ranks_per_node` ranks on it.
  std::expected<KnobRange, std::string> resolve(const Knob& knob, const Topology& topo,
                                                int ranks_per_node) const {
    return resolve(knob, knob_context(topo, ranks_per_node));
  }
  // The pool's size when nothing sets it, on `ctx` (cpuset_pus = the rank's cpuset).
  int pool_default(const KnobPool& pool, const KnobContext& ctx) const;
  // The knob's default as a number when it has one (a numeric word or `pool`), else nullopt.
  std::optional<double> default_number(const Knob& knob, const KnobContext& ctx) const;

 private:
  std::vector<Knob> m_knobs;
  std::vector<KnobPool> m_pools;
  std::vector<std::string> m_programs;
  std::vector<std::string> m_other_controls;
  friend class KnobCatalogParser;
};

// The catalog embedded at build time, parsed on first use. The file is checked by the build's
// tests, so a parse failure here is a broken build: it aborts with the error.
const KnobCatalog& knob_catalog();
// The embedded text itself, comments included (for a command that shows it, e.g. `tune init`).
std::string_view knob_catalog_text();

}  // namespace tune::probes
