// `tune init` and the knob families beyond pool sizes (issue 38): the OpenMP team's wait policy
// and placement where the probe run saw the team (each runtime's own variable where it is
// mapped), the allocator where its library is installed, SMT slots and one thread per physical
// core on SMT machines, a core kept for the rank's own thread in a worker pool's ladder.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "probes/knob_catalog.h"
#include "tuner/init/init_study.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

using search::CategoricalDistribution;
using search::ParamValue;

const std::string k_jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
const std::string k_tcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

// render_init_study and its text, on an invented machine where `installed` are the files.
std::string init_text(InitRequest request, const ProgramInfo& program, const std::string& topology,
                      std::set<std::string> installed = {}) {
  request.file_exists = [installed](const std::string& path) { return installed.contains(path); };
  auto command = split_init_command(request.command);
  EXPECT_TRUE(command) << command.error();
  auto topo = probes::read_synthetic_topology(topology);
  EXPECT_TRUE(topo) << topo.error();
  auto text = render_init_study(request, *command, program, *topo, probes::knob_catalog());
  EXPECT_TRUE(text) << text.error();
  return text ? *text : std::string();
}

// The text with its wrapped comment lines joined ("...\n#   rest" -> "... rest").
std::string flat(std::string text) {
  for (std::size_t at; (at = text.find("\n#   ")) != std::string::npos;) text.replace(at, 5, " ");
  return text;
}

StudySpec load(const std::string& text) {
  auto spec = parse_study_spec(text, "init.yaml");
  EXPECT_TRUE(spec) << spec.error() << "\n" << text;
  return spec ? *spec : StudySpec{};
}

std::vector<ParamValue> choices(const StudySpec& spec, const std::string& name) {
  for (const auto& [n, d] : spec.space) {
    if (n == name) return std::get<CategoricalDistribution>(d).choices;
  }
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

bool has_param(const StudySpec& spec, const std::string& name) {
  return std::any_of(spec.space.begin(), spec.space.end(),
                     [&](const auto& p) { return p.first == name; });
}

std::string env_of(const StudySpec& spec, const std::string& name) {
  for (const auto& [n, v] : spec.env) {
    if (n == name) return v;
  }
  return "";
}

// A native program whose probe run mapped `runtime` (an OpenMP runtime's library finding).
ProgramInfo probed(const std::string& what, const std::string& tag) {
  ProgramInfo p;
  p.display = p.stem = "solver";
  p.frameworks = {tag};
  ProbeFindings f;
  f.ran = true;
  f.seconds = 1;
  f.ranks = 1;
  probes::LibraryFinding lib;
  lib.path = "/usr/lib/x86_64-linux-gnu/" + what;
  lib.what = what;
  lib.category = "openmp";
  lib.pools = {"openmp"};
  lib.program = tag;
  f.libraries.push_back(lib);
  p.probe = f;
  return p;
}

InitRequest solver() {
  InitRequest r;
  r.command = {"/opt/app/solver"};
  return r;
}

TEST(InitFamilies, OpenMpWaitAndPlacementWhereTheProbeSawTheTeam) {
  const auto gomp = load(init_text(solver(), probed("libgomp.so.1", "libgomp"), "pack:1 core:2 pu:1"));
  EXPECT_EQ(env_of(gomp, "OMP_WAIT_POLICY"), "{omp_wait_policy}");
  EXPECT_EQ(choices(gomp, "omp_wait_policy"),
            (std::vector<ParamValue>{std::monostate{}, std::string("active"), std::string("passive")}));
  EXPECT_EQ(env_of(gomp, "GOMP_SPINCOUNT"), "{gomp_spincount}");
  EXPECT_EQ(choices(gomp, "gomp_spincount"),
            (std::vector<ParamValue>{std::monostate{}, std::int64_t{0}, std::int64_t{30000000},
                                     std::string("infinite")}));
  EXPECT_FALSE(has_param(gomp, "kmp_blocktime"));  // LLVM/Intel OpenMP's
  EXPECT_EQ(choices(gomp, "omp_proc_bind").size(), 5u);
  // No SMT, one package: one place per core is the only kind that differs from floating.
  EXPECT_EQ(choices(gomp, "omp_places"),
            (std::vector<ParamValue>{std::monostate{}, std::string("cores")}));
  const auto llvm = load(init_text(solver(), probed("libomp.so.5", "libomp"), "pack:2 core:2 pu:2"));
  EXPECT_TRUE(has_param(llvm, "kmp_blocktime"));
  EXPECT_FALSE(has_param(llvm, "gomp_spincount"));
  EXPECT_EQ(choices(llvm, "omp_places"),
            (std::vector<ParamValue>{std::monostate{}, std::string("threads"), std::string("cores"),
                                     std::string("sockets")}));
  // Without a probe run nothing says the program has a team: not proposed, and said why.
  ProgramInfo unknown;
  unknown.display = unknown.stem = "solver";
  const std::string text = init_text(solver(), unknown, "pack:1 core:2 pu:1");
  EXPECT_FALSE(has_param(load(text), "omp_wait_policy"));
  EXPECT_NE(flat(text).find("proposed where tune init's probe run sees"), std::string::npos) << text;
  // The command's own value is kept as the baseline.
  InitRequest given = solver();
  given.command = {"mpirun", "-n", "1", "-x", "OMP_WAIT_POLICY=passive", "/opt/app/solver"};
  const auto kept = load(init_text(given, unknown, "pack:1 core:2 pu:1"));
  EXPECT_EQ(env_of(kept, "OMP_WAIT_POLICY"), "{omp_wait_policy}");
  EXPECT_EQ(kept.enqueue.at(0).at("omp_wait_policy"), ParamValue{std::string("passive")});
}

TEST(InitFamilies, AllocatorIsOfferedWhereItsLibraryIsInstalled) {
  ProgramInfo unknown;
  unknown.display = unknown.stem = "solver";
  const auto one = load(init_text(solver(), unknown, "pack:1 core:2 pu:1", {k_jemalloc}));
  EXPECT_EQ(env_of(one, "LD_PRELOAD"), "{allocator}");
  EXPECT_EQ(choices(one, "allocator"),
            (std::vector<ParamValue>{std::monostate{}, ParamValue{k_jemalloc}}));
  const auto both =
      load(init_text(solver(), unknown, "pack:1 core:2 pu:1", {k_jemalloc, k_tcmalloc}));
  EXPECT_EQ(choices(both, "allocator"),
            (std::vector<ParamValue>{std::monostate{}, ParamValue{k_tcmalloc}, ParamValue{k_jemalloc}}));
  // Every library at its default: glibc's malloc.
  ASSERT_FALSE(both.enqueue.empty());
  EXPECT_EQ(both.enqueue.at(0).at("allocator"), ParamValue{});
  const std::string none = init_text(solver(), unknown, "pack:1 core:2 pu:1");
  EXPECT_FALSE(has_param(load(none), "allocator"));
  EXPECT_EQ(env_of(load(none), "LD_PRELOAD"), "");
  EXPECT_NE(flat(none).find("none of its libraries is installed here"), std::string::npos) << none;
}

// A window objective line-buffers the program through LD_PRELOAD (libstdbuf): the allocator,
// whose null would drop the variable whole, is left out and said so.
TEST(InitFamilies, LineBufferingKeepsLdPreloadAndLeavesTheAllocatorOut) {
  ProgramInfo p = probed("libgomp.so.1", "libgomp");
  ProbeFindings& f = *p.probe;
  f.bounded = true;
  f.seconds = 10;
  f.bound_s = 10;
  ProgressLines lines;
  lines.source = "stdout";
  lines.regex = "step ([0-9]+)";
  lines.name = "step";
  lines.example = "step 10";
  lines.count = 40;
  lines.first_s = 1;
  lines.interval_s = 0.25;
  lines.span_s = 9;
  lines.rate = 4;
  f.progress.push_back(lines);
  InitRequest r = solver();
  r.line_buffering = LineBuffering{"/usr/libexec/coreutils/libstdbuf.so",
                                   {{"LD_PRELOAD", "/usr/libexec/coreutils/libstdbuf.so"},
                                    {"_STDBUF_O", "L"}}};
  const std::string text = init_text(r, p, "pack:1 core:2 pu:1", {k_jemalloc});
  const auto spec = load(text);
  EXPECT_FALSE(has_param(spec, "allocator"));
  EXPECT_EQ(env_of(spec, "LD_PRELOAD"), "/usr/libexec/coreutils/libstdbuf.so");
  EXPECT_NE(flat(text).find("allocator: not tuned, LD_PRELOAD carries libstdbuf"), std::string::npos)
      << text;
}

TEST(InitFamilies, SmtMachinesGetHardwareThreadSlotsAndACoreCountRung) {
  ProgramInfo unknown;
  unknown.display = unknown.stem = "solver";
  InitRequest r;
  r.command = {"mpirun", "-n", "1", "/opt/app/solver"};
  const auto smt = load(init_text(r, unknown, "pack:1 core:6 pu:2"));
  EXPECT_NE(std::find(smt.launch.extra.begin(), smt.launch.extra.end(), "{use_hwthread_cpus}"),
            smt.launch.extra.end());
  EXPECT_EQ(choices(smt, "use_hwthread_cpus"),
            (std::vector<ParamValue>{std::monostate{}, std::string("--use-hwthread-cpus")}));
  // 12 PUs, 6 cores: one thread per physical core is a rung of its own.
  EXPECT_EQ(choices(smt, "omp_num_threads"),
            (std::vector<ParamValue>{std::monostate{}, std::int64_t{1}, std::int64_t{2},
                                     std::int64_t{4}, std::int64_t{6}, std::int64_t{8},
                                     std::int64_t{12}}));
  const auto flat = load(init_text(r, unknown, "pack:1 core:6 pu:1"));
  EXPECT_FALSE(has_param(flat, "use_hwthread_cpus"));
  EXPECT_TRUE(flat.launch.extra.empty());
  // The user's own switch becomes the parameter, kept as the baseline.
  r.command = {"mpirun", "-n", "1", "--use-hwthread-cpus", "/opt/app/solver"};
  const auto given = load(init_text(r, unknown, "pack:1 core:6 pu:2"));
  EXPECT_EQ(std::count(given.launch.extra.begin(), given.launch.extra.end(), "--use-hwthread-cpus"), 0);
  EXPECT_EQ(given.enqueue.at(0).at("use_hwthread_cpus"), ParamValue{std::string("--use-hwthread-cpus")});
}

// A data loader's workers beside the rank's own thread: cores per rank less one is a rung
// (Lightning's rule: the rank keeps a core for its math and communication).
TEST(InitFamilies, WorkerPoolsGetTheCoresPerRankLessOne) {
  ProgramInfo torch;
  torch.display = "train.py";
  torch.stem = "train";
  torch.frameworks = {"torch"};
  InitRequest r;
  r.command = {"mpirun", "-n", "2", "/usr/bin/python3", "/x/t.py", "--workers", "1"};
  const auto spec = load(init_text(r, torch, "pack:1 core:8 pu:1"));
  // 4 cores per rank: 0, 1, 2, 4 and 3.
  EXPECT_EQ(choices(spec, "workers"),
            (std::vector<ParamValue>{std::monostate{}, std::int64_t{0}, std::int64_t{1},
                                     std::int64_t{2}, std::int64_t{3}, std::int64_t{4}}));
}

}  // namespace
}  // namespace tune::tuner

namespace tune::tuner {
namespace {

// Ranks per node changes what the job computes (its global batch): written under the launch as
// an option with its choices on this machine, never as a parameter of its own.
TEST(InitFamilies, RanksPerNodeIsAnOptionThatSaysWhatTheGlobalBatchThenMeans) {
  InitRequest r = solver();
  r.command = {"mpirun", "-n", "2", "/opt/app/solver"};
  ProgramInfo unknown;
  unknown.display = unknown.stem = "solver";
  const std::string text = init_text(r, unknown, "pack:1 core:8 pu:1");
  std::string joined = text;
  for (std::size_t at; (at = joined.find("\n    #   ")) != std::string::npos;)
    joined.replace(at, 9, " ");
  EXPECT_NE(joined.find("# Ranks per node is a knob too, not tuned here: the job's global batch "
                        "is ranks x the per-rank batch"),
            std::string::npos)
      << text;
  EXPECT_NE(joined.find("ranks: [1, 2, 4, 8] (1 to the 8 cores, doubling)"), std::string::npos)
      << text;
  EXPECT_FALSE(has_param(load(text), "ranks"));
  EXPECT_EQ(load(text).launch.n, "2");
}

}  // namespace
}  // namespace tune::tuner
