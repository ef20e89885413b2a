// Issue 39 point 1: the first guess (tuner/judge/first_guess.h) on recorded probe verdicts.
// data/pytorch_opencv_*_verdict.json are the `probe_verdict`s of two real runs of
// examples/pytorch_opencv/train.py (2 ranks under mpirun, Open MPI's default binding: one core
// each, on this project's 2-core machine, `tune --trials 1`, 2026-11-28): contended (2 torch
// threads, 2 DataLoader workers: 1250 img/s, the ranks' threads waited 61%) and uncontended
// (1 thread, 0 workers: 1605 img/s, 19%).
#include "tuner/judge/first_guess.h"

#include "tuner/study/open_study.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tune::tuner {
namespace {

using search::ParamValue;

nlohmann::json verdict(const std::string& name) {
  std::ifstream in(std::string(TUNE_SOURCE_DIR) + "/tests/tuner/judge/data/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// examples/pytorch_opencv/study.yaml's parameters, run as the contended verdict was.
std::string study(const std::string& threads_domain = "[1, 2]",
                  const std::string& baseline = "{threads: 2, workers: 2, bind_to: null}") {
  return R"(name: g
direction: maximize
launch: {mpirun: {n: 2, bind_to: '{bind_to}'}}
command: [/usr/bin/python3, train.py, '--threads={threads}', '--workers={workers}']
knobs:
  threads: {knob: torch_intra_op_threads}
  workers: {knob: torch_dataloader_workers}
objective: {regex: 'img/s: ([0-9.]+)'}
params:
  threads: )" +
         threads_domain +
         R"(
  workers: [0, 1, 2]
  bind_to: [null, none]
enqueue:
  - )" + baseline +
         "\n";
}

StudySpec spec_of(const std::string& yaml) {
  auto spec = parse_study_spec(yaml, "g.yaml");
  EXPECT_TRUE(spec) << spec.error();
  return spec ? *spec : StudySpec{};
}

RuleMachine machine(int cores, int ranks_per_node, int ranks) {
  RuleMachine m;
  m.cores = m.pus = cores;
  m.ranks = ranks;
  m.ranks_per_node = ranks_per_node;
  return m;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// By hand, from the contended verdict: budget b = 2 cores / 2 ranks = 1. Demand per rank
// (duty_cycles, threads x runnable): compute = main 1.0 x 0.694 + openmp 2.0 x 0.131 = 0.956;
// workers = dataloader_workers 3.75 x 0.21 = 0.7875. Workers' share of b: 1 x 0.7875 / 1.7435
// = 0.45 < 0.5, so 0 workers (the loading runs in the rank) and 1 - 0 = 1 torch thread; one busy
// thread per rank is bound to its core, which for 2 ranks is Open MPI's default (bind_to=null).
// Predicted: the job used 1.58 CPUs of 2 cores (below 90%), so at most 2 / 1.58 = 1.266x:
// 1250 img/s x 1.266 = 1582 (the uncontended run, which is this setting, measured 1605).
TEST(FirstGuess, AContendedBaselineGetsTheSplitAHandCalculationGives) {
  const auto spec = spec_of(study());
  const auto base = baseline_params(spec);
  ASSERT_TRUE(base) << base.error();
  const auto g = first_guess(spec, machine(2, 2, 2),
                             verdict("pytorch_opencv_contended_verdict.json"), *base, 1250.0);
  ASSERT_TRUE(g) << g.error();
  EXPECT_TRUE(g->change);
  const std::map<std::string, ParamValue> want = {
      {"threads", std::int64_t{1}}, {"workers", std::int64_t{0}}, {"bind_to", ParamValue{}}};
  EXPECT_EQ(g->params, want) << joined(g->reasoning);
  EXPECT_NEAR(g->speedup, 2.0 / 1.58, 1e-6);
  ASSERT_TRUE(g->predicted);
  EXPECT_NEAR(*g->predicted, 1250 * 2.0 / 1.58, 1e-3);
  const auto text = joined(g->reasoning);
  EXPECT_TRUE(text.contains("waited 61% of their runnable time")) << text;
  EXPECT_TRUE(text.contains("budget per rank: 2 physical cores / 2 local ranks = 1")) << text;
  EXPECT_TRUE(text.contains("workers = 1 x 0.79 / 1.74 = 0.45: below 0.5, so 0")) << text;
  EXPECT_TRUE(text.contains("rough estimate")) << text;
  EXPECT_EQ(first_guess_line(*g, *base).substr(0, 38), "threads=1 workers=0 (predicted 1.27x: ");
  const auto j = first_guess_json(*g);
  EXPECT_EQ(j["params"], nlohmann::json({{"threads", 1}, {"workers", 0}, {"bind_to", nullptr}}));
  EXPECT_TRUE(j["change"].get<bool>());
  EXPECT_EQ(j["reasoning"].size(), g->reasoning.size());
}

// By hand, on 4 cores for the same 2 ranks: b = 2; workers = 2 x 0.7875 / 1.7435 = 0.90, rounded
// 1; threads = 2 - 1 = 1; two busy threads per rank: no core of their own, and one package for
// two ranks: unbound (bind_to=none).
TEST(FirstGuess, ALargerBudgetKeepsAWorkerAndLeavesTheRanksUnbound) {
  const auto spec = spec_of(study());
  const auto g =
      first_guess(spec, machine(4, 2, 2), verdict("pytorch_opencv_contended_verdict.json"),
                  *baseline_params(spec), std::nullopt);
  ASSERT_TRUE(g) << g.error();
  const std::map<std::string, ParamValue> want = {
      {"threads", std::int64_t{1}}, {"workers", std::int64_t{1}}, {"bind_to", "none"}};
  EXPECT_EQ(g->params, want) << joined(g->reasoning);
  EXPECT_FALSE(g->predicted) << "no baseline value, no predicted value";
}

TEST(FirstGuess, AnUncontendedBaselineProposesNoChange) {
  const auto spec = spec_of(study("[1, 2]", "{threads: 1, workers: 0, bind_to: null}"));
  const auto base = baseline_params(spec);
  const auto g = first_guess(spec, machine(2, 2, 2),
                             verdict("pytorch_opencv_uncontended_verdict.json"), *base, 1605.0);
  ASSERT_TRUE(g) << g.error();
  EXPECT_FALSE(g->change);
  EXPECT_EQ(g->params, *base);
  EXPECT_FALSE(g->predicted);
  ASSERT_EQ(g->reasoning.size(), 1u);
  EXPECT_TRUE(g->reasoning[0].starts_with("no contention: the ranks' threads waited 22%"))
      << g->reasoning[0];
  EXPECT_EQ(first_guess_json(*g)["predicted"], nlohmann::json());
}

// Issue 48: a wait over the limit is the settings' only when the threads also asked for more
// than the PUs (the verdict's demand test); another job's queue on those CPUs is not. The
// uncontended verdict, its first cpuset's wait raised to 40% as a burner beside it would.
TEST(FirstGuess, AWaitWithoutTheDemandTestIsNoContentionOfTheSettings) {
  const auto spec = spec_of(study("[1, 2]", "{threads: 1, workers: 0, bind_to: null}"));
  const auto base = baseline_params(spec);
  auto v = verdict("pytorch_opencv_uncontended_verdict.json");
  v["sustained"]["loads"][0]["main_wait_share"] = 0.4;
  ASSERT_FALSE(v.value("observed_oversubscribed", true));
  const auto g = first_guess(spec, machine(2, 2, 2), v, *base, 1605.0);
  ASSERT_TRUE(g) << g.error();
  EXPECT_FALSE(g->change);
  EXPECT_EQ(g->params, *base);
  ASSERT_EQ(g->reasoning.size(), 1u);
  // cpu_rate 1.42 + waiting_threads 0.662 on 2 PUs: 2.08 CPUs' worth, under 1.2 x 2.
  EXPECT_TRUE(g->reasoning[0].starts_with(
      "no contention of the settings' making: the ranks' threads waited 40% of their runnable "
      "time for a CPU on all their PUs (the verdict's limit: 25%), but asked for 2.08 CPUs' "
      "worth on 2 PU(s), not the 1.2x the verdict's demand test needs"))
      << g->reasoning[0];
}

// A queue the runtimes' threads made (gloo's beside each rank's one torch thread, the held-out
// ddpmlp grid's baseline): every thread passed the demand test, the settings' own did not. The
// guess says the runtimes queued them, not that the demand test failed on the whole.
TEST(FirstGuess, AQueueOfTheRuntimesThreadsIsNamedSo) {
  const auto spec = spec_of(study("[1, 2]", "{threads: 1, workers: 0, bind_to: null}"));
  const auto base = baseline_params(spec);
  auto v = verdict("pytorch_opencv_uncontended_verdict.json");
  auto& load = v["sustained"]["loads"][0];
  load["main_wait_share"] = 0.4;
  load["with_runtime_oversubscribed"] = true;
  load["cpu_rate"] = 1.9;  // 2.56 CPUs' worth with its queue: over 1.2 x 2 PUs
  load["runtime_cpu_rate"] = 0.3;
  load["knob_demand"] = 2.26;  // under it
  const auto g = first_guess(spec, machine(2, 2, 2), v, *base, 1605.0);
  ASSERT_TRUE(g) << g.error();
  EXPECT_FALSE(g->change);
  ASSERT_EQ(g->reasoning.size(), 1u);
  EXPECT_EQ(g->reasoning[0],
            "no contention of the settings' making: the ranks' threads waited 40% of their "
            "runnable time for a CPU on all their PUs (the verdict's limit: 25%) and asked for "
            "2.56 CPUs' worth on 2 PU(s), but the runtimes' own threads used 0.30 of it; without "
            "them the settings' threads asked for 2.26, under the 1.2x the verdict's demand test "
            "needs: the runtimes queued them; the setting as run stays");
}

TEST(FirstGuess, ValuesAreClampedIntoTheDomainsAndSaidSo) {
  const auto spec = spec_of(study("{type: int, low: 2, high: 4}"));
  const auto g =
      first_guess(spec, machine(2, 2, 2), verdict("pytorch_opencv_contended_verdict.json"),
                  *baseline_params(spec), 1250.0);
  ASSERT_TRUE(g) << g.error();
  EXPECT_EQ(g->params.at("threads"), ParamValue{std::int64_t{2}});
  EXPECT_EQ(g->params.at("workers"), ParamValue{std::int64_t{0}});
  EXPECT_TRUE(joined(g->reasoning).contains("threads=2 (clamped into its domain, for 1)"))
      << joined(g->reasoning);
}

TEST(FirstGuess, AVerdictWithoutDutyCyclesOrABaselineIsAnError) {
  const auto spec = spec_of(study());
  auto v = verdict("pytorch_opencv_contended_verdict.json");
  v.erase("duty_cycles");
  const auto g = first_guess(spec, machine(2, 2, 2), v, *baseline_params(spec), std::nullopt);
  ASSERT_FALSE(g);
  EXPECT_TRUE(g.error().contains("no `duty_cycles`")) << g.error();
  auto none = spec_of(study());
  none.enqueue.clear();
  const auto base = baseline_params(none);
  ASSERT_FALSE(base);
  EXPECT_EQ(base.error(),
            "g.yaml: no `enqueue:` entry, so no command as run (the baseline) to start the guess "
            "from");
}

// data/ddp_grid_baseline_verdict.json: the baseline verdict bench/grids/ddp/grid.json recorded
// (the command as run: unbound, 2 torch threads, 2 DataLoader workers, OpenCV's default, 504
// img/s), the round whose baseline run is the median. The grid's study, with its OpenCV pool
// declared (cv_threads) or not.
std::string ddp_study(bool cv_pool) {
  return std::string(R"(name: g
direction: maximize
launch: {mpirun: {n: 2, bind_to: '{bind_to}'}}
command: [/usr/bin/python3, train.py, '--threads={threads}', '--workers={workers}',
          '--cv-threads={cv_threads}']
knobs:
  threads: {knob: torch_intra_op_threads}
  workers: {knob: torch_dataloader_workers}
)") + (cv_pool ? "  cv_threads: {pool: opencv}\n" : "") +
         R"(objective: {regex: 'img/s: ([0-9.]+)'}
params:
  bind_to: [none, core]
  threads: [1, 2]
  workers: [0, 1, 2]
  cv_threads: [null, 1]
enqueue:
  - {bind_to: none, threads: 2, workers: 2, cv_threads: null}
)";
}

// By hand: b = 1. Demand per rank: compute = main 1 x 0.815 + openmp 2 x 0.395 + blas 1 x 0.91
// = 2.515, workers 8 x 0.133 = 1.064; workers' share 1 x 1.064 / 3.579 = 0.30 < 0.5: 0, so 1 - 0
// = 1 torch thread, OpenCV at 1 (cv_threads sizes the pool); one busy thread per rank: bound to
// its core. Every core was busy (1.97 CPUs of 2 >= 90%): predicted (2.515 + 1.064) / 1 = 3.58x,
// 504 x 3.58 = 1803 img/s; that grid measured 1,690 img/s for this setting (median of 6 runs)
// against 504 as run: 3.35x.
TEST(FirstGuess, AFullNodeIsPredictedByEachRanksDemandOverItsBudget) {
  const auto spec = spec_of(ddp_study(true));
  const auto base = baseline_params(spec);
  ASSERT_TRUE(base) << base.error();
  const auto g =
      first_guess(spec, machine(2, 2, 2), verdict("ddp_grid_baseline_verdict.json"), *base, 503.7);
  ASSERT_TRUE(g) << g.error();
  const std::map<std::string, ParamValue> want = {{"bind_to", "core"},
                                                  {"threads", std::int64_t{1}},
                                                  {"workers", std::int64_t{0}},
                                                  {"cv_threads", std::int64_t{1}}};
  EXPECT_EQ(g->params, want) << joined(g->reasoning);
  const auto text = joined(g->reasoning);
  EXPECT_TRUE(text.contains("workers = 1 x 1.06 / 3.58 = 0.30: below 0.5, so 0")) << text;
  EXPECT_NEAR(g->speedup, 0.815 + 2 * 0.395 + 0.91 + 8 * 0.133, 1e-6);
  EXPECT_TRUE(
      text.contains("every core was busy, and each rank's threads asked for 3.58 CPUs' "
                    "worth against a budget of 1"))
      << text;
  ASSERT_TRUE(g->predicted);
  EXPECT_NEAR(*g->predicted, 503.7 * g->speedup, 1e-6);
  // Without the OpenCV pool declared, cv_threads is no pool of the study's: left as run.
  const auto plain = first_guess(spec_of(ddp_study(false)), machine(2, 2, 2),
                                 verdict("ddp_grid_baseline_verdict.json"), *base, 503.7);
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(plain->params.at("cv_threads"), ParamValue{});
  EXPECT_EQ(plain->params.at("threads"), ParamValue{std::int64_t{1}});
}

// Issue 47: where the baseline's time is in an OpenBLAS that runs a kernel older than the CPU,
// the guess sets the study's kernel parameter to its best checked choice, and says why.
TEST(FirstGuess, TheBestCheckedKernelWhereTheBaselinesTimeIsInAStaleOpenBlas) {
  auto spec = spec_of(R"(name: k
command: [sh, -c, 'echo x: 1']
objective: {regex: 'x: ([0-9.]+)'}
env: {OPENBLAS_CORETYPE: '{core}'}
params:
  core: {type: kernel}
enqueue:
  - {core: null}
)");
  apply_stored_kernel_choices(spec, {{"core", {"SkylakeX", "Haswell"}}});
  nlohmann::json libraries = {{"cpu", "AVX-512"},
                              {"ranks", 2},
                              {"forcing_env", {{"OPENBLAS_CORETYPE", "Prescott"}}},
                              {"notes", nlohmann::json::array()},
                              {"libraries",
                               {{{"kind", "openblas"},
                                 {"name", "OpenBLAS 0.3.21"},
                                 {"path", "/usr/lib/libopenblas.so.0"},
                                 {"core", "Prescott"},
                                 {"threading", "pthreads"},
                                 {"threads", 1},
                                 {"ranks", 2},
                                 {"older_than_cpu", true},
                                 {"forced_by", "OPENBLAS_CORETYPE=Prescott"},
                                 {"text", "OpenBLAS 0.3.21 runs its Prescott kernels"}}}}};
  nlohmann::json time = {{"schema_version", 3},
                         {"cpu_time", {{"hz", 99}, {"samples", 200}, {"note", ""}}},
                         {"ranks",
                          {{{"rank", 0},
                            {"cpu_samples", 100},
                            {"cpu_libraries",
                             {{{"library", "libopenblas"}, {"share", 0.71}, {"samples", 71}},
                              {{"library", "python3.11"}, {"share", 0.29}, {"samples", 29}}}}}}}};
  FirstGuess g;
  g.params = {{"core", ParamValue{}}};
  g.reasoning = {"no contention: ...; the setting as run stays"};
  add_kernel_guess(spec, libraries, time, g);
  ASSERT_TRUE(g.change);
  EXPECT_EQ(std::get<std::string>(g.params.at("core")), "SkylakeX");
  ASSERT_EQ(g.reasoning.size(), 2u);
  EXPECT_EQ(g.reasoning[0],
            "kernel: rank 0 spent 71% of its CPU time in libopenblas, which runs Prescott kernels "
            "(OPENBLAS_CORETYPE=Prescott) on this AVX-512 CPU: core = SkylakeX, the best core "
            "type that passed the check (its speed-up is not in the prediction)");
  EXPECT_EQ(g.reasoning[1], "no contention: ...; the threads stay as run");
  EXPECT_EQ(first_guess_line(g, {{"core", ParamValue{}}}),
            "core=SkylakeX (" + g.reasoning[0] + ")");

  // Time elsewhere (5% in OpenBLAS), or no CPU time recorded: no kernel change.
  time["ranks"][0]["cpu_libraries"][0] = {
      {"library", "python3.11"}, {"share", 0.95}, {"samples", 95}};
  time["ranks"][0]["cpu_libraries"][1] = {
      {"library", "libopenblas"}, {"share", 0.05}, {"samples", 5}};
  FirstGuess elsewhere;
  add_kernel_guess(spec, libraries, time, elsewhere);
  EXPECT_FALSE(elsewhere.change);
  FirstGuess unrecorded;
  add_kernel_guess(spec, libraries, nlohmann::json::object(), unrecorded);
  EXPECT_FALSE(unrecorded.change);
  // A current kernel: nothing to change.
  libraries["libraries"][0]["older_than_cpu"] = false;
  libraries["libraries"][0]["forced_by"] = "";
  libraries["libraries"][0]["core"] = "SkylakeX";
  time["ranks"][0]["cpu_libraries"][0]["library"] = "libopenblas";
  FirstGuess current;
  add_kernel_guess(spec, libraries, time, current);
  EXPECT_FALSE(current.change);
}

// oneDNN capped below the CPU: its generated kernels' samples ("[anon]") count as its time, so a
// rank whose time is in those and libdnnl gets the best checked instruction set; an OpenBLAS
// kernel parameter of the same study is left alone when OpenBLAS is current.
TEST(FirstGuess, TheBestCheckedOneDnnInstructionSetWhereTheTimeIsInItsGeneratedCode) {
  auto spec = spec_of(R"(name: k
command: [sh, -c, 'echo x: 1']
objective: {regex: 'x: ([0-9.]+)'}
env: {ONEDNN_MAX_CPU_ISA: '{isa}', OPENBLAS_CORETYPE: '{core}'}
params:
  isa: {type: kernel, library: onednn}
  core: {type: kernel}
enqueue:
  - {isa: null, core: null}
)");
  apply_stored_kernel_choices(spec, {{"isa", {"AVX512_CORE_BF16", "AVX2"}}, {"core", {"Zen"}}});
  const nlohmann::json libraries = {{"cpu", "AVX-512"},
                                    {"ranks", 2},
                                    {"forcing_env", {{"ONEDNN_MAX_CPU_ISA", "SSE41"}}},
                                    {"notes", nlohmann::json::array()},
                                    {"libraries",
                                     {{{"kind", "onednn"},
                                       {"name", "oneDNN 2.6.3"},
                                       {"path", "/usr/lib/libdnnl.so.2"},
                                       {"core", "SSE41"},
                                       {"cpu_best", "AVX512_CORE_BF16"},
                                       {"ranks", 2},
                                       {"older_than_cpu", true},
                                       {"forced_by", "ONEDNN_MAX_CPU_ISA=SSE41"},
                                       {"text", "oneDNN 2.6.3 runs its SSE41 kernels"}},
                                      {{"kind", "openblas"},
                                       {"name", "OpenBLAS 0.3.21"},
                                       {"path", "/usr/lib/libopenblas.so.0"},
                                       {"core", "Cooperlake"},
                                       {"ranks", 2},
                                       {"older_than_cpu", false},
                                       {"forced_by", ""},
                                       {"text", "OpenBLAS 0.3.21 runs its Cooperlake kernels"}}}}};
  const nlohmann::json time = {{"schema_version", 3},
                               {"cpu_time", {{"hz", 99}, {"samples", 200}, {"note", ""}}},
                               {"ranks",
                                {{{"rank", 1},
                                  {"cpu_samples", 100},
                                  {"cpu_libraries",
                                   {{{"library", "[anon]"}, {"share", 0.5}, {"samples", 50}},
                                    {{"library", "python3.11"}, {"share", 0.3}, {"samples", 30}},
                                    {{"library", "libdnnl"}, {"share", 0.12}, {"samples", 12}},
                                    {{"library", "other"}, {"share", 0.08}, {"samples", 8}}}}}}}};
  FirstGuess g;
  g.params = {{"isa", ParamValue{}}, {"core", ParamValue{}}};
  add_kernel_guess(spec, libraries, time, g);
  ASSERT_TRUE(g.change);
  EXPECT_EQ(std::get<std::string>(g.params.at("isa")), "AVX512_CORE_BF16");
  EXPECT_EQ(g.params.at("core"), ParamValue{});
  ASSERT_EQ(g.reasoning.size(), 1u);
  EXPECT_EQ(
      g.reasoning[0],
      "kernel: rank 1 spent 62% of its CPU time in libdnnl and its generated code, which runs "
      "SSE41 kernels (ONEDNN_MAX_CPU_ISA=SSE41) on this AVX512_CORE_BF16 CPU: isa = "
      "AVX512_CORE_BF16, the best instruction set that passed the check (its speed-up is "
      "not in the prediction)");
}

}  // namespace
}  // namespace tune::tuner
