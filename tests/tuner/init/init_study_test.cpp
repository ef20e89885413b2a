// `tune init`'s study writer on invented machines and programs: which knobs it picks, their
// ranges, the rewritten command, the baselines, and that every text it writes loads as a study.
#include <gtest/gtest.h>

#include <algorithm>

#include "probes/knob_catalog.h"
#include "tuner/init/init_study.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

using search::CategoricalDistribution;
using search::ParamValue;

probes::Topology machine(const std::string& description) {
  auto topo = probes::read_synthetic_topology(description);
  EXPECT_TRUE(topo) << topo.error();
  return *topo;
}

ProgramInfo torch_script() {
  ProgramInfo p;
  p.display = "train.py";
  p.stem = "train";
  p.frameworks = {"torch"};
  return p;
}

// render_init_study on `argv`, then the normal parser on its text.
StudySpec init_and_load(InitRequest request, const ProgramInfo& program,
                        const std::string& topology = "pack:1 core:2 pu:1") {
  // No allocator library installed, whatever this machine has (tests/tuner/init/
  // init_families_test.cpp gives them).
  request.file_exists = [](const std::string&) { return false; };
  auto command = split_init_command(request.command);
  EXPECT_TRUE(command) << command.error();
  auto text =
      render_init_study(request, *command, program, machine(topology), probes::knob_catalog());
  EXPECT_TRUE(text) << text.error();
  auto spec = parse_study_spec(*text, "init.yaml");
  EXPECT_TRUE(spec) << spec.error() << "\n" << *text;
  return *spec;
}

std::string init_error(InitRequest request, const ProgramInfo& program) {
  auto command = split_init_command(request.command);
  if (!command) return command.error();
  auto text = render_init_study(request, *command, program, machine("pack:1 core:2 pu:1"),
                                probes::knob_catalog());
  EXPECT_FALSE(text) << *text;
  return text ? "" : text.error();
}

const search::Distribution* param(const StudySpec& spec, const std::string& name) {
  for (const auto& [n, d] : spec.space) {
    if (n == name) return &d;
  }
  return nullptr;
}

std::vector<ParamValue> choices(const StudySpec& spec, const std::string& name) {
  const auto* d = param(spec, name);
  EXPECT_NE(d, nullptr) << name;
  return d ? std::get<CategoricalDistribution>(*d).choices : std::vector<ParamValue>{};
}

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST(InitStudy, TorchScriptUnderMpirunKeepsItsSettingsAsTheBaseline) {
  InitRequest r;
  r.command = {"mpirun",  "-n",        "2", "--bind-to",   "none",     "/usr/bin/python3",
               "/x/t.py", "--threads", "2", "--workers=2", "--epochs", "1"};
  const auto spec = init_and_load(r, torch_script());
  EXPECT_EQ(spec.name, "train");
  EXPECT_TRUE(spec.objective.wall_time);
  EXPECT_EQ(spec.direction, search::Direction::minimize);
  EXPECT_TRUE(spec.probes.enabled);
  EXPECT_EQ(spec.launch.n, "2");
  EXPECT_EQ(spec.launch.bind_to, "{bind_to}");
  EXPECT_EQ(spec.command, (std::vector<std::string>{"/usr/bin/python3", "/x/t.py", "--epochs", "1",
                                                    "--threads={threads}", "--workers={workers}"}));
  // Threads 1..PUs per rank (1 here), plus the user's 2; workers from 0; null = the default.
  EXPECT_EQ(choices(spec, "threads"),
            (std::vector<ParamValue>{std::monostate{}, std::int64_t{1}, std::int64_t{2}}));
  EXPECT_EQ(choices(spec, "workers"), (std::vector<ParamValue>{std::monostate{}, std::int64_t{0},
                                                               std::int64_t{1}, std::int64_t{2}}));
  // No SMT here: no hwthread binding.
  const auto bind = choices(spec, "bind_to");
  EXPECT_EQ(std::count(bind.begin(), bind.end(), ParamValue{std::string("hwthread")}), 0);
  EXPECT_EQ(bind.front(), ParamValue{});
  // The probes learn what the script's flags size.
  ASSERT_EQ(spec.probes.knobs.size(), 2u);
  EXPECT_EQ(spec.probes.knobs[0].param, "threads");
  EXPECT_EQ(spec.probes.knobs[0].knob, "torch_intra_op_threads");
  EXPECT_EQ(spec.probes.knobs[1].knob, "torch_dataloader_workers");
  // PyTorch sizes its own OpenMP team: no OMP/BLAS variables next to the threads flag.
  EXPECT_TRUE(spec.env.empty());
  ASSERT_EQ(spec.enqueue.size(), 3u);
  EXPECT_EQ(spec.enqueue[0].at("threads"), ParamValue{std::int64_t{2}});
  EXPECT_EQ(spec.enqueue[0].at("workers"), ParamValue{std::int64_t{2}});
  EXPECT_EQ(spec.enqueue[0].at("bind_to"), ParamValue{std::string("none")});
  for (const auto& [name, value] : spec.enqueue[1]) EXPECT_EQ(value, ParamValue{}) << name;
  // Then today's command with each pool at its smallest: the usual cure, measured early.
  EXPECT_EQ(spec.enqueue[2].at("threads"), ParamValue{std::int64_t{1}});
  EXPECT_EQ(spec.enqueue[2].at("workers"), ParamValue{std::int64_t{0}});
  EXPECT_EQ(spec.enqueue[2].at("bind_to"), ParamValue{std::string("none")});
}

// A pool default measured on this machine (torch.get_num_threads() with nothing set) is written
// as the declaration's default, so a null `threads` is predicted at what torch really starts.
TEST(InitStudy, MeasuredPoolDefaultIsTheDeclaredDefault) {
  InitRequest r;
  r.command = {"/usr/bin/python3", "/x/t.py", "--threads", "2"};
  ProgramInfo program = torch_script();
  program.pool_defaults["torch_intra_op"] = 1;
  const auto spec = init_and_load(r, program);
  ASSERT_FALSE(spec.probes.knobs.empty());
  EXPECT_EQ(spec.probes.knobs[0].param, "threads");
  EXPECT_EQ(spec.probes.knobs[0].program_default, 1);
  const auto unmeasured = init_and_load(r, torch_script());
  ASSERT_FALSE(unmeasured.probes.knobs.empty());
  EXPECT_FALSE(unmeasured.probes.knobs[0].program_default.has_value());
}

TEST(InitStudy, UnknownProgramGetsTheVariablesEveryLibraryReads) {
  InitRequest r;
  r.command = {"/opt/app/solver", "--steps", "10"};
  r.ranks = 4;
  const auto spec =
      init_and_load(r, ProgramInfo{"solver", "solver", {}, {}, {}, std::nullopt, std::nullopt, {}},
                    "pack:2 core:8 pu:2");
  std::vector<std::string> env;
  for (const auto& [name, value] : spec.env) env.push_back(name);
  EXPECT_TRUE(has(env, "OMP_NUM_THREADS"));
  EXPECT_TRUE(has(env, "OPENBLAS_NUM_THREADS"));
  EXPECT_FALSE(has(env, "GOTO_NUM_THREADS"));  // the same pool as OPENBLAS_NUM_THREADS
  EXPECT_FALSE(has(env, "NCCL_ALGO"));         // not an NCCL program
  // 32 PUs over 4 ranks: 1..8 per rank.
  EXPECT_EQ(choices(spec, "omp_num_threads"),
            (std::vector<ParamValue>{std::monostate{}, std::int64_t{1}, std::int64_t{2},
                                     std::int64_t{4}, std::int64_t{8}}));
  const auto bind = choices(spec, "bind_to");
  EXPECT_NE(std::find(bind.begin(), bind.end(), ParamValue{std::string("hwthread")}), bind.end());
  EXPECT_EQ(spec.launch.n, "4");
  // Nothing set today: the defaults are the baseline, then every pool at 1.
  ASSERT_EQ(spec.enqueue.size(), 2u);
  EXPECT_EQ(spec.enqueue[0].at("omp_num_threads"), ParamValue{});
  EXPECT_EQ(spec.enqueue[1].at("omp_num_threads"), ParamValue{std::int64_t{1}});
  EXPECT_EQ(spec.enqueue[1].at("bind_to"), ParamValue{});
}

TEST(InitStudy, NamedFlagAbsentFromTheCommandIsAppended) {
  InitRequest r;
  r.command = {"python3", "/x/t.py"};
  r.ranks = 2;
  r.knob_flags = {"nthr=torch_intra_op_threads"};
  r.throughput_regex = "img/s: ([0-9.]+)";
  r.name = "mine";
  const auto spec =
      init_and_load(r, ProgramInfo{"t.py", "t", {}, {}, {}, std::nullopt, std::nullopt, {}});
  EXPECT_EQ(spec.name, "mine");
  EXPECT_EQ(spec.command.back(), "--nthr={nthr}");
  EXPECT_EQ(spec.enqueue[0].at("nthr"), ParamValue{});
  EXPECT_TRUE(spec.objective.use_regex);
  EXPECT_EQ(spec.objective.regex, "img/s: ([0-9.]+)");
  EXPECT_EQ(spec.direction, search::Direction::maximize);
}

// A script called anything gives a study name that loads: the file name's plain characters,
// at most 64 of them.
TEST(InitStudy, TheStudyNameFromAnyScriptNameIsAValidOne) {
  InitRequest r;
  r.command = {"python3", "/x/t.py"};
  r.ranks = 2;
  ProgramInfo long_name{"t.py", std::string(5000, 'a'), {}, {}, {}, std::nullopt, std::nullopt, {}};
  EXPECT_EQ(init_and_load(r, long_name).name, std::string(64, 'a'));
  ProgramInfo odd{"t.py", "tr\xc3\xa9in ing/\x01x", {}, {}, {}, std::nullopt, std::nullopt, {}};
  EXPECT_EQ(init_and_load(r, odd).name, "tr__in_ing__x");
  ProgramInfo dots{"t.py", "..", {}, {}, {}, std::nullopt, std::nullopt, {}};
  EXPECT_EQ(init_and_load(r, dots).name, "study");
}

TEST(InitStudy, BundledTrainerFlagsAndBracesInArguments) {
  InitRequest r;
  r.command = {"{tune_trainer}", "--out={trial_dir}", "--bucket-mb=8", "--double-buffering"};
  r.ranks = 2;
  ProgramInfo trainer{"tune-trainer", "tune-trainer", {"tune-trainer"}, {}, {}, std::nullopt};
  const auto spec = init_and_load(r, trainer);
  // The user's braces are literal text, not placeholders.
  EXPECT_EQ(spec.command[0], "{{tune_trainer}}");
  for (const char* p : {"iterator_workers", "omp_threads", "blas_threads", "opencv_threads",
                        "bucket_mb", "double_buffering"}) {
    EXPECT_NE(param(spec, p), nullptr) << p;
  }
  EXPECT_EQ(choices(spec, "double_buffering"),
            (std::vector<ParamValue>{std::monostate{}, std::string("--double-buffering")}));
  ASSERT_EQ(spec.enqueue.size(), 3u);
  const auto& range = std::get<search::FloatDistribution>(*param(spec, "bucket_mb"));
  EXPECT_DOUBLE_EQ(*search::to_internal(range, spec.enqueue[0].at("bucket_mb")), 8.0);
  // The catalog's default.
  EXPECT_DOUBLE_EQ(*search::to_internal(range, spec.enqueue[1].at("bucket_mb")), 4.0);
}

TEST(InitStudy, BadRequestsAreOneLineErrors) {
  InitRequest r;
  r.command = {"mpirun", "-n", "2", "python3", "/x/t.py"};
  r.ranks = 3;
  EXPECT_NE(init_error(r, torch_script()).find("--ranks 3 and the command's mpirun -n 2 differ"),
            std::string::npos);
  r.ranks = 0;
  r.knob_flags = {"threads=warp_speed"};
  EXPECT_NE(init_error(r, torch_script()).find("'warp_speed' is no knob a program flag sets"),
            std::string::npos);
  r.knob_flags = {"threads"};
  EXPECT_NE(init_error(r, torch_script()).find("expected FLAG=KNOB"), std::string::npos);
  r.knob_flags.clear();
  r.throughput_regex = "(";
  EXPECT_NE(init_error(r, torch_script()).find("--throughput-regex"), std::string::npos);
  r.command = {"mpirun", "-n", "2"};
  EXPECT_NE(init_error(r, torch_script()).find("no program"), std::string::npos);
}

TEST(InitCommand, MpirunOptionsAreSortedIntoTheLaunch) {
  auto c = split_init_command({"mpirun", "--allow-run-as-root", "-np", "4", "--oversubscribe",
                               "--mca", "btl", "self,vader", "-x", "OMP_NUM_THREADS=2", "-x",
                               "PATH", "--report-bindings", "--map-by", "core", "./a.out", "-v"});
  ASSERT_TRUE(c) << c.error();
  EXPECT_TRUE(c->has_mpirun);
  EXPECT_EQ(c->mpirun.n, "4");
  EXPECT_EQ(c->mpirun.map_by, "core");
  EXPECT_TRUE(c->mpirun.oversubscribe);
  EXPECT_EQ(c->mpirun.mca,
            (std::vector<std::pair<std::string, std::string>>{{"btl", "self,vader"}}));
  EXPECT_EQ(c->mpirun.env,
            (std::vector<std::pair<std::string, std::string>>{{"OMP_NUM_THREADS", "2"}}));
  EXPECT_EQ(c->mpirun.extra, (std::vector<std::string>{"-x", "PATH", "--report-bindings"}));
  EXPECT_EQ(c->program, (std::vector<std::string>{"./a.out", "-v"}));
  EXPECT_FALSE(split_init_command({"python3", "t.py"})->has_mpirun);
  EXPECT_FALSE(split_init_command({}));
}

}  // namespace
}  // namespace tune::tuner
