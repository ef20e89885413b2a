// The probe hooks on an invented machine (probes::FakeSource, two cores): the prediction is made
// from the trial's structured launch and environment (its variables over the parent's), a raw
// mpirun command predicts as the same launch.mpirun settings do, the
// constraint is stored only with `probes: {constrain: true}` and once trials have measured duty
// cycles, predictions learn from earlier trials' duty cycles, the monitor watches the started pid
// and its verdict carries the trial's own prediction, and nothing leaks into the next trial.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "probes/predict.h"
#include "tests/common/fake_source.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/launcher.h"
#include "tuner/probing/node_watchers.h"
#include "tuner/probing/probe_hooks.h"

namespace tune::tuner {
namespace {

constexpr pid_t k_rank_pid = 4242;

std::unique_ptr<probes::FakeSource> two_cores() {
  auto topo = probes::read_synthetic_topology("pack:1 core:2 pu:1");
  EXPECT_TRUE(topo.has_value());
  auto source = std::make_unique<probes::FakeSource>(*topo);
  source->add_process(k_rank_pid, 1, "prog", {0, 1}, {{"OMPI_COMM_WORLD_RANK", "0"}});
  source->run_thread(k_rank_pid, 0, 'R', 0);
  return source;
}

TrialHooks hooks_for(ProbeSpec spec = {}) {
  spec.interval_s = 0.01;
  auto hooks = make_probe_hooks(spec, two_cores());
  EXPECT_TRUE(hooks.has_value()) << (hooks ? "" : hooks.error());
  return hooks ? std::move(*hooks) : TrialHooks{};
}

// Two unbound ranks on 2 PUs (launch.mpirun), running `program` with `omp` OpenMP threads (a
// team bound to a core each would take turns on it: probes/predict.cpp).
RenderedMpirun two_unbound_ranks() {
  RenderedMpirun m;
  m.n = "2";
  m.bind_to = "none";
  return m;
}

RenderedLaunch launch(const std::string& program, const std::string& omp,
                      RenderedMpirun mpirun = two_unbound_ranks()) {
  RenderedLaunch l;
  l.kind = mpirun_launch(std::move(mpirun));
  l.command = {program};
  l.env_set = {{"OMP_NUM_THREADS", omp}, {"OPENBLAS_NUM_THREADS", "1"}};
  return l;
}

// The same launch as a command line the user wrote (no launch.mpirun section).
RenderedLaunch raw_launch(const std::string& program, const std::string& omp) {
  RenderedLaunch l;
  l.command = {"mpirun", "-n", "2", "--bind-to", "none", program};
  l.env_set = {{"OMP_NUM_THREADS", omp}, {"OPENBLAS_NUM_THREADS", "1"}};
  return l;
}

nlohmann::json prediction(TrialHooks& hooks, const RenderedLaunch& launch) {
  const auto attrs = hooks.before_launch(search::FrozenTrial{}, launch);
  EXPECT_TRUE(attrs.contains(k_attr_probe_prediction)) << attrs.dump();
  return attrs.value(k_attr_probe_prediction, nlohmann::json::object());
}

TEST(ProbeHooks, PredictsFromTheRequestsEnvironment) {
  auto hooks = hooks_for();
  const auto busy = prediction(hooks, launch("prog", "4"));
  const auto calm = prediction(hooks, launch("prog", "1"));
  EXPECT_TRUE(busy["oversubscribed"].get<bool>()) << busy.dump();
  EXPECT_FALSE(calm["oversubscribed"].get<bool>()) << calm.dump();
  EXPECT_GT(busy["busy_threads"].get<int>(), calm["busy_threads"].get<int>());
}

TEST(ProbeHooks, ARawMpirunCommandPredictsAsTheSameLaunchSettings) {
  auto hooks = hooks_for();
  for (const char* omp : {"1", "4"}) {
    const auto structured = prediction(hooks, launch("/opt/tune/bin/tune-trainer", omp));
    const auto raw = prediction(hooks, raw_launch("/opt/tune/bin/tune-trainer", omp));
    EXPECT_EQ(structured, raw);
    EXPECT_EQ(raw["bind_to"], "none") << raw.dump();
    EXPECT_EQ(raw["ranks"].size(), 2u) << raw.dump();
  }
  // A plain command is one rank, not bound by a launcher.
  RenderedLaunch plain;
  plain.command = {"prog"};
  const auto one = prediction(hooks, plain);
  EXPECT_EQ(one["ranks"].size(), 1u) << one.dump();
  EXPECT_EQ(one["bind_to"], "none") << one.dump();
}

TEST(ProbeHooks, UnsetVariablesAreGoneFromThePrediction) {
  auto hooks = hooks_for();
  ::setenv("OMP_NUM_THREADS", "8", 1);  // in tune's own environment, which ranks inherit
  auto inherited = launch("prog", "1");
  inherited.env_set.erase("OMP_NUM_THREADS");
  auto unset = inherited;
  unset.env_unset = {"OMP_NUM_THREADS"};
  const auto with_parents = prediction(hooks, inherited);
  const auto without = prediction(hooks, unset);
  ::unsetenv("OMP_NUM_THREADS");
  EXPECT_TRUE(with_parents["oversubscribed"].get<bool>()) << with_parents.dump();
  EXPECT_NE(with_parents["busy_threads"], without["busy_threads"]);
}

TEST(ProbeHooks, TheBundledTrainersThreadsAreModelled) {
  // tune-trainer starts iterator worker threads by default; another program is assumed not to.
  auto hooks = hooks_for();
  const auto trainer = prediction(hooks, launch("/opt/tune/bin/tune-trainer", "1"));
  const auto other = prediction(hooks, launch("/opt/tune/bin/other", "1"));
  EXPECT_GT(trainer["busy_threads"].get<int>(), other["busy_threads"].get<int>())
      << trainer.dump() << "\n"
      << other.dump();
}

// A PyTorch DDP script whose intra-op pool is its `--threads` flag: the study says so
// (`threads: {pool: torch_intra_op}`) and the prediction follows the trial's value of {threads}.
TEST(ProbeHooks, DeclaredKnobsPredictAnExternalScriptFromTheTrialsValues) {
  RenderedLaunch l;
  l.kind = mpirun_launch(two_unbound_ranks());  // 2 unbound ranks on 2 PUs
  // Whatever tune's own environment holds, the ranks get no thread variables.
  l.env_unset = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"};
  auto trial_with = [&](std::optional<std::int64_t> threads) {
    search::FrozenTrial t;
    l.command = {"python3", "train.py"};
    if (threads) {
      t.distributions["threads"] = search::IntDistribution{1, 2};
      t.params["threads"] = static_cast<double>(*threads);
      l.command.insert(l.command.end(), {"--threads", std::to_string(*threads)});
    }
    return t;
  };
  ProbeSpec spec;
  spec.knobs = {StudyKnob{"threads", "", "torch_intra_op", "torch", std::nullopt}};
  auto declared = hooks_for(spec);
  auto predict = [&](TrialHooks& hooks, std::optional<std::int64_t> threads) {
    const auto trial = trial_with(threads);
    return hooks.before_launch(trial, l).value(k_attr_probe_prediction, nlohmann::json::object());
  };
  const auto one = predict(declared, 1);
  EXPECT_FALSE(one["oversubscribed"].get<bool>()) << one.dump();
  EXPECT_EQ(one["busy_threads"], 2) << one.dump();
  const auto two = predict(declared, 2);
  EXPECT_TRUE(two["oversubscribed"].get<bool>()) << two.dump();
  EXPECT_EQ(two["ranks"][0]["groups"][1]["source"], "study") << two.dump();
  // No value (the flag left out): PyTorch's library default, one thread per core of the machine.
  const auto unset = predict(declared, std::nullopt);
  EXPECT_EQ(unset["ranks"][0]["groups"][1]["source"], "library default") << unset.dump();
  EXPECT_TRUE(unset["oversubscribed"].get<bool>()) << unset.dump();
  // Undeclared, the script's flags mean nothing to the prediction: the main threads only.
  auto bare = hooks_for();
  const auto opaque = predict(bare, 2);
  EXPECT_EQ(opaque["busy_threads"], 2) << opaque.dump();
  EXPECT_EQ(opaque["ranks"][0]["groups"].size(), 1u) << opaque.dump();
}

// Earlier trials as the runner hands them to study_history: `n` trials whose monitors measured
// each rank's main thread busy and `omp_load` runnable OpenMP threads for a pool of `omp` threads.
std::vector<search::FrozenTrial> history(int n, int omp_threads, double omp_load,
                                         search::TrialState state = search::TrialState::complete) {
  std::vector<search::FrozenTrial> trials(static_cast<std::size_t>(n));
  for (auto& t : trials) {
    t.state = state;
    t.system_attrs[k_attr_probe_duty] = {
        {"schema_version", 1},
        {"pus", 2},
        {"groups",
         {{"main", {{"predicted_threads", 1}, {"load", 1.0}}},
          {"openmp", {{"predicted_threads", omp_threads}, {"load", omp_load}}}}}};
  }
  return trials;
}

// The history as the runner's study view.
search::VectorStudyView view_of(std::vector<search::FrozenTrial> trials) {
  search::VectorStudyView view(search::Direction::minimize);
  view.mutable_trials() = std::move(trials);
  return view;
}

TEST(ProbeHooks, ConstraintOnlyWhenConstrainingAndLearned) {
  auto plain = hooks_for();
  plain.study_history(view_of(history(3, 3, 3.0)));
  EXPECT_FALSE(
      plain.before_launch(search::FrozenTrial{}, launch("prog", "4")).contains(k_hook_constraint));
  ProbeSpec spec;
  spec.constrain = true;
  auto constraining = hooks_for(spec);
  // Before three trials have measured anything, the prior does not skip trials: they run and
  // teach the prediction (a study constrained by the prior alone would never learn).
  constraining.study_history(view_of(history(2, 3, 3.0)));
  const auto learning = constraining.before_launch(search::FrozenTrial{}, launch("prog", "4"));
  ASSERT_TRUE(learning.contains(k_hook_constraint));
  EXPECT_DOUBLE_EQ(learning[k_hook_constraint].get<double>(), 0.0) << "runs, at the boundary";
  constraining.study_history(
      view_of(history(3, 3, 3.0)));  // OpenMP's 3 extra threads measured busy
  const auto busy = constraining.before_launch(search::FrozenTrial{}, launch("prog", "4"));
  const auto calm = constraining.before_launch(search::FrozenTrial{}, launch("prog", "1"));
  ASSERT_TRUE(busy.contains(k_hook_constraint) && calm.contains(k_hook_constraint));
  EXPECT_GT(busy[k_hook_constraint].get<double>(), 0.0) << "> 0: infeasible, not run";
  EXPECT_LE(calm[k_hook_constraint].get<double>(), 0.0);
}

TEST(ProbeHooks, PredictionsLearnFromEarlierTrialsDutyCycles) {
  auto hooks = hooks_for();
  const auto prior = prediction(hooks, launch("prog", "4"));
  EXPECT_TRUE(prior["oversubscribed"].get<bool>()) << prior.dump();
  hooks.study_history(view_of(history(3, 3, 0.1)));  // the pool of 4 was found idle on 2-PU cpusets
  const auto learned = prediction(hooks, launch("prog", "4"));
  EXPECT_FALSE(learned["oversubscribed"].get<bool>()) << learned.dump();
  EXPECT_EQ(learned["basis"], "duty cycles of 3 earlier trials");
  hooks.study_history(view_of({}));  // another study, or a fresh one: the prior again
  EXPECT_EQ(prediction(hooks, launch("prog", "4")), prior);
  // Trials that failed at start (a second of start-up, the pool never busy) teach nothing.
  hooks.study_history(view_of(history(3, 3, 0.1, search::TrialState::fail)));
  EXPECT_EQ(prediction(hooks, launch("prog", "4")), prior);
}

TEST(ProbeHooks, TheTrialsDutyCyclesAreStored) {
  auto hooks = hooks_for();
  prediction(hooks, launch("prog", "4"));
  hooks.on_start(k_rank_pid);
  const auto attrs = hooks.on_end();
  ASSERT_TRUE(attrs.contains(k_attr_probe_duty)) << attrs.dump();
  const auto& record = attrs[k_attr_probe_duty];
  EXPECT_EQ(record["schema_version"], 1);
  EXPECT_EQ(record["pus"], 2);  // rank 0's predicted cpuset
  EXPECT_TRUE(record["groups"].contains("main")) << record.dump();
  EXPECT_EQ(record["groups"]["main"]["predicted_threads"], 1);
}

TEST(ProbeHooks, TheVerdictWatchesTheStartedPidAndCarriesThisTrialsPrediction) {
  auto hooks = hooks_for();
  const auto predicted = prediction(hooks, launch("prog", "4"));
  hooks.on_start(k_rank_pid);
  const auto attrs = hooks.on_end();
  ASSERT_TRUE(attrs.contains(k_attr_probe_verdict)) << attrs.dump();
  const auto& verdict = attrs[k_attr_probe_verdict];
  EXPECT_GE(verdict["samples"].get<int>(), 1);
  ASSERT_EQ(verdict["ranks"].size(), 1u) << verdict.dump();
  EXPECT_EQ(verdict["ranks"][0]["pid"], k_rank_pid);
  EXPECT_EQ(verdict["predicted_oversubscribed"], predicted["oversubscribed"]);
  EXPECT_EQ(verdict["prediction_summary"], predicted["summary"]);
}

TEST(ProbeHooks, NothingLeaksIntoTheNextTrial) {
  auto hooks = hooks_for();
  prediction(hooks, launch("prog", "4"));
  EXPECT_EQ(hooks.on_end(), nlohmann::json::object()) << "never started: no verdict";
  // The next trial starts without a prediction (e.g. its before_launch was skipped).
  hooks.on_start(k_rank_pid);
  const auto attrs = hooks.on_end();
  ASSERT_TRUE(attrs.contains(k_attr_probe_verdict));
  EXPECT_TRUE(attrs[k_attr_probe_verdict]["predicted_oversubscribed"].is_null()) << attrs.dump();
}

// A study's LD_PRELOAD (the allocator knob: tcmalloc or jemalloc) still reaches the trial with
// the probes on, after tune's own libtune_threads.so: a real process maps both. The library
// preloaded is this machine's libm (any shared library shows the same; cat maps no libm itself).
TEST(ProbeHooks, AStudysLdPreloadReachesTheTrialAfterTunesOwn) {
  Dl_info info{};
  double (*cosine)(double) = &std::cos;
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(cosine), &info), 0);
  const std::string library = info.dli_fname;
  ASSERT_TRUE(library.starts_with("/")) << library;
  auto hooks = hooks_for();
  RenderedLaunch l;
  l.kind = direct_launch();
  l.command = {"/bin/cat", "/proc/self/maps"};
  l.env_set = {{"LD_PRELOAD", library}};
  hooks.tag_launch(search::FrozenTrial{}, l);
  const std::string preload = l.env_set.at("LD_PRELOAD");
  EXPECT_TRUE(preload.ends_with(":" + library)) << preload;
  EXPECT_NE(preload.find("libtune_threads.so"), std::string::npos) << preload;
  const CapturedRun run = run_captured(l.request(), 1u << 20);
  EXPECT_EQ(run.result.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("libtune_threads.so"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(std::filesystem::path(library).filename().string()), std::string::npos)
      << run.out;
  hooks.on_end();  // removes the trial's folder of thread origins
}

// launch.slurm: the ranks are slurmstepd's children, out of the watched tree, so the trial keeps
// its prediction (from the srun settings) and gets no verdict that would judge srun as a rank.
TEST(ProbeHooks, ASrunStepIsPredictedButNotJudgedFromTheTree) {
  auto hooks = hooks_for();
  RenderedLaunch step;
  RenderedSrun srun;
  srun.ntasks = "2";
  srun.cpu_bind = "cores";
  step.kind = srun_launch(std::move(srun));
  step.command = {"prog"};
  step.env_set = {{"OMP_NUM_THREADS", "4"}};
  const auto predicted = prediction(hooks, step);
  EXPECT_EQ(predicted["ranks"].size(), 2u) << predicted.dump();
  EXPECT_EQ(predicted["bind_to"], "core") << predicted.dump();
  hooks.on_start(k_rank_pid);
  EXPECT_EQ(hooks.on_end(), nlohmann::json::object()) << "no verdict for a srun step";
  // The next trial, an mpirun one, is watched again.
  prediction(hooks, launch("prog", "1"));
  hooks.on_start(k_rank_pid);
  EXPECT_TRUE(hooks.on_end().contains("probe_verdict"));
}

TEST(ProbeHooks, AnUnreadableTopologyIsAnError) {
  class NoTopology final : public probes::FakeSource {
   public:
    NoTopology() : FakeSource(probes::Topology{}) {}
    std::expected<probes::Topology, std::string> topology() override {
      return std::unexpected("hwloc: no topology");
    }
  };
  auto hooks = make_probe_hooks(ProbeSpec{}, std::make_unique<NoTopology>());
  ASSERT_FALSE(hooks.has_value());
  EXPECT_EQ(hooks.error(), "probes: hwloc: no topology");
}

// A trial with ranks on another host carries the tag its node's sampler looks for (and mpirun
// forwards it with -x); one whose hosts are all this machine needs none. 192.0.2.7 is a
// documentation address: nothing here connects to it.
TEST(ProbeHooks, OnlyATrialOnOtherHostsCarriesTheNodeTag) {
  EXPECT_TRUE(is_this_host("localhost"));
  EXPECT_FALSE(is_this_host("192.0.2.7"));
  auto hooks = hooks_for();
  RenderedMpirun on_this_host = two_unbound_ranks();
  on_this_host.host = "localhost:2";
  auto local = launch("prog", "1", on_this_host);
  hooks.tag_launch(search::FrozenTrial{}, local);
  EXPECT_FALSE(local.env_set.contains("TUNE_PROBE_TAG"));
  RenderedMpirun on_two_hosts = two_unbound_ranks();
  on_two_hosts.host = "localhost:1,192.0.2.7:1";
  auto spread = launch("prog", "1", on_two_hosts);
  hooks.tag_launch(search::FrozenTrial{}, spread);
  ASSERT_TRUE(spread.env_set.contains("TUNE_PROBE_TAG"));
  const auto argv = spread.argv();
  const auto x = std::find(argv.begin(), argv.end(), "TUNE_PROBE_TAG");
  ASSERT_NE(x, argv.end());
  EXPECT_EQ(*(x - 1), "-x");
}

// mpirun's remote shell, as the node samplers reuse it.
TEST(ProbeHooks, TheSamplersUseMpirunsRemoteShell) {
  EXPECT_EQ(launch("prog", "1").kind->remote_shell({}), std::vector<std::string>{"ssh"});
  RenderedMpirun m = two_unbound_ranks();
  m.mca = {{"plm_rsh_args", "-F /x/ssh_config -p 2222"}};
  EXPECT_EQ(launch("prog", "1", m).kind->remote_shell({}),
            (std::vector<std::string>{"ssh", "-F", "/x/ssh_config", "-p", "2222"}));
  m.mca.clear();
  EXPECT_EQ(launch("prog", "1", m).kind->remote_shell({{"OMPI_MCA_plm_rsh_agent", "rsh : ssh"}}),
            std::vector<std::string>{"rsh"});
  m.extra = {"--mca", "plm_rsh_agent", "/usr/bin/ssh -q"};
  EXPECT_EQ(launch("prog", "1", m).kind->remote_shell({}),
            (std::vector<std::string>{"/usr/bin/ssh", "-q"}));
}

}  // namespace
}  // namespace tune::tuner
