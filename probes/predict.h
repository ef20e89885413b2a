// Prediction before launch: from a trial's launch settings and the machine's topology, how many
// threads each rank starts and keeps busy, on which cpuset, and whether a cpuset gets more busy
// threads than PUs (Open MPI 4.1's binding rules, the knob catalog's pools). Pure; thread-safe.
// Design: docs/design-notes.md#probespredicth
#pragma once

#include <cmath>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/topology.h"

namespace tune::probes {

inline constexpr int k_prediction_schema_version = 1;

// A setting is at risk of oversubscription when at least this share of its runs is expected to
// be (one in five).
inline constexpr double k_at_risk = 0.2;

// "12" -> 12; anything else (junk, a sign, a trailing character, overflow) -> nullopt. The one
// number reader of mpirun options, hostfiles and thread flags.
std::optional<int> parse_int(std::string_view text);

// One host of a multi-host launch, as --host ("a:2") or a hostfile line ("a slots=2") names it.
struct HostSlots {
  std::string name;
  int slots = 0;  // 0: not given (Open MPI then takes the node's cores)

  bool operator==(const HostSlots&) const = default;
};

// Which MPI ranks (MPI_COMM_WORLD numbers) one host runs.
struct NodeRanks {
  std::string host;
  std::vector<int> ranks;

  bool operator==(const NodeRanks&) const = default;
};

// How the ranks of one trial are started, as the prediction needs it. One spelling throughout
// (the table in tuner/launch/rendered_launch.h maps it to the study file and to mpirun's
// flags): `n` total ranks over `nodes` nodes, at most `ranks_per_node` on one.
struct LaunchPlan {
  int n = 1;  // total ranks (-n)
  int nodes = 1;
  int ranks_per_node = 1;
  std::string bind_to;  // none|core|socket|package|numa|hwthread|"" = mpirun's default
  std::string
      map_by;  // core|slot|socket|package|numa|node|hwthread, ":PE=n" honoured; "" = default
  bool uses_mpirun = false;
  // --use-hwthread-cpus: every PU is a slot (Open MPI then binds to hwthread by default).
  bool hwthread_slots = false;
  std::vector<std::string> program_argv;   // the program each rank runs, with its flags
  std::map<std::string, std::string> env;  // final environment of each rank
  // With --host/--hostfile: the hosts, and the ranks Open MPI puts on each (map_ranks_to_nodes
  // in probes/nodes.h); empty = one node, this one.
  std::vector<HostSlots> hosts;
  std::vector<NodeRanks> layout;
  // The MPI rank of each rank predicted on the node (predict_nodes fills it); empty = 0..n-1.
  std::vector<int> node_ranks;
  std::vector<std::string> notes;  // e.g. a hostfile that could not be read

  bool operator==(const LaunchPlan&) const = default;
};

// mpirun's placement options as its command line gives them, each as written ("" = not given;
// the last one given wins, as with mpirun). Text, not numbers: a value mpirun would refuse
// ("-n x") counts as not given, wherever it comes from.
struct MpirunOptions {
  std::string n;         // -n, -np, -c: total ranks
  std::string npernode;  // -N, --npernode: ranks per node
  std::string bind_to;   // --bind-to
  std::string map_by;    // --map-by
  std::string host;      // -H, --host: "a:2,b" (distinct names are the nodes)
  std::string hostfile;  // --hostfile, --machinefile: read when the plan is made
  std::map<std::string, std::string>
      env;  // -x NAME=value (a bare -x NAME exports, changes nothing)
  bool use_hwthread_cpus = false;  // --use-hwthread-cpus
};

// Reads the mpirun options at the front of `args` (mpirun's own argv without argv[0]) into
// `options`, later ones overriding; returns the index of the program (the first element that is
// not an option, or the one after "--"; args.size() when there is none). Other options, with
// their values, are skipped.
std::size_t read_mpirun_options(const std::vector<std::string>& args, MpirunOptions& options);

// The plan of `program_argv` started by mpirun with `options`, each rank with `env` (the
// environment mpirun starts with) plus the options' -x NAME=value.
LaunchPlan launch_plan_from_mpirun(const MpirunOptions& options,
                                   std::vector<std::string> program_argv,
                                   std::map<std::string, std::string> env);

// One pool a program starts and what sizes it, for the prediction. Built from the knob catalog
// (probes/knob_catalog.h), never written by hand: trainer_program_model() for the bundled
// trainer, the tuner's probe hooks from a study's `knobs:` section for any other program.
struct PoolModel {
  std::string pool;                    // a catalog pool: openmp, blas, torch_intra_op, comm, ...
  std::string flag;                    // the program's flag that sizes it; "" = none
  bool flag_is_switch = false;         // a flag without a value: present = one thread (comm)
  std::optional<int> value;            // set for this trial by the study (a parameter's value)
  std::string value_detail;            // how, for people: "{threads} = 1 (study knob)"
  std::optional<int> program_default;  // the program's own default; nullopt = the library's
};

// The pools of a program, in the order the prediction lists them. `program` is the catalog's
// program tag the environment's knobs are judged for ("any", "torch", "tune-trainer"): a pool's
// variable takes effect only where its knob applies to the program (OPENCV_FOR_THREADS_NUM only
// in programs that apply it themselves), and a catalog variable set in the rank's environment
// adds the pool it controls even when `pools` lacks it (OMP_NUM_THREADS=4: an OpenMP team).
struct ProgramModel {
  std::string program = "any";
  std::vector<PoolModel> pools;
  // Threads per rank the runtimes start on their own and no knob controls (Open MPI's progress
  // and event threads, gloo's or NCCL's helpers): predicted as the group "runtime", shown, and
  // kept out of the verdict (a setting is not oversubscribed because of them alone). Default 0.
  int runtime_threads = 0;
};

// The bundled tune-trainer: every catalog knob of `tune-trainer` that is a flag sizing a pool
// (a default below the knob's `low` means "unset": the pool's library default applies).
const ProgramModel& trainer_program_model();

// For a command line the user wrote: an argv that may start with mpirun/mpiexec/orterun/prterun
// (read_mpirun_options, then launch_plan_from_mpirun), otherwise a one-rank plan. `env` is the
// environment the command is started with. A launch the tuner renders itself (launch.mpirun)
// builds its plan from its settings instead (tuner/launch/launch_kind.h), never from its argv.
LaunchPlan launch_plan_from_argv(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env);

// The group of the threads the runtimes start on their own (ProgramModel::runtime_threads; the
// monitor's group of the same name).
inline constexpr const char* k_runtime_group = "runtime";

struct ThreadGroup {
  std::string name;    // main, a catalog pool (iterator_workers | openmp | blas | ...), runtime
  int threads = 0;     // threads it adds (a pool of n adds n - 1: the caller is the main thread)
  int busy = 0;        // how many of them the prior rules count as busy at the same time
  std::string source;  // flag | env | library default | program default | fixed
  std::string detail;  // "OPENBLAS_NUM_THREADS=4", "unset -> one per PU of a 2-PU cpuset"
  // Busy threads the prediction counts: `busy` by the prior rules, or what earlier trials of the
  // study measured for this many threads (threads x duty cycle, probes/learned_duty.h).
  double load = 0;
};

struct RankPrediction {
  int rank = 0;             // MPI rank (LaunchPlan::node_ranks; 0.. on one node)
  std::vector<int> cpuset;  // os indices of the PUs it may run on
  std::vector<ThreadGroup> groups;
  int threads_alive = 0;  // distinct threads it starts
  int busy_threads = 0;   // threads runnable at the same time (prior rules)
  double load = 0;        // the groups' loads summed
};

struct CpusetLoad {
  std::vector<int> pus;
  std::vector<int> ranks;  // ranks bound inside this cpuset
  int busy_threads = 0;
  int cores = 0;
  double load = 0;          // the ranks' loads summed, runtime threads (group "runtime") left out
  double runtime_load = 0;  // the runtime threads' load: shown, never the verdict's
  // Learned loads only: the chance that more than oversubscribed_ratio x PUs threads are runnable
  // at one instant (each thread runnable independently with its group's duty cycle).
  double over_probability = 0;
  // Prior: load > oversubscribed_ratio x pus.size(); learned: over_probability > 0.5, which is
  // what the observed verdict judges (the median of sampled runnable threads over the limit).
  bool oversubscribed = false;
};

struct Prediction {
  // The program tag of the model it was made with (ProgramModel::program): only the bundled
  // trainer names its pools' threads, so only its pools are told apart by the monitor.
  std::string program = "any";
  std::string bind_to;  // effective policy after Open MPI's defaults
  std::string map_by;
  std::vector<std::string> notes;  // e.g. "mpirun refuses --bind-to core with 4 ranks on 2 cores"
  std::vector<RankPrediction> ranks;
  std::vector<CpusetLoad> cpusets;
  bool oversubscribed = false;
  int busy_threads = 0;  // all ranks of the node, prior rules
  double load = 0;       // all ranks of the node, as counted (prior or learned)
  // A cpuset is oversubscribed when its load exceeds this many threads per PU: 1 for the prior's
  // whole threads; the observed verdict's ratio once loads are measured ones (learned_duty.h).
  double oversubscribed_ratio = 1.0;
  std::string basis;  // "" (prior rules) or "duty cycles of N earlier trials"
  // Set when earlier trials with the same threads and cpusets were observed and decide the
  // verdict (probes/verdict_memory.h): their majority verdict.
  std::optional<bool> remembered;
  // The prior rules' verdict, as predict() made it before anything was learned: whether the
  // threads the settings start exceed the PUs when they are all busy. The hazard `risk` starts
  // from once runs of the same layout were observed.
  bool rules_oversubscribed = false;
  // The chance that one run of these settings is observed oversubscribed, and whether that makes
  // them "at risk" (risk >= k_at_risk). Some programs are oversubscribed in some runs of one
  // setting and not in others: two hpcc ranks with two OpenBLAS threads each, unbound on 2 PUs,
  // ran 5-10x slower when the kernel happened to place each rank's two threads on different PUs
  // and at full speed when it placed them on one; the placement is made at start and kept, so
  // no verdict made before the run is right for every run. `oversubscribed` is the likelier
  // outcome of one run; `at_risk` says the setting can be. Before any run of the layout: 1 or 0
  // by the rules' verdict, or the learned chance of being over (over_probability); after runs of
  // the layout (apply_verdict_memory): (observed oversubscribed + rules' verdict as one run) /
  // (runs + 1).
  double risk = 0;
  bool at_risk = false;
  int risk_percent() const { return static_cast<int>(std::lround(100 * risk)); }  // as said
  int risk_runs = 0;  // earlier runs of the layout `risk` was learned from
  int pus = 0;                  // of the node
  std::vector<int> idle_cores;  // indices into Topology::cores no busy thread is expected on
  int idle_core_count = 0;      // cores left idle, counting unfilled shares of wide cpusets
  std::string summary;          // one line

  nlohmann::json to_json() const;
};

// What a reader of the probes' stored JSON found wrong: the key's path
// (".ranks[0].groups[1].busy"; "" for the whole) and why ("is not a whole number of threads").
struct JsonReadError {
  std::string key;
  std::string why;
};

// The reader beside Prediction::to_json (and nodes_prediction_json, whose top node it reads): a
// stored prediction back as the probes made it. What a reader of it relies on must be there and
// typed as written (each rank's groups, each group's name and busy threads; the schema version,
// when given, this tune's); a field an older row lacks keeps its default.
std::expected<Prediction, JsonReadError> prediction_from_json(const nlohmann::json& j);

// `model` says which pools each rank starts (the bundled trainer's by default).
Prediction predict(const Topology& topo, const LaunchPlan& plan,
                   const ProgramModel& model = trainer_program_model());

// Steps after the ranks' groups are known: loads per rank and cpuset, the verdict, idle cores
// and the summary line. predict() ends with it; apply_learned_duty calls it again.
void summarize_prediction(const Topology& topo, Prediction& prediction);

// A constraint value for the sampler (Optuna's convention: <= 0 feasible): the worst cpuset's
// load per PU, minus oversubscribed_ratio (0.5 means 50% more busy threads than PUs); once
// learned, the worst cpuset's over_probability minus 0.5.
double prediction_constraint(const Prediction& p);

// What makes a rank busy beyond its main thread, defaults named first:
// "blas threads unset -> defaulted to 4, opencv OPENCV_FOR_THREADS_NUM=2". Empty when nothing.
std::string prediction_causes(const Prediction& p, int rank);

// A summary or diagnosis line without its leading verdict word ("oversubscribed: " or "ok: ").
std::string strip_verdict_word(const std::string& line);

}  // namespace tune::probes
