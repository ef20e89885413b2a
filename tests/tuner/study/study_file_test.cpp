// Study-file parsing: the accepted form and every error path (file:line and key named).
#include <gtest/gtest.h>

#include <filesystem>

#include "probes/predict.h"
#include "tests/common/test_support.h"
#include "tuner/base/text.h"
#include "tuner/launch/pool_defaults.h"
#include "tuner/storage/storage.h"
#include "tuner/study/study_file.h"
#include "tuner/study/study_knobs.h"

namespace tune::tuner {
namespace {

const char* k_good = R"(name: demo
direction: maximize
command: ["{tune_trainer}", "--out", "{trial_dir}", "--workers={workers}"]
env:
  OMP_NUM_THREADS: "{omp}"
timeout: 2m
params:
  workers: {type: int, low: 0, high: 4}
  lr: {type: float, low: 1.0e-4, high: 0.1, log: true}
  bucket: {type: float, low: 1, high: 8, step: 0.5}
  omp: {type: categorical, choices: [null, 1, 2]}
  algo: [ring, mpi]
launch:
  mpirun: {n: 2, bind_to: core, oversubscribe: true, mca: {btl: "self,vader"}}
sampler: {type: random, seed: 3}
pruner: {type: median, n_warmup_steps: 2}
objective: {key: samples_per_sec, entry: max}
constraints:
  - {key: "validation/main/accuracy", min: 0.8}
enqueue:
  - {workers: 0, omp: null}
)";

std::string error_of(const std::string& yaml) {
  auto spec = parse_study_spec(yaml, "s.yaml");
  EXPECT_FALSE(spec.has_value()) << "expected an error for:\n" << yaml;
  return spec ? std::string() : spec.error();
}

TEST(StudySpec, ParsesEverySection) {
  auto spec = parse_study_spec(k_good, "studies/demo.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->name, "demo");
  EXPECT_EQ(spec->direction, search::Direction::maximize);
  ASSERT_EQ(spec->space.size(), 5u);
  EXPECT_EQ(spec->space[0].first, "workers");
  const auto& lr = std::get<search::FloatDistribution>(spec->space[1].second);
  EXPECT_TRUE(lr.log);
  EXPECT_DOUBLE_EQ(lr.low, 1e-4);
  EXPECT_EQ(std::get<search::FloatDistribution>(spec->space[2].second).step, 0.5);
  const auto& omp = std::get<search::CategoricalDistribution>(spec->space[3].second);
  ASSERT_EQ(omp.choices.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(omp.choices[0]));
  EXPECT_EQ(std::get<std::int64_t>(omp.choices[2]), 2);
  EXPECT_EQ(std::get<std::string>(
                std::get<search::CategoricalDistribution>(spec->space[4].second).choices[0]),
            "ring");
  EXPECT_TRUE(spec->launch.mpirun);
  EXPECT_EQ(spec->launch.n, "2");
  EXPECT_TRUE(spec->launch.oversubscribe);
  ASSERT_EQ(spec->launch.mca.size(), 1u);
  EXPECT_EQ(spec->launch.mca[0].second, "self,vader");
  EXPECT_EQ(*spec->timeout_s, 120.0);
  EXPECT_EQ(spec->sampler["type"], "random");
  EXPECT_EQ(spec->sampler["seed"], 3);
  EXPECT_EQ(spec->pruner["n_warmup_steps"], 2);
  EXPECT_EQ(spec->objective.key, "samples_per_sec");
  EXPECT_EQ(spec->objective.entry, "max");
  ASSERT_EQ(spec->constraints.size(), 1u);
  EXPECT_EQ(*spec->constraints[0].min, 0.8);
  ASSERT_EQ(spec->enqueue.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(spec->enqueue[0].at("omp")));
  EXPECT_EQ(spec->output, "tune-out/demo");
}

TEST(StudySpec, KnobsSayWhichParameterSizesWhichPool) {
  const auto spec = parse_study_spec(
      "name: x\ncommand: [python3, train.py, --threads, '{threads}', --workers, '{workers}']\n"
      "params:\n  threads: {type: int, low: 1, high: 2}\n  workers: [null, 0, 2]\n"
      "  algo: [Ring, Tree]\n"
      "knobs:\n  threads: {pool: torch_intra_op}\n  workers: {knob: torch_dataloader_workers}\n"
      "  algo: {knob: nccl_algo}\n",
      "s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  const auto& knobs = spec->probes.knobs;
  ASSERT_EQ(knobs.size(), 3u);
  EXPECT_EQ(knobs[0].param, "threads");
  EXPECT_EQ(knobs[0].pool, "torch_intra_op");
  EXPECT_EQ(knobs[0].program, "torch");
  EXPECT_EQ(knobs[1].knob, "torch_dataloader_workers");
  EXPECT_EQ(knobs[1].pool, "dataloader_workers");
  EXPECT_EQ(knobs[2].pool, "") << "NCCL_ALGO sizes no pool; a string parameter is fine";
  EXPECT_EQ(knobs[2].program, "nccl");
  const auto none = parse_study_spec("name: x\ncommand: [p]\n", "s.yaml");
  EXPECT_TRUE(none && none->probes.knobs.empty());
}

// `default: N` is the pool's size when the parameter is null (what this program takes here),
// and the prediction uses it instead of the catalog's library default.
TEST(StudySpec, AKnobsDefaultSizesTheUnsetPool) {
  const auto spec = parse_study_spec(
      "name: x\ncommand: [python3, t.py, '--threads={threads}']\n"
      "params:\n  threads: [null, 1, 2]\n"
      "knobs:\n  threads: {knob: torch_intra_op_threads, default: 1}\n",
      "s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_EQ(spec->probes.knobs.size(), 1u);
  EXPECT_EQ(spec->probes.knobs[0].program_default, 1);
  search::FrozenTrial trial;  // threads left null: not among the trial's params
  const auto model = study_program_model({}, {}, spec->probes.knobs, trial);
  ASSERT_EQ(model.pools.size(), 1u);
  EXPECT_EQ(model.pools[0].pool, "torch_intra_op");
  EXPECT_EQ(model.pools[0].program_default, 1);
  for (const char* bad :
       {"{knob: torch_intra_op_threads, default: -1}",
        "{knob: torch_intra_op_threads, default: many}", "{knob: nccl_algo, default: 2}"}) {
    const auto r = parse_study_spec(
        std::string("name: x\ncommand: [p, '{threads}']\nparams:\n  threads: [null, 1]\n"
                    "knobs:\n  threads: ") +
            bad + "\n",
        "s.yaml");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("knobs.threads"), std::string::npos) << r.error();
  }
}

// `program:` says what the program starts with nothing set: its kind, pools, their measured
// sizes and the runtimes' own threads; the prediction's model takes them, and a knob's value
// still sizes its pool for the trial.
TEST(StudySpec, TheProgramSectionEntersTheModel) {
  const auto spec = parse_study_spec(
      "name: x\ncommand: [python3, t.py]\nenv: {OMP_NUM_THREADS: '{threads}'}\n"
      "params:\n  threads: [null, 1, 2]\n"
      "program:\n  kind: torch\n  pools: [torch_intra_op, blas]\n"
      "  pool_defaults: {torch_intra_op: 1}\n  runtime_threads: 4\n",
      "s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_TRUE(spec->probes.program.has_value());
  const StudyProgram& program = *spec->probes.program;
  EXPECT_EQ(program.kind, "torch");
  EXPECT_EQ(program.pools, (std::vector<std::string>{"torch_intra_op", "blas"}));
  ASSERT_EQ(program.pool_defaults.size(), 1u);
  EXPECT_EQ(program.pool_defaults[0], (std::pair<std::string, int>{"torch_intra_op", 1}));
  EXPECT_EQ(program.runtime_threads, 4);
  const auto model = study_program_model({}, program, spec->probes.knobs, search::FrozenTrial{});
  EXPECT_EQ(model.program, "torch");
  EXPECT_EQ(model.runtime_threads, 4);
  ASSERT_EQ(model.pools.size(), 2u);
  EXPECT_EQ(model.pools[0].pool, "torch_intra_op");
  EXPECT_EQ(model.pools[0].program_default, 1);
  EXPECT_EQ(model.pools[1].pool, "blas");
  EXPECT_FALSE(model.pools[1].program_default.has_value()) << "the catalog's rule sizes it";
  const auto none = parse_study_spec("name: x\ncommand: [p]\n", "s.yaml");
  ASSERT_TRUE(none) << none.error();
  EXPECT_FALSE(none->probes.program.has_value());
}

TEST(StudySpec, ProgramSectionErrorsNameFileLineAndKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"program:\n  kind: jax\n",
       "s.yaml:4: key 'program.kind': unknown program kind 'jax' (kinds: any, torch, chainer, "
       "tune-trainer)"},
      {"program:\n  pools: [blas, mkl]\n", "s.yaml:4: key 'program.pools[1]': unknown pool 'mkl'"},
      {"program:\n  pools: [blas, blas]\n",
       "s.yaml:4: key 'program.pools[1]': pool 'blas' is listed twice"},
      {"program:\n  pools: blas\n", "s.yaml:4: key 'program.pools': expected a list"},
      {"program:\n  pool_defaults: {threads: 1}\n",
       "s.yaml:4: key 'program.pool_defaults.threads': unknown pool 'threads'"},
      {"program:\n  pool_defaults: {blas: -2}\n",
       "s.yaml:4: key 'program.pool_defaults.blas': expected a pool size"},
      {"program:\n  runtime_threads: many\n", "s.yaml:4: key 'program.runtime_threads'"},
      {"program:\n  runtime_threads: -1\n",
       "s.yaml:4: key 'program.runtime_threads': expected a thread count between 0 and 4096"},
      {"program:\n  pool: [blas]\n", "s.yaml:4: key 'program.pool'"},
      {"program: [blas]\n", "s.yaml:3: key 'program': expected a mapping"},
  };
  for (const auto& [yaml, error] : cases) {
    const auto r = parse_study_spec(std::string("name: x\ncommand: [p]\n") + yaml, "s.yaml");
    ASSERT_FALSE(r) << yaml;
    EXPECT_TRUE(r.error().starts_with(error)) << yaml << " -> " << r.error();
  }
}

// A study that leaves a torch pool without `default:` gets torch's own choice on this machine,
// measured once with the study's interpreter (here a stand-in that answers as torch would).
TEST(StudySpec, TorchPoolsWithoutADefaultAreMeasuredWithTheStudysInterpreter) {
  const auto dir = test_support::fresh_test_dir("tune-");
  const std::filesystem::path python =
      test_support::write_file(dir / "python3", "#!/bin/sh\necho 3 2\n");
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  std::vector<StudyKnob> knobs = {
      StudyKnob{"threads", "", "torch_intra_op", "torch", std::nullopt},
      StudyKnob{"interop", "", "torch_inter_op", "torch", std::nullopt},
      StudyKnob{"workers", "", "dataloader_workers", "torch", std::nullopt}};
  knobs[1].program_default = 5;  // declared: kept
  std::optional<StudyProgram> program;
  const auto notes = measure_missing_pool_defaults(knobs, program, {python.string(), "train.py"});
  EXPECT_EQ(knobs[0].program_default, 3);
  EXPECT_EQ(knobs[1].program_default, 5);
  EXPECT_FALSE(knobs[2].program_default.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "knobs.threads: torch_intra_op pool defaults to 3 here (measured with " +
                          python.string() + ")");
  // Not a Python interpreter, or a templated program: nothing is run, nothing changes.
  std::vector<StudyKnob> other = {
      StudyKnob{"threads", "", "torch_intra_op", "torch", std::nullopt}};
  EXPECT_TRUE(measure_missing_pool_defaults(other, program, {"/bin/false"}).empty());
  EXPECT_TRUE(measure_missing_pool_defaults(other, program, {"{python}", "train.py"}).empty());
  EXPECT_FALSE(other[0].program_default.has_value());
  EXPECT_FALSE(program.has_value());
  std::filesystem::remove_all(dir);
}

// `program: {pools: [torch_intra_op]}` without `pool_defaults:` is measured the same way; a pool
// it sizes itself, or one a knob's `default:` sizes, is left alone.
TEST(StudySpec, ProgramTorchPoolsWithoutADefaultAreMeasured) {
  const auto dir = test_support::fresh_test_dir("tune-");
  const std::filesystem::path python =
      test_support::write_file(dir / "python3", "#!/bin/sh\necho 1 2\n");
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  std::vector<StudyKnob> knobs;
  std::optional<StudyProgram> program = StudyProgram{};
  program->kind = "torch";
  program->pools = {"torch_intra_op", "torch_inter_op", "blas"};
  program->pool_defaults = {{"torch_inter_op", 4}};
  const auto notes = measure_missing_pool_defaults(knobs, program, {python.string(), "t.py"});
  using Sizes = std::vector<std::pair<std::string, int>>;
  EXPECT_EQ(program->pool_defaults, (Sizes{{"torch_inter_op", 4}, {"torch_intra_op", 1}}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "program.pools: torch_intra_op pool defaults to 1 here (measured with " +
                          python.string() + ")");
  std::filesystem::remove_all(dir);
}

TEST(StudySpec, DefaultsAreTheChainerLog) {
  auto spec = parse_study_spec("name: x\ncommand: [prog]\n", "x.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->direction, search::Direction::minimize);
  EXPECT_EQ(spec->objective.log, "{trial_dir}/log");
  EXPECT_EQ(spec->objective.key, "elapsed_time");
  EXPECT_EQ(spec->objective.entry, "last");
  EXPECT_FALSE(spec->launch.mpirun);
  EXPECT_FALSE(spec->timeout_s.has_value());
}

TEST(StudySpec, TwoObjectivesGiveADirectionAndAnObjectiveEach) {
  auto spec = parse_study_spec(
      "name: x\ncommand: [prog]\ndirections: [minimize, maximize]\nobjective:\n"
      "  - {key: elapsed_time}\n  - {key: validation/main/accuracy, entry: max}\n",
      "x.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->directions,
            (std::vector{search::Direction::minimize, search::Direction::maximize}));
  ASSERT_EQ(spec->objectives.size(), 2u);
  EXPECT_EQ(spec->objectives[1].key, "validation/main/accuracy");
  EXPECT_EQ(spec->objectives[1].entry, "max");
  EXPECT_EQ(spec->objective.key, "elapsed_time");
  EXPECT_EQ(spec->direction, search::Direction::minimize);
  auto single = parse_study_spec("name: x\ncommand: [prog]\ndirection: maximize\n", "x.yaml");
  ASSERT_TRUE(single) << single.error();
  EXPECT_EQ(single->directions, std::vector{search::Direction::maximize});
  EXPECT_EQ(single->objectives.size(), 1u);
}

TEST(StudySpec, LoadSaysHowMuchOtherWorkATrialAccepts) {
  const auto defaults = parse_study_spec("name: x\ncommand: [p]\n", "s.yaml");
  ASSERT_TRUE(defaults) << defaults.error();
  EXPECT_TRUE(defaults->load.check);
  EXPECT_DOUBLE_EQ(defaults->load.max_external_cpus, 0.25);
  EXPECT_DOUBLE_EQ(defaults->load.max_external_share, 0.10);
  EXPECT_DOUBLE_EQ(defaults->load.wait_s, 600);
  const auto given = parse_study_spec(
      "name: x\ncommand: [p]\nload: {max_external_cpus: 1.5, max_external_share: 20%, wait: 0}\n",
      "s.yaml");
  ASSERT_TRUE(given) << given.error();
  EXPECT_TRUE(given->load.check);
  EXPECT_DOUBLE_EQ(given->load.max_external_cpus, 1.5);
  EXPECT_DOUBLE_EQ(given->load.max_external_share, 0.2);
  EXPECT_DOUBLE_EQ(given->load.wait_s, 0);
  const auto off = parse_study_spec("name: x\ncommand: [p]\nload: off\n", "s.yaml");
  ASSERT_TRUE(off) << off.error();
  EXPECT_FALSE(off->load.check);
}

struct BadCase {
  const char* yaml;
  const char* expect;  // substring of the one-line error
};

class StudySpecErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(StudySpecErrors, NamesFileLineAndKey) {
  const auto err = error_of(GetParam().yaml);
  EXPECT_NE(err.find("s.yaml:"), std::string::npos) << err;
  EXPECT_NE(err.find(GetParam().expect), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, StudySpecErrors,
    ::testing::Values(
        BadCase{"name: x\ncommand: [p]\nbogus: 1\n", "s.yaml:3: key 'bogus': unknown key"},
        BadCase{"name: x\ncommand: [p]\nload: maybe\n", "s.yaml:3: key 'load': expected off"},
        BadCase{"name: x\ncommand: [p]\nload: {max_external_cpus: -1}\n",
                "s.yaml:3: key 'load.max_external_cpus': expected 0 or more"},
        BadCase{"name: x\ncommand: [p]\nload: {max_external_share: 150%}\n",
                "key 'load.max_external_share': 150% is outside"},
        BadCase{"name: x\ncommand: [p]\nload: {wait: soon}\n", "key 'load.wait': 'soon'"},
        BadCase{"name: x\ncommand: [p]\nload: {waits: 1m}\n", "key 'load.waits': unknown key"},
        BadCase{"name: x\ncommand: [p]\nincumbent_repeats: -1\n",
                "s.yaml:3: key 'incumbent_repeats': expected 0 to 100"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\n"
                "objective: [{key: a}, {key: b}]\nincumbent_repeats: 2\n",
                "s.yaml:5: key 'incumbent_repeats': re-measures the one best trial"},
        BadCase{"name: x\ncommand: [p]\nlaunch: {mpirun: {hosts: a}}\n",
                "s.yaml:3: key 'launch.mpirun.hosts': expected a list of host names"},
        BadCase{"name: x\ncommand: [p]\nlaunch: {mpirun: {host: a, hosts: [b]}}\n",
                "key 'launch.mpirun.hosts': give either host or hosts, not both"},
        BadCase{"command: [p]\n", "key 'name': missing"},
        BadCase{"name: x\n", "key 'command': missing"},
        BadCase{"name: x\ncommand: p\n", "key 'command': expected a non-empty list"},
        BadCase{"name: x\ncommand: [p]\ndirection: up\n", "s.yaml:3: key 'direction'"},
        BadCase{"name: x\ncommand: [p, '{nope}']\n", "placeholder '{nope}' names no parameter"},
        BadCase{"name: x\ncommand: [p, '{oops']\n", "unclosed"},
        BadCase{"name: x\ncommand: [p]\nenv: {A: '{ghost}'}\n", "key 'env.A': placeholder"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  a: {type: int, low: 5, high: 1}\n",
                "s.yaml:4: key 'params.a'"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  a: {type: int, low: one, high: 2}\n",
                "key 'params.a.low': expected an integer"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  a: {type: float, low: 0, high: 1, log: true}\n",
                "key 'params.a'"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  a: {type: cube, low: 0, high: 1}\n",
                "unknown type 'cube'"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  a: {type: int, low: 0}\n",
                "key 'params.a.high': required"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  a: {type: int, low: 0, high: 2, choices: [1]}\n",
                "key 'params.a.choices': not allowed"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  a: {type: categorical, choices: []}\n",
                "key 'params.a'"},
        BadCase{"name: x\ncommand: [p]\nparams:\n  trial_dir: [1, 2]\n", "built-in placeholder"},
        BadCase{"name: x\ncommand: [p]\ntimeout: soon\n", "key 'timeout'"},
        BadCase{"name: x\ncommand: [p]\ntimeout: 5y\n", "unknown unit"},
        BadCase{"name: x\ncommand: [p]\nobjective: {regex: '(', key: a}\n",
                "invalid regular expression"},
        BadCase{"name: x\ncommand: [p]\nobjective: {entry: median}\n", "key 'objective.entry'"},
        BadCase{"name: x\ncommand: [p]\nobjective: {colour: red}\n", "key 'objective.colour'"},
        BadCase{"name: x\ncommand: [p]\nobjective: {wall_time: true, key: elapsed_time}\n",
                "s.yaml:3: key 'objective.key': makes no sense with wall_time: true"},
        BadCase{"name: x\ncommand: [p]\nobjective: {wall_time: true, regex: 't=(.*)'}\n",
                "key 'objective.regex': makes no sense with wall_time"},
        BadCase{"name: x\ncommand: [p]\nobjective: {wall_time: true, intermediate: loss}\n",
                "key 'objective.intermediate': makes no sense with wall_time"},
        BadCase{"name: x\ncommand: [p]\nobjective: {wall_time: yes please}\n",
                "key 'objective.wall_time': expected true or false"},
        BadCase{"name: x\ncommand: [p]\ndirection: maximize\nobjective: {wall_time: true}\n",
                "s.yaml:3: key 'direction': wall_time is minimized"},
        BadCase{"name: x\ncommand: [p]\nobjective: {wall_time: true, log: '{trial_dir}/log'}\n",
                "key 'objective.log': with wall_time: true the log is read only for "
                "'constraints'"},
        BadCase{"name: x\ncommand: [p]\nlaunch: {mpirun: {n: 2, bind: core}}\n",
                "key 'launch.mpirun.bind': unknown key"},
        BadCase{"name: x\ncommand: [p]\nlaunch: {mpirun: {n: '{ranks}'}}\n",
                "key 'launch.mpirun.n': placeholder '{ranks}'"},
        BadCase{"name: x\ncommand: [p]\nsampler: tpe\n", "key 'sampler': expected a mapping"},
        BadCase{"name: x\ncommand: [p]\nparams: {a: [1, 2]}\nenqueue: [{b: 1}]\n",
                "key 'enqueue[0].b': names no parameter"},
        BadCase{"name: x\ncommand: [p]\nparams: {a: {type: int, low: 1, high: 3}}\n"
                "enqueue: [{a: 9}]\n",
                "key 'enqueue[0].a'"},
        BadCase{"name: x\ncommand: [p]\nconstraints: [{key: acc}]\n", "needs 'min' or 'max'"},
        BadCase{"name: x\ncommand: [p]\nprobes: {constrain: maybe}\n",
                "key 'probes.constrain': expected true or false"},
        BadCase{"name: x\ncommand: [p]\nparams: {t: [1, 2]}\nknobs: {t: {pool: gpu}}\n",
                "s.yaml:4: key 'knobs.t.pool': unknown pool 'gpu' (pools: openmp, blas"},
        BadCase{"name: x\ncommand: [p]\nparams: {t: [1, 2]}\nknobs: {t: {knob: omp_threads}}\n",
                "s.yaml:4: key 'knobs.t.knob': unknown knob 'omp_threads'"},
        BadCase{"name: x\ncommand: [p]\nparams: {t: [1, 2]}\nknobs: {w: {pool: openmp}}\n",
                "s.yaml:4: key 'knobs.w': names no parameter of 'params'"},
        BadCase{"name: x\ncommand: [p]\nparams: {t: [1, 2]}\nknobs: {t: {pool: openmp, knob: x}}\n",
                "key 'knobs.t': give one of pool: NAME or knob: NAME"},
        BadCase{"name: x\ncommand: [p]\nparams: {t: [1, 2]}\nknobs: {t: {pool: openmp, flag: x}}\n",
                "key 'knobs.t.flag': unknown key"},
        BadCase{"name: x\ncommand: [p]\nparams: {t: {type: float, low: 1, high: 2}}\n"
                "knobs: {t: {pool: openmp}}\n",
                "key 'knobs.t': parameter 't' sizes the openmp pool: it must take integer values"},
        BadCase{"name: x\ncommand: [p\n", "invalid YAML"},
        // Issue 50: yaml-cpp says "illegal map value" for a tab in indentation; the tab is named.
        BadCase{"name: x\ncommand: [p]\nparams:\n\tx: {type: float, low: 1, high: 2}\n",
                "s.yaml:4: invalid YAML: line 4 is indented with a tab, which YAML does not allow"},
        // A deadline past what the clocks hold failed every trial at once.
        BadCase{"name: x\ncommand: [p]\ntimeout: 9999999999\n",
                "s.yaml:3: key 'timeout': '9999999999' is longer than tune can time"},
        BadCase{"name: x\ncommand: [p]\ntimeout: 3000000h\n",
                "s.yaml:3: key 'timeout': '3000000h' is longer than tune can time"},
        BadCase{"- just\n- a list\n", "must be a YAML mapping"},
        BadCase{"name: x\ncommand: [p]\ndirection: minimize\ndirections: [minimize]\n",
                "s.yaml:4: key 'directions': give either 'direction'"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, up]\n",
                "key 'directions[1]': expected minimize or maximize"},
        BadCase{"name: x\ncommand: [p]\ndirections: []\n", "key 'directions': expected a list"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\n",
                "key 'objective': 'directions' has 2 entries: give a list of 2 objectives"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\nobjective: {key: a}\n",
                "s.yaml:4: key 'objective': 'directions' has 2 entries"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\nobjective: [{key: a}]\n",
                "key 'objective': 1 objectives for 2 directions"},
        BadCase{"name: x\ncommand: [p]\nobjective: [{key: a}, {key: b}]\n",
                "key 'objective': a list of objectives needs 'directions"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\n"
                "objective: [{key: a}, {colour: red}]\n",
                "key 'objective[1].colour': unknown key"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\n"
                "objective: [{key: a}, {key: b, log: other}]\n",
                "key 'objective[1].log': every objective reads the first objective's log"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\n"
                "objective: [{key: a}, {key: b}]\npruner: {type: median}\n",
                "key 'pruner': pruning judges one objective"},
        BadCase{"name: x\ncommand: [p]\ndirections: [minimize, maximize]\n"
                "objective: [{key: a}, {key: b}]\nsampler: {type: gp}\n",
                "gp models one objective"}));

TEST(StudySpec, WallTimeObjective) {
  auto spec = parse_study_spec("name: x\ncommand: [p]\nobjective: {wall_time: true}\n", "s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_TRUE(spec->objective.wall_time);
  EXPECT_FALSE(spec->objective.use_regex);
  // A log is allowed when constraints read it.
  auto constrained = parse_study_spec(
      "name: x\ncommand: [p]\nobjective: {wall_time: true, log: '{trial_dir}/m.json'}\n"
      "constraints: [{key: acc, min: 0.8}]\n",
      "s.yaml");
  ASSERT_TRUE(constrained) << constrained.error();
  EXPECT_EQ(constrained->objective.log, "{trial_dir}/m.json");
  EXPECT_FALSE(parse_study_spec("name: x\ncommand: [p]\n", "s.yaml")->objective.wall_time);
}

TEST(Template, ExpandsParamsBuiltinsAndEscapes) {
  TemplateValues v{{"n", std::int64_t{4}},
                   {"lr", 0.001},
                   {"algo", std::string("ring")},
                   {"trial_dir", std::string("/tmp/t/3")}};
  EXPECT_EQ(*expand_template("--n={n}", v).value(), "--n=4");
  EXPECT_EQ(*expand_template("{lr}", v).value(), "0.001");
  EXPECT_EQ(*expand_template("{trial_dir}/log", v).value(), "/tmp/t/3/log");
  EXPECT_EQ(*expand_template("{{literal}} {algo}", v).value(), "{literal} ring");
  EXPECT_FALSE(expand_template("{missing}", v).has_value());
}

TEST(Template, NullValueDropsTheElement) {
  TemplateValues v{{"omp", std::monostate{}}};
  auto r = expand_template("--omp-threads={omp}", v);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->has_value());
}

TEST(Duration, Units) {
  EXPECT_EQ(*parse_duration("90"), 90.0);
  EXPECT_EQ(*parse_duration("1.5m"), 90.0);
  EXPECT_EQ(*parse_duration("2h"), 7200.0);
  EXPECT_EQ(*parse_duration("250ms"), 0.25);
  EXPECT_FALSE(parse_duration("-3s").has_value());
  EXPECT_FALSE(parse_duration("").has_value());
  // At most about 31 years: a longer deadline would wrap the clocks' 64-bit nanoseconds.
  EXPECT_EQ(*parse_duration("1000000000"), 1e9);
  EXPECT_FALSE(parse_duration("1000000001").has_value());
  EXPECT_FALSE(parse_duration("3000000h").has_value());
  EXPECT_FALSE(parse_duration("1e300").has_value());
}

}  // namespace
}  // namespace tune::tuner
