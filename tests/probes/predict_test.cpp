// Prediction before launch on invented machines: Open MPI's default binding, library defaults
// that follow the bound cpuset, and the precedence of flags over environment.
#include <gtest/gtest.h>

#include "probes/predict.h"

namespace tune::probes {
namespace {

Topology machine(const std::string& desc) {
  auto t = read_synthetic_topology(desc);
  EXPECT_TRUE(t) << t.error();
  return *t;
}

LaunchPlan mpirun(int np, std::string bind, std::vector<std::string> program,
                  std::map<std::string, std::string> env = {}) {
  LaunchPlan p;
  p.uses_mpirun = true;
  p.ranks_per_node = np;
  p.bind_to = std::move(bind);
  p.program_argv = std::move(program);
  p.env = std::move(env);
  return p;
}

PoolModel pool_model(std::string pool, std::string flag) {
  PoolModel p;
  p.pool = std::move(pool);
  p.flag = std::move(flag);
  return p;
}

const ThreadGroup* group(const RankPrediction& r, const std::string& name) {
  for (const ThreadGroup& g : r.groups)
    if (g.name == name) return &g;
  return nullptr;
}

const std::vector<std::string> k_all_one = {"tune-trainer",
                                            "--iterator-workers",
                                            "0",
                                            "--omp-threads",
                                            "1",
                                            "--blas-threads",
                                            "1",
                                            "--opencv-threads",
                                            "1"};

TEST(Predict, TwoRanksOnTwoCoresAllOneIsNotOversubscribed) {
  const Prediction p = predict(machine("pack:1 core:2 pu:1"), mpirun(2, "", k_all_one));
  EXPECT_EQ(p.bind_to, "core");  // Open MPI 4.1: np <= 2 binds to core
  EXPECT_EQ(p.map_by, "core");
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].cpuset, std::vector<int>{0});
  EXPECT_EQ(p.ranks[1].cpuset, std::vector<int>{1});
  EXPECT_EQ(p.ranks[0].busy_threads, 1);
  EXPECT_FALSE(p.oversubscribed);
  EXPECT_EQ(p.idle_core_count, 0);
  EXPECT_DOUBLE_EQ(prediction_constraint(p), 0.0);
  EXPECT_EQ(p.summary, "ok: 2 ranks, 2 busy threads on 2 PUs (bind core)");
}

TEST(Predict, UnboundLibraryDefaultsFollowTheVisibleCpuset) {
  // --bind-to none: every library sees both PUs and starts one thread per PU.
  const Prediction p = predict(machine("pack:1 core:2 pu:1"),
                               mpirun(2, "none", {"tune-trainer", "--iterator-workers", "0"}));
  ASSERT_EQ(p.ranks.size(), 2u);
  const RankPrediction& r = p.ranks[0];
  EXPECT_EQ(r.cpuset, (std::vector<int>{0, 1}));
  ASSERT_NE(group(r, "blas"), nullptr);
  EXPECT_EQ(group(r, "blas")->source, "library default");
  EXPECT_EQ(group(r, "blas")->threads, 1);  // a pool of 2 adds one thread to the caller
  EXPECT_EQ(group(r, "blas")->busy, 1);
  EXPECT_EQ(group(r, "openmp")->busy + group(r, "opencv")->busy, 1);  // they take turns
  EXPECT_EQ(r.busy_threads, 3);
  EXPECT_EQ(r.threads_alive, 4);
  EXPECT_TRUE(p.oversubscribed);
  EXPECT_EQ(p.cpusets.size(), 1u);
  EXPECT_EQ(p.cpusets[0].busy_threads, 6);
  EXPECT_DOUBLE_EQ(prediction_constraint(p), 2.0);
  EXPECT_NE(p.summary.find("blas threads unset -> defaulted to 2"), std::string::npos) << p.summary;
  EXPECT_EQ(p.summary.rfind("oversubscribed: 2 ranks, 6 busy threads on 2 PUs (bind none); ", 0),
            0u)
      << p.summary;
}

TEST(Predict, TrainerDefaultsAreFlaggedOnTheSmallMachine) {
  // Nothing set: the trainer's 2 iterator workers per rank alone overfill a 1-PU core binding.
  const Prediction p = predict(machine("pack:1 core:2 pu:1"), mpirun(2, "", {"tune-trainer"}));
  EXPECT_TRUE(p.oversubscribed);
  EXPECT_EQ(group(p.ranks[0], "iterator_workers")->source, "program default");
  ProgramModel chainer;  // a study's `workers: {pool: iterator_workers}`, left unset
  chainer.pools.push_back(pool_model("iterator_workers", "--loaderjob"));
  const Prediction q =
      predict(machine("pack:1 core:2 pu:1"), mpirun(2, "none", {"trainer"}), chainer);
  // Chainer's MultiprocessIterator default: one per PU of the machine.
  EXPECT_EQ(group(q.ranks[0], "iterator_workers")->threads, 2);
  EXPECT_EQ(group(q.ranks[0], "iterator_workers")->source, "library default");
}

TEST(Predict, TwoSocketsFourRanksBindToSocketByDefault) {
  const Topology t = machine("pack:2 [numa] core:8 pu:2");
  const Prediction p = predict(t, mpirun(4, "", k_all_one));
  EXPECT_EQ(p.bind_to, "socket");  // np > 2
  EXPECT_EQ(p.map_by, "socket");
  ASSERT_EQ(p.ranks.size(), 4u);
  EXPECT_EQ(p.ranks[0].cpuset.front(), 0);
  EXPECT_EQ(p.ranks[1].cpuset.front(), 16);  // round robin over packages
  EXPECT_EQ(p.ranks[2].cpuset.size(), 16u);
  ASSERT_EQ(p.cpusets.size(), 2u);
  EXPECT_EQ(p.cpusets[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(p.cpusets[0].busy_threads, 2);
  EXPECT_FALSE(p.oversubscribed);
  EXPECT_EQ(p.idle_core_count, 12);  // 8 cores per package, 2 busy threads each
}

TEST(Predict, OmpNumThreadsAlsoSizesOpenBlas) {
  const Topology t = machine("pack:2 [numa] core:8 pu:2");
  const Prediction p = predict(
      t, mpirun(4, "", {"tune-trainer", "--iterator-workers", "0"}, {{"OMP_NUM_THREADS", "8"}}));
  const RankPrediction& r = p.ranks[0];
  EXPECT_EQ(group(r, "blas")->source, "env");
  EXPECT_EQ(group(r, "blas")->detail, "OMP_NUM_THREADS=8");
  EXPECT_EQ(group(r, "blas")->threads, 7);
  EXPECT_EQ(group(r, "opencv")->source, "library default");
  EXPECT_EQ(group(r, "opencv")->threads, 15);  // one per PU of the package
  EXPECT_EQ(r.busy_threads, 1 + 7 + 15);
  EXPECT_TRUE(p.oversubscribed);
}

TEST(Predict, FlagsWinOverEnvironmentAndEnvIsCappedForOpenBlas) {
  const Topology t = machine("pack:1 core:2 pu:1");
  const Prediction p =
      predict(t, mpirun(2, "core",
                        {"x", "--iterator-workers=0", "--omp-threads", "1", "--blas-threads", "3"},
                        {{"OPENBLAS_NUM_THREADS", "1"}, {"OPENCV_FOR_THREADS_NUM", "1"}}));
  EXPECT_EQ(group(p.ranks[0], "blas")->source, "flag");
  EXPECT_EQ(group(p.ranks[0], "blas")->threads, 2);
  EXPECT_TRUE(p.oversubscribed);
  const Prediction q =
      predict(t, mpirun(2, "core", {"x", "--iterator-workers", "0", "--omp-threads", "1"},
                        {{"OPENBLAS_NUM_THREADS", "4"},
                         {"GOTO_NUM_THREADS", "9"},
                         {"OPENCV_FOR_THREADS_NUM", "1"}}));
  const ThreadGroup* blas = group(q.ranks[0], "blas");
  EXPECT_EQ(blas->detail, "OPENBLAS_NUM_THREADS=4 (capped at 1 PUs)");
  EXPECT_EQ(blas->threads, 0);
  EXPECT_FALSE(q.oversubscribed);
}

TEST(Predict, OpenCvEnvironmentIsIgnoredByTheTbbBuildUnlessTheProgramAppliesIt) {
  const Topology t = machine("pack:1 core:4 pu:1");
  const LaunchPlan plan = mpirun(
      1, "none", {"x", "--iterator-workers", "0", "--omp-threads", "1", "--blas-threads", "1"},
      {{"OPENCV_FOR_THREADS_NUM", "1"}});
  // Any program but the trainer: Debian's OpenCV (TBB) ignores the variable.
  ProgramModel tbb_program = trainer_program_model();
  tbb_program.program = "any";
  const Prediction tbb = predict(t, plan, tbb_program);
  const ThreadGroup* cv = group(tbb.ranks[0], "opencv");
  ASSERT_NE(cv, nullptr);
  EXPECT_EQ(cv->source, "library default");
  EXPECT_EQ(cv->threads, 3);
  EXPECT_EQ(cv->detail,
            "OPENCV_FOR_THREADS_NUM=1 not read by this program (opencv_for_threads_num applies to "
            "tune-trainer) -> one per PU of the 4-PU cpuset");
  const Prediction p = predict(t, plan);  // the trainer calls cv::setNumThreads with it
  EXPECT_EQ(group(p.ranks[0], "opencv")->source, "env");
  EXPECT_EQ(p.ranks[0].busy_threads, 1);
}

// An opaque program (a PyTorch DDP script) is predicted from the pools the study declares, not
// from its name: `threads: {pool: torch_intra_op}` and `--threads {threads}` on 2 PUs, 2 ranks.
TEST(Predict, AnExternalProgramsDeclaredPoolIsSizedByItsFlagOrItsLibraryDefault) {
  const Topology t = machine("pack:1 core:2 pu:1");
  ProgramModel torch;
  torch.program = "torch";
  torch.pools.push_back(pool_model("torch_intra_op", "--threads"));
  const Prediction one =
      predict(t, mpirun(2, "", {"python3", "train.py", "--threads", "1"}), torch);
  EXPECT_FALSE(one.oversubscribed) << one.summary;
  EXPECT_EQ(one.busy_threads, 2);  // each rank's main thread is its one intra-op thread
  EXPECT_EQ(group(one.ranks[0], "torch_intra_op")->source, "flag");
  // Unset: PyTorch's default, one per physical core of the machine whatever the binding.
  const Prediction unset = predict(t, mpirun(2, "none", {"python3", "train.py"}), torch);
  const ThreadGroup* intra = group(unset.ranks[0], "torch_intra_op");
  ASSERT_NE(intra, nullptr);
  EXPECT_EQ(intra->source, "library default");
  EXPECT_EQ(intra->threads, 1);  // 2 cores: the main thread and one more
  EXPECT_TRUE(unset.oversubscribed) << unset.summary;
  // Bound to a core each (Open MPI's default for 2 ranks), the team of 2 outnumbers its one PU
  // and takes turns on it (libgomp's throttled spin): not busy beside the main thread.
  const Prediction bound = predict(t, mpirun(2, "", {"python3", "train.py"}), torch);
  EXPECT_EQ(group(bound.ranks[0], "torch_intra_op")->threads, 1);
  EXPECT_EQ(group(bound.ranks[0], "torch_intra_op")->busy, 0);
  EXPECT_FALSE(bound.oversubscribed) << bound.summary;
  // OMP_NUM_THREADS sizes the same team (PyTorch's intra-op pool is its OpenMP pool): predicted
  // once, as torch_intra_op.
  const Prediction env =
      predict(t, mpirun(2, "", {"python3", "train.py"}, {{"OMP_NUM_THREADS", "1"}}), torch);
  EXPECT_EQ(group(env.ranks[0], "openmp"), nullptr);
  EXPECT_EQ(group(env.ranks[0], "torch_intra_op")->detail, "OMP_NUM_THREADS=1");
  EXPECT_FALSE(env.oversubscribed) << env.summary;
}

TEST(Predict, AnUndeclaredProgramStartsOnlyThePoolsItsEnvironmentSets) {
  const Topology t = machine("pack:1 core:2 pu:1");
  const ProgramModel opaque;  // no knobs declared, not the trainer
  const Prediction bare =
      predict(t, mpirun(2, "none", {"python3", "train.py", "--threads", "4"}), opaque);
  EXPECT_EQ(bare.ranks[0].groups.size(), 1u) << "main only: --threads means nothing undeclared";
  EXPECT_FALSE(bare.oversubscribed);
  const Prediction omp =
      predict(t, mpirun(2, "none", {"python3", "train.py"}, {{"OMP_NUM_THREADS", "2"}}), opaque);
  ASSERT_NE(group(omp.ranks[0], "openmp"), nullptr);
  EXPECT_EQ(group(omp.ranks[0], "openmp")->busy, 1);
  EXPECT_EQ(group(omp.ranks[0], "blas"), nullptr)
      << "OMP_NUM_THREADS adds only the pool it controls";
  EXPECT_TRUE(omp.oversubscribed);  // unbound: 2 ranks x 2 busy threads on the 2 PUs
}

// `program: {pools: [blas], runtime_threads: 2}` (hpcc, linked to OpenBLAS): the BLAS pool the
// program starts with nothing set is predicted at OpenBLAS's default, one thread per PU of the
// rank's cpuset; the runtimes' own threads are shown and never counted.
TEST(Predict, AProgramsDeclaredPoolsAndRuntimeThreads) {
  const Topology t = machine("pack:1 core:2 pu:1");
  ProgramModel hpcc;
  hpcc.pools.push_back(PoolModel{"blas", "", false, std::nullopt, "", std::nullopt});
  hpcc.runtime_threads = 2;
  const Prediction unbound = predict(t, mpirun(2, "none", {"hpcc"}), hpcc);
  ASSERT_NE(group(unbound.ranks[0], "blas"), nullptr);
  EXPECT_EQ(group(unbound.ranks[0], "blas")->threads, 1) << "2 PUs: the caller and one worker";
  EXPECT_EQ(group(unbound.ranks[0], "blas")->detail, "unset -> one per PU of the 2-PU cpuset");
  ASSERT_NE(group(unbound.ranks[0], k_runtime_group), nullptr);
  EXPECT_EQ(group(unbound.ranks[0], k_runtime_group)->threads, 2);
  EXPECT_EQ(group(unbound.ranks[0], k_runtime_group)->busy, 0);
  EXPECT_EQ(unbound.ranks[0].threads_alive, 4);
  EXPECT_TRUE(unbound.oversubscribed) << unbound.summary;  // 2 ranks x 2 spinning threads
  EXPECT_NE(unbound.summary.find("rank 0: blas threads unset -> defaulted to 2; 2 runtime "
                                 "threads per rank not counted (no knob controls them)"),
            std::string::npos)
      << unbound.summary;
  const Prediction bound = predict(t, mpirun(2, "core", {"hpcc"}), hpcc);
  EXPECT_EQ(group(bound.ranks[0], "blas"), nullptr) << "1 PU: the caller alone";
  EXPECT_FALSE(bound.oversubscribed) << bound.summary;
  const Prediction one =
      predict(t, mpirun(2, "none", {"hpcc"}, {{"OPENBLAS_NUM_THREADS", "1"}}), hpcc);
  EXPECT_FALSE(one.oversubscribed) << one.summary;
  // However busy the runtime threads were measured, they stay out of the verdict.
  Prediction learned = bound;
  for (RankPrediction& r : learned.ranks)
    for (ThreadGroup& g : r.groups)
      if (g.name == k_runtime_group) g.load = 2.0;
  summarize_prediction(t, learned);
  EXPECT_FALSE(learned.oversubscribed) << learned.summary;
  EXPECT_DOUBLE_EQ(learned.cpusets[0].runtime_load, 2.0);
  EXPECT_EQ(learned.to_json()["cpusets"][0]["runtime_load"], 2.0);
}

TEST(Predict, CommThreadAndIteratorWorkersAdd) {
  auto args = k_all_one;
  args[2] = "1";
  args.push_back("--double-buffering");
  const Prediction p = predict(machine("pack:1 core:4 pu:1"), mpirun(2, "", args));
  EXPECT_EQ(p.ranks[0].busy_threads, 3);  // main + 1 worker + comm, on a 1-PU core binding
  EXPECT_NE(group(p.ranks[0], "comm"), nullptr);
  EXPECT_TRUE(p.oversubscribed);
  EXPECT_EQ(p.idle_core_count, 2);
  EXPECT_EQ(p.idle_cores, (std::vector<int>{2, 3}));
}

TEST(Predict, MoreRanksThanCoresDefaultsToNoBinding) {
  const Prediction p = predict(machine("pack:1 core:2 pu:1"), mpirun(4, "", k_all_one));
  EXPECT_EQ(p.bind_to, "none");
  EXPECT_EQ(p.cpusets.size(), 1u);
  EXPECT_EQ(p.cpusets[0].busy_threads, 4);
  EXPECT_TRUE(p.oversubscribed);
  const Prediction q = predict(machine("pack:1 core:2 pu:1"), mpirun(4, "core", k_all_one));
  ASSERT_EQ(q.notes.size(), 1u);
  EXPECT_NE(q.notes[0].find("overload-allowed"), std::string::npos);
  EXPECT_EQ(q.ranks[2].cpuset, std::vector<int>{0});  // wrapped round
}

TEST(Predict, HwthreadBindingUsesSiblings) {
  const Topology t = machine("pack:2 [numa] core:8 pu:2");
  const Prediction p = predict(t, mpirun(2, "hwthread", k_all_one));
  EXPECT_EQ(p.ranks[0].cpuset, std::vector<int>{0});
  EXPECT_EQ(p.ranks[1].cpuset, std::vector<int>{2});  // mapped by core, first PU of core 1
  const Prediction q = predict(t, mpirun(2, "core", k_all_one));
  EXPECT_EQ(q.ranks[0].cpuset, (std::vector<int>{0, 1}));
  EXPECT_EQ(q.ranks[1].cpuset, (std::vector<int>{2, 3}));
  LaunchPlan pe = mpirun(2, "", k_all_one);
  pe.map_by = "core:PE=4";
  const Prediction r = predict(t, pe);
  EXPECT_EQ(r.bind_to, "core");
  EXPECT_EQ(r.ranks[1].cpuset.size(), 8u);  // 4 cores x 2 PUs
  EXPECT_EQ(r.ranks[1].cpuset.front(), 8);
}

TEST(Predict, PlainCommandIsOneUnboundRank) {
  LaunchPlan plan = launch_plan_from_argv({"./train", "--omp-threads", "2"}, {});
  EXPECT_FALSE(plan.uses_mpirun);
  const Prediction p = predict(machine("pack:1 core:2 pu:1"), plan);
  EXPECT_EQ(p.bind_to, "none");
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].cpuset, (std::vector<int>{0, 1}));
}

TEST(LaunchPlanFromArgv, ReadsMpirunOptionsAndTheProgram) {
  const LaunchPlan p = launch_plan_from_argv({"/usr/bin/mpirun",
                                              "--allow-run-as-root",
                                              "-n",
                                              "4",
                                              "--bind-to",
                                              "none",
                                              "--map-by",
                                              "socket",
                                              "-x",
                                              "OMP_NUM_THREADS=3",
                                              "-x",
                                              "PATH",
                                              "--mca",
                                              "btl",
                                              "self,vader",
                                              "--oversubscribe",
                                              "--",
                                              "./tt",
                                              "--blas-threads",
                                              "2"},
                                             {{"HOME", "/root"}});
  EXPECT_TRUE(p.uses_mpirun);
  EXPECT_EQ(p.ranks_per_node, 4);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.bind_to, "none");
  EXPECT_EQ(p.map_by, "socket");
  EXPECT_EQ(p.env.at("OMP_NUM_THREADS"), "3");
  EXPECT_EQ(p.env.at("HOME"), "/root");
  EXPECT_EQ(p.program_argv, (std::vector<std::string>{"./tt", "--blas-threads", "2"}));
  const LaunchPlan q =
      launch_plan_from_argv({"mpiexec", "-np", "16", "-N", "8", "--bind-to=core", "a.out"}, {});
  EXPECT_EQ(q.ranks_per_node, 8);
  EXPECT_EQ(q.nodes, 2);
  EXPECT_EQ(q.bind_to, "core");
  EXPECT_EQ(q.program_argv, std::vector<std::string>{"a.out"});
  const LaunchPlan h = launch_plan_from_argv({"mpirun", "-n", "4", "-H", "a:2,b:2", "x"}, {});
  EXPECT_EQ(h.nodes, 2);
  EXPECT_EQ(h.ranks_per_node, 2);
}

TEST(LaunchPlanFromArgv, TotalRanksAreN) {
  EXPECT_EQ(launch_plan_from_argv({"mpiexec", "-np", "16", "-N", "8", "a.out"}, {}).n, 16);
  EXPECT_EQ(launch_plan_from_argv({"mpirun", "-N", "2", "-H", "a,b,c", "a.out"}, {}).n, 6);
  EXPECT_EQ(launch_plan_from_argv({"mpirun", "a.out"}, {}).n, 1);
  EXPECT_EQ(launch_plan_from_argv({"./a.out", "-n", "4"}, {}).n, 1) << "not mpirun";
}

TEST(ReadMpirunOptions, LaterOptionsWinAndTheProgramIndexIsReturned) {
  MpirunOptions o;
  o.bind_to = "core";
  o.n = "2";
  const std::vector<std::string> args = {"--bind-to", "none", "-np",       "x",     "--mca", "btl",
                                         "tcp",       "-x",   "A=1",       "-x",    "B",     "-H",
                                         "a:2,b",     "prog", "--bind-to", "socket"};
  EXPECT_EQ(read_mpirun_options(args, o), 13u) << "prog";
  EXPECT_EQ(o.bind_to, "none");
  EXPECT_EQ(o.n, "x");
  EXPECT_EQ(o.host, "a:2,b");
  EXPECT_EQ(o.env, (std::map<std::string, std::string>{{"A", "1"}}));
  MpirunOptions none;
  EXPECT_EQ(read_mpirun_options({}, none), 0u);
  EXPECT_EQ(read_mpirun_options({"--oversubscribe", "--"}, none), 2u) << "no program";
  EXPECT_EQ(read_mpirun_options({"-n"}, none), 0u) << "a value-less option is taken as the program";
}

TEST(LaunchPlanFromMpirun, ShapeFromNNpernodeAndHosts) {
  MpirunOptions o;
  o.n = "x";  // mpirun would refuse it: as if not given
  o.host = "a:2,b:2";
  o.env = {{"OMP_NUM_THREADS", "3"}};
  const LaunchPlan p = launch_plan_from_mpirun(o, {"prog"}, {{"OMP_NUM_THREADS", "1"}, {"H", "h"}});
  EXPECT_TRUE(p.uses_mpirun);
  EXPECT_EQ(p.n, 4);  // without -n, mpirun starts one rank per slot
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.ranks_per_node, 2);
  EXPECT_EQ(p.env, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", "3"}, {"H", "h"}}));
  o.n = "6";
  o.npernode = "4";
  const LaunchPlan q = launch_plan_from_mpirun(o, {"prog"}, {});
  EXPECT_EQ(q.n, 6);
  EXPECT_EQ(q.nodes, 2);
  EXPECT_EQ(q.ranks_per_node, 4);
}

TEST(Predict, JsonCarriesSchemaAndBreakdown) {
  const Prediction p = predict(machine("pack:1 core:2 pu:1"), mpirun(2, "none", {"tune-trainer"}));
  const auto j = p.to_json();
  EXPECT_EQ(j["schema_version"], k_prediction_schema_version);
  EXPECT_EQ(j["oversubscribed"], true);
  EXPECT_EQ(j["ranks"][0]["cpuset"], "0-1");
  EXPECT_EQ(j["ranks"][0]["groups"][0]["name"], "main");
  EXPECT_EQ(j["summary"], p.summary);
}

}  // namespace
}  // namespace tune::probes

namespace tune::probes {
namespace {

// The reader beside to_json: what the probes stored comes back as they made it, and a stored
// prediction that is not as they write it is an error naming the key.
TEST(PredictionJson, ReadsBackWhatToJsonWrote) {
  const Prediction p = predict(machine("pack:1 core:2 pu:1"),
                               mpirun(2, "none", {"tune-trainer", "--iterator-workers", "0"}));
  const auto back = prediction_from_json(p.to_json());
  ASSERT_TRUE(back) << back.error().key << " " << back.error().why;
  EXPECT_EQ(back->to_json(), p.to_json());
  ASSERT_EQ(back->ranks.size(), p.ranks.size());
  EXPECT_EQ(back->ranks[0].cpuset, p.ranks[0].cpuset);
  ASSERT_EQ(back->ranks[0].groups.size(), p.ranks[0].groups.size());
  EXPECT_EQ(back->ranks[0].groups[1].detail, p.ranks[0].groups[1].detail);
  EXPECT_EQ(back->summary, p.summary);
}

TEST(PredictionJson, AMalformedPredictionNamesTheKey) {
  const auto key_of = [](const nlohmann::json& j) {
    const auto r = prediction_from_json(j);
    return r ? std::string("read") : r.error().key + " " + r.error().why;
  };
  EXPECT_EQ(key_of("oops"), " is not a JSON object");
  EXPECT_EQ(key_of({{"schema_version", 2}}), ".schema_version is 2, this tune reads 1");
  EXPECT_EQ(key_of({{"ranks", 3}}), ".ranks is not a list");
  EXPECT_EQ(key_of({{"ranks", {{{"groups", {{{"name", "main"}}}}}}}}),
            ".ranks[0].groups[0].busy is not a whole number of threads");
  EXPECT_EQ(key_of({{"ranks", {{{"groups", {{{"busy", 1}}}}}}}}),
            ".ranks[0].groups[0].name is not a string");
  EXPECT_EQ(key_of({{"pus", "two"}}), ".pus is not of the type tune's probes write");
  EXPECT_EQ(key_of(nlohmann::json::object()), "read");  // an older row lacks what it lacks
}

}  // namespace
}  // namespace tune::probes
