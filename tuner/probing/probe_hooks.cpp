#include "tuner/probing/probe_hooks.h"

#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "probes/knob_catalog.h"
#include "probes/learned_duty.h"
#include "probes/library_report.h"
#include "probes/monitor.h"
#include "probes/node_watch.h"
#include "probes/nodes.h"
#include "probes/predict.h"
#include "probes/system_source.h"
#include "probes/thread_origin.h"
#include "probes/verdict_memory.h"
#include "tuner/base/install_layout.h"
#include "tuner/base/temp_dir.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/judge/prediction_quality.h"
#include "tuner/launch/pool_defaults.h"
#include "tuner/probing/node_watchers.h"
#include "tuner/probing/origins_folder.h"
#include "tuner/probing/probe_learning.h"

namespace tune::tuner {
namespace {

// The live source with the topology read once: hwloc's discovery (PCI included) costs tens of
// milliseconds, and the machine does not change between trials.
class CachedTopologySource final : public probes::SystemSource {
 public:
  explicit CachedTopologySource(std::unique_ptr<probes::SystemSource> live)
      : m_live(std::move(live)), m_topology(m_live->topology()) {}
  std::expected<probes::Topology, std::string> topology() override { return m_topology; }
  std::vector<pid_t> process_tree(pid_t root) override { return m_live->process_tree(root); }
  std::optional<probes::ProcessSample> read_process(pid_t pid, bool with_threads) override {
    return m_live->read_process(pid, with_threads);
  }
  std::optional<std::string> read_environ(pid_t pid, const std::string& name) override {
    return m_live->read_environ(pid, name);
  }
  double now_s() override { return m_live->now_s(); }

 private:
  std::unique_ptr<probes::SystemSource> m_live;
  std::expected<probes::Topology, std::string> m_topology;
};

// What the probes keep between the hooks of one trial.
struct ProbeState {
  std::unique_ptr<probes::SystemSource> source;
  probes::Topology topology;
  ProbeSpec spec;
  std::vector<probes::NodePrediction> nodes;  // one per node; one without a host when local only
  std::optional<probes::NodeRanks> local;     // the node `tune` runs on, of a multi-host layout
  std::string tag;                            // TUNE_PROBE_TAG of a trial that spans hosts
  std::unique_ptr<NodeWatchers> watchers;     // on the other nodes
  std::unique_ptr<probes::TrialMonitor> monitor;
  // launch.slurm: the ranks are children of slurmstepd, not of the trial's srun, so a monitor of
  // the trial's process tree would see srun alone and judge it as the one rank. Such a trial
  // keeps its prediction and gets no verdict (the report then shows the prediction).
  bool ranks_outside_tree = false;
  // The duty cycles earlier trials of the study measured and the verdicts earlier trials of the
  // same layout got, updated with each trial that finished since the last prediction.
  ProbeLearning learning;
  // Unnamed threads per rank the program's pools start (MonitorOptions::program_threads), where
  // the study says what the program starts; nullopt: the monitor tells runtimes by name only.
  std::optional<int> program_threads;
  // libtune_threads.so (empty: not found, or the study turned it off) and this trial's folder of
  // thread origins, removed when the trial ends.
  std::string origins_library;
  std::filesystem::path origins_dir;
  // What the ranks on other machines' nodes said of their libraries (their watchers send it).
  std::vector<probes::ProcessLibraries> remote_libraries;
  // The CPU's flags and instruction set, for the libraries' reports (probes/library_report.h).
  std::set<std::string> cpu_flags = probes::read_cpu_flags();
  probes::IsaLevel cpu_isa = probes::cpu_isa(cpu_flags);
};

// libtune_threads.so next to the running executable or in ../lib/tune; empty when neither.
std::string find_origins_library() {
  return plugin_library(probes::k_thread_origins_library).string();
}

// Where the trial's processes write what their libraries said.
std::filesystem::path libraries_dir(const ProbeState& state) {
  return state.origins_dir / "libraries";
}

// The trial's processes record where each thread started (probes/thread_origin.h): a private
// folder, its path and the library preloaded before any the study or tune's environment preloads.
void preload_origins(ProbeState& state, RenderedLaunch& launch) {
  std::error_code ec;
  if (!state.origins_dir.empty()) std::filesystem::remove_all(state.origins_dir, ec);
  state.origins_dir.clear();
  if (state.origins_library.empty()) return;
  const auto made = make_temp_dir(k_origins_prefix);
  if (!made) return;
  state.origins_dir = *made;
  std::string preload = state.origins_library;
  const auto set = launch.env_set.find("LD_PRELOAD");
  const char* inherited = std::getenv("LD_PRELOAD");
  if (set != launch.env_set.end()) {
    if (!set->second.empty()) preload += ":" + set->second;
  } else if (inherited != nullptr && *inherited != '\0' &&
             std::ranges::find(launch.env_unset, "LD_PRELOAD") == launch.env_unset.end()) {
    preload += std::string(":") + inherited;
  }
  launch.env_set["LD_PRELOAD"] = preload;
  launch.env_set[probes::k_thread_origins_env] = state.origins_dir.string();
  // The same library asks each process's BLAS and OpenMP what they run (library_report.h). The
  // owner file tells a watcher on this machine (namespaces) that the folder is tune's to read.
  if (std::filesystem::create_directory(libraries_dir(state), ec))
    launch.env_set[probes::k_library_reports_env] = libraries_dir(state).string();
  write_origins_owner(state.origins_dir);
}

// A predicted oversubscription skips a trial (constrain: true) only once this many trials have
// measured their duty cycles: the prior rules count every pool as busy, and a study that skipped
// on them would never run the trials that teach it otherwise.
constexpr int k_trials_before_constraining = 3;

// This node's prediction (the only one, or the local node's of a multi-host trial).
const probes::Prediction* local_prediction(const ProbeState& state) {
  if (state.nodes.empty()) return nullptr;
  if (!state.local) return &state.nodes.front().prediction;
  for (const auto& n : state.nodes)
    if (n.host == state.local->host) return &n.prediction;
  return nullptr;
}

std::string this_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The nodes of `plan` that run ranks and are not this machine.
std::vector<probes::NodeRanks> remote_nodes(const probes::LaunchPlan& plan) {
  std::vector<probes::NodeRanks> out;
  for (const auto& node : plan.layout)
    if (!node.ranks.empty() && !is_this_host(node.host)) out.push_back(node);
  return out;
}

// What the prediction knows of the trial's program: the bundled trainer's thread model (from
// the knob catalog) when it runs tune-trainer, else only what the study's `program:` and `knobs:`
// declare and the catalog's variables in the ranks' environment; either way, each declared pool
// sized by the trial's value of its parameter.
probes::ProgramModel program_model(const probes::LaunchPlan& plan, const ProbeSpec& spec,
                                   const search::FrozenTrial& trial) {
  const auto& program = plan.program_argv.empty() ? std::string() : plan.program_argv.front();
  return study_program_model(
      program.ends_with("tune-trainer") ? probes::trainer_program_model() : probes::ProgramModel{},
      spec.program.value_or(StudyProgram{}), spec.knobs, trial);
}

// How many threads per rank the program's pools start under names the monitor does not know,
// when what the program starts is declared (`program:`) or known (the bundled trainer, which
// names every pool's threads): its other unnamed threads are then the runtimes' own. Process
// pools are not counted: their threads are told apart by their process.
std::optional<int> program_threads(const probes::Prediction& predicted, const ProbeSpec& spec,
                                   bool trainer) {
  if (trainer) return 0;
  if (!spec.program || predicted.ranks.empty()) return std::nullopt;
  int n = 0;
  for (const probes::ThreadGroup& g : predicted.ranks.front().groups) {
    if (g.name == "main" || g.name == probes::k_runtime_group) continue;
    const probes::KnobPool* kp = probes::knob_catalog().pool(g.name);
    if (kp != nullptr && kp->unit == "process") continue;
    n += std::max(0, g.threads);
  }
  return n;
}

// The trial's verdict: this node's monitor, merged with the other nodes' watchers when the
// trial spans hosts (probes::merge_node_verdicts names the node and rank at fault).
nlohmann::json node_verdicts(ProbeState& state) {
  const bool multi =
      state.nodes.size() > 1 || (state.nodes.size() == 1 && !state.nodes[0].host.empty());
  if (!multi) {
    return state.monitor->to_json(state.nodes.empty() ? nullptr : &state.nodes.front().prediction);
  }
  std::vector<probes::NodeObservation> seen;
  const std::string machine = probes::this_machine_id();
  if (state.local) {
    const probes::Prediction* local = nullptr;
    for (const auto& n : state.nodes)
      if (n.host == state.local->host) local = &n.prediction;
    seen.push_back(probes::NodeObservation{state.local->host, this_hostname(), state.local->ranks,
                                           state.monitor->to_json(local), "", machine});
  }
  std::vector<std::string> beside;  // other nodes' hosts that are this machine
  if (state.watchers) {
    for (auto& o : state.watchers->collect()) {
      if (!machine.empty() && o.machine == machine) beside.push_back(o.host);
      // What the libraries of that node's ranks said: kept apart from the stored verdict.
      if (o.verdict && o.verdict->is_object() && o.verdict->contains("libraries")) {
        for (auto& p : probes::library_reports_from_json((*o.verdict)["libraries"]))
          state.remote_libraries.push_back(std::move(p));
        o.verdict->erase("libraries");
      }
      seen.push_back(std::move(o));
    }
  }
  auto verdict = probes::merge_node_verdicts(seen, &state.nodes);
  if (!beside.empty()) verdict[k_verdict_shares_machine_with] = beside;
  return verdict;
}

}  // namespace

std::expected<TrialHooks, std::string> make_probe_hooks(const ProbeSpec& spec) {
  return make_probe_hooks(spec, std::make_unique<CachedTopologySource>(probes::make_live_source()));
}

std::expected<TrialHooks, std::string> make_probe_hooks(
    const ProbeSpec& spec, std::unique_ptr<probes::SystemSource> source) {
  auto state = std::make_shared<ProbeState>();
  state->source = std::move(source);
  auto topo = state->source->topology();
  if (!topo) return std::unexpected("probes: " + topo.error());
  state->topology = std::move(*topo);
  state->spec = spec;

  TrialHooks hooks;
  // A trial with ranks on other nodes carries a tag to every rank (-x), by which each node's
  // watcher finds its part of the trial. Only launches tune renders forward it.
  if (spec.thread_origins) state->origins_library = find_origins_library();
  // The folders of trials whose tune was killed (SIGKILL leaves them): removed once per run.
  if (!state->origins_library.empty())
    if (const std::string root = temp_dir_or_empty(); !root.empty()) remove_orphaned_origins(root);
  hooks.tag_launch = [state](const search::FrozenTrial& trial, RenderedLaunch& launch) {
    preload_origins(*state, launch);
    state->tag.clear();
    if (!launch.kind->forwards_env_to_hosts()) return;
    if (remote_nodes(launch.probe_plan(launch.environment())).empty()) return;
    state->tag = fmt::format("{}.{}.{}", this_hostname(), ::getpid(), trial.number);
    launch.env_set[probes::k_probe_tag_env] = state->tag;
  };
  hooks.study_history = [state](const search::StudyView& study) { state->learning.update(study); };
  hooks.before_launch = [state](const search::FrozenTrial& trial, const RenderedLaunch& launch) {
    const auto env = launch.environment();
    const auto plan = launch.probe_plan(env);
    state->nodes =
        probes::predict_nodes(state->topology, plan, program_model(plan, state->spec, trial));
    for (auto& node : state->nodes) {
      probes::apply_learned_duty(state->topology, node.prediction, state->learning.learned(),
                                 probes::MonitorOptions{}.oversubscribed_ratio);
      probes::apply_verdict_memory(node.prediction, state->learning.memory());
    }
    state->local.reset();
    for (const auto& node : plan.layout)
      if (!node.ranks.empty() && !state->local && is_this_host(node.host)) state->local = node;
    state->program_threads.reset();
    if (const probes::Prediction* local = local_prediction(*state)) {
      const bool trainer =
          !plan.program_argv.empty() && plan.program_argv.front().ends_with("tune-trainer");
      state->program_threads = program_threads(*local, state->spec, trainer);
    }
    nlohmann::json attrs = {{k_attr_probe_prediction, probes::nodes_prediction_json(state->nodes)}};
    const double constraint = probes::nodes_prediction_constraint(state->nodes);
    const bool constrains =
        state->spec.constrain && state->learning.learned().trials() >= k_trials_before_constraining;
    // While learning, the trial runs and is recorded at the feasible boundary (0): constrained
    // TPE ranks a trial without a constraint value after every trial that has one.
    if (state->spec.constrain)
      attrs[k_hook_constraint] = constrains ? constraint : std::min(constraint, 0.0);
    state->watchers = std::make_unique<NodeWatchers>();  // stops any a skipped trial left
    const bool runs = !constrains || constraint <= 0;
    if (runs && !state->tag.empty()) {
      const auto self = executable_path();
      state->watchers->start(launch.kind->remote_shell(env), remote_nodes(plan),
                             self.empty() ? std::string("tune") : self.string(), state->tag,
                             state->spec.interval_s);
    }
    state->ranks_outside_tree = !launch.kind->ranks_in_tree();
    return attrs;
  };
  hooks.on_start = [state](pid_t pid) {
    if (state->ranks_outside_tree) return;
    probes::MonitorOptions options;
    options.interval_s = state->spec.interval_s;
    options.program_threads = state->program_threads;
    options.thread_origins_dir = state->origins_dir.string();
    state->monitor = std::make_unique<probes::TrialMonitor>(*state->source, pid, options);
    state->monitor->start();
  };
  hooks.on_end = [state]() {
    nlohmann::json attrs = nlohmann::json::object();
    if (state->monitor) {
      state->monitor->stop();
      attrs[k_attr_probe_verdict] = node_verdicts(*state);
      const probes::Prediction* predicted = local_prediction(*state);
      attrs[k_attr_probe_duty] =
          probes::duty_record(predicted, state->monitor->verdict(predicted).sustained.duty);
      state->monitor.reset();
    }
    state->watchers.reset();
    if (!state->origins_dir.empty()) {
      auto reports = probes::read_library_reports(libraries_dir(*state).string());
      std::ranges::move(state->remote_libraries, std::back_inserter(reports));
      state->remote_libraries.clear();
      const auto libraries = probes::summarize_libraries(reports, state->cpu_isa, state->cpu_flags);
      if (!libraries.empty()) attrs[k_attr_probe_libraries] = libraries.to_json();
      std::error_code ec;
      std::filesystem::remove_all(state->origins_dir, ec);
      state->origins_dir.clear();
    }
    state->nodes.clear();
    state->ranks_outside_tree = false;
    return attrs;
  };
  return hooks;
}

AttachedProbes attach_probes(StudyRunner& runner) {
  AttachedProbes out;
  ProbeSpec spec = runner.spec().probes;
  if (!spec.enabled) return out;
  out.notes = measure_missing_pool_defaults(spec.knobs, spec.program, runner.spec().command);
  auto hooks = make_probe_hooks(spec);
  if (hooks)
    runner.set_hooks(std::move(*hooks));
  else
    out.warning = hooks.error();
  return out;
}

}  // namespace tune::tuner
