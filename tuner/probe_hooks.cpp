#include "tuner/probe_hooks.h"

#include "tuner/trial_attrs.h"

#include <memory>

#include "probes/monitor.h"
#include "probes/predict.h"
#include "probes/system_source.h"

extern char** environ;

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
  std::optional<probes::Prediction> prediction;
  std::unique_ptr<probes::TrialMonitor> monitor;
  // launch.slurm: the ranks are children of slurmstepd, not of the trial's srun, so a monitor of
  // the trial's process tree would see srun alone and judge it as the one rank. Such a trial
  // keeps its prediction and gets no verdict (the report then shows the prediction).
  bool ranks_outside_tree = false;
};

// The environment mpirun (or the program) starts with: tune's own, with the trial's variables.
std::map<std::string, std::string> rank_environment(const RenderedLaunch& launch) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& name : launch.env_unset) env.erase(name);
  for (const auto& [k, v] : launch.env_set) env[k] = v;
  return env;
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
  hooks.before_launch = [state](const search::FrozenTrial&, const RenderedLaunch& launch) {
    const auto plan = launch.probe_plan(rank_environment(launch));
    // The thread model of the bundled trainer; any other program is assumed to start no
    // iterator workers of its own (its OpenMP/BLAS pools are still predicted from the env).
    probes::ProgramModel model;
    const auto& program = plan.program_argv.empty() ? std::string() : plan.program_argv.front();
    if (program.ends_with("tune-trainer")) {
      // The trainer applies OPENCV_FOR_THREADS_NUM itself (cv::setNumThreads), which Debian's
      // TBB-based OpenCV would otherwise ignore.
      model.opencv_reads_env = true;
    } else {
      model.iterator_workers_default = 0;
    }
    state->prediction = probes::predict(state->topology, plan, model);
    state->ranks_outside_tree = launch.srun.has_value();
    nlohmann::json attrs = {{k_attr_probe_prediction, state->prediction->to_json()}};
    if (state->spec.constrain)
      attrs[k_hook_constraint] = probes::prediction_constraint(*state->prediction);
    return attrs;
  };
  hooks.on_start = [state](pid_t pid) {
    if (state->ranks_outside_tree) return;
    probes::MonitorOptions options;
    options.interval_s = state->spec.interval_s;
    state->monitor = std::make_unique<probes::TrialMonitor>(*state->source, pid, options);
    state->monitor->start();
  };
  hooks.on_end = [state]() {
    nlohmann::json attrs = nlohmann::json::object();
    if (state->monitor) {
      state->monitor->stop();
      attrs[k_attr_probe_verdict] =
          state->monitor->to_json(state->prediction ? &*state->prediction : nullptr);
      state->monitor.reset();
    }
    state->prediction.reset();
    state->ranks_outside_tree = false;
    return attrs;
  };
  return hooks;
}

}  // namespace tune::tuner
