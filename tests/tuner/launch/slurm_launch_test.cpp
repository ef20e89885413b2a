// launch.slurm (tuner/launch/slurm_launch.h): the study file's section, the srun argv a trial runs,
// the probes' plan from the same settings, and the slurm-array export of tune workers
// (tuner/export/worker_array.h). The real thing, under a local Slurm, is
// tests/cluster/slurm_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tuner/export/worker_array.h"
#include "tuner/launch/rendered_launch.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

Result<StudySpec> study(const std::string& launch) {
  return parse_study_spec(
      "name: s\ncommand: [/opt/t, --out, '{trial_dir}']\n"
      "env: {OMP_NUM_THREADS: '{omp}'}\n"
      "params:\n  ranks: [2, 4]\n  bind: [null, cores]\n  omp: [null, 2]\n" +
          launch,
      "s.yaml");
}

TemplateValues values(search::ParamValue bind) {
  return {{"ranks", std::int64_t{4}},        {"bind", bind},
          {"omp", std::int64_t{2}},          {"trial_dir", std::string("/t/7")},
          {"trial_number", std::int64_t{7}}, {"nproc", std::int64_t{8}}};
}

TEST(SlurmLaunch, ArgvIsTheSrunPrefixThenTheCommand) {
  const auto spec = study(
      "launch:\n  slurm: {nodes: 2, ntasks: '{ranks}', cpus_per_task: 2, cpu_bind: '{bind}',\n"
      "          extra: [--exclusive]}\n");
  ASSERT_TRUE(spec) << spec.error();
  const auto rendered = render_launch(*spec, values(search::ParamValue{}), /*root=*/true);
  ASSERT_TRUE(rendered) << rendered.error();
  EXPECT_EQ(rendered->kind->name(), "srun");
  EXPECT_EQ(rendered->argv(),
            (std::vector<std::string>{"srun", "--job-name=tune-s-7", "--mpi=pmix", "--nodes=2",
                                      "--ntasks=4", "--cpus-per-task=2", "--kill-on-bad-exit=1",
                                      "--exclusive", "/opt/t", "--out", "/t/7"}))
      << "a null cpu_bind is left out; srun needs no --allow-run-as-root";
  // srun hands its whole environment to the tasks: no list of names in the argv.
  EXPECT_EQ(rendered->request().env_set.at("OMP_NUM_THREADS"), "2");
}

TEST(SlurmLaunch, ProgramAndMpiCanBeChanged) {
  const auto spec =
      study("launch: {slurm: {program: /opt/slurm/bin/srun, mpi: none, ntasks: 1}}\n");
  ASSERT_TRUE(spec) << spec.error();
  const auto rendered = render_launch(*spec, values(std::string("cores")), false);
  ASSERT_TRUE(rendered) << rendered.error();
  const auto argv = rendered->argv();
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[0], "/opt/slurm/bin/srun");
  EXPECT_EQ(argv[2], "--mpi=none");
}

TEST(SlurmLaunch, ProbePlanReadsTheSettings) {
  const auto spec = study(
      "launch: {slurm: {nodes: 2, ntasks: 8, cpus_per_task: 2, cpu_bind: "
      "'{bind}'}}\n");
  ASSERT_TRUE(spec) << spec.error();
  auto plan = render_launch(*spec, values(std::string("cores")), false)->probe_plan({});
  EXPECT_EQ(plan.n, 8);
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_EQ(plan.ranks_per_node, 4);
  EXPECT_EQ(plan.bind_to, "core");
  EXPECT_EQ(plan.map_by, "core:PE=2");
  EXPECT_EQ(plan.program_argv, (std::vector<std::string>{"/opt/t", "--out", "/t/7"}));
  // Unbound (no --cpu-bind): the probes must not assume mpirun's default binding.
  plan = render_launch(*spec, values(search::ParamValue{}), false)->probe_plan({});
  EXPECT_EQ(plan.bind_to, "none");
  EXPECT_EQ(plan.map_by, "");
}

TEST(SlurmLaunch, StudyFileErrorsNameTheKey) {
  auto bad = study("launch: {slurm: {ntask: 2}}\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("launch.slurm"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("ntask"), std::string::npos) << bad.error();
  bad = study("launch: {slurm: {ntasks: 2}, mpirun: {n: 2}}\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("launch"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("one of"), std::string::npos) << bad.error();
  bad = study("launch: {slurm: {ntasks: '{nothing}'}}\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("launch.slurm.ntasks"), std::string::npos) << bad.error();
}

TEST(SlurmLaunch, StepNamesAreSafeForSlurm) {
  EXPECT_EQ(slurm_step_name("quick start/2", 12), "tune-quick_start_2-12");
  EXPECT_EQ(slurm_step_name("a.b_c-d", 0), "tune-a.b_c-d-0");
}

WorkerArrayOptions worker_options() {
  WorkerArrayOptions o;
  o.workers = 4;
  o.trials_per_worker = 25;
  o.tune_program = "/shared/tune prefix/bin/tune";
  o.study_file = "/home/u/s.yaml";
  o.storage = "postgresql://tune@db:5432/studies";
  o.workdir = "/home/u/it's here";
  return o;
}

TEST(WorkerArray, OneTuneWorkerPerArrayTaskOnWholeNodes) {
  const auto spec =
      study("launch: {slurm: {nodes: 2, ntasks: 8, cpus_per_task: 4, cpu_bind: cores}}\n");
  ASSERT_TRUE(spec) << spec.error();
  const auto script = render_worker_array(*spec, worker_options());
  ASSERT_TRUE(script) << script.error();
  for (const char* line :
       {"#SBATCH --array=0-3\n", "#SBATCH --nodes=2\n", "#SBATCH --exclusive\n",
        "#SBATCH --ntasks=8\n", "#SBATCH --cpus-per-task=4\n", "cd -- '/home/u/it'\\''s here'\n",
        "exec '/shared/tune prefix/bin/tune' --trials 25 --storage "
        "postgresql://tune@db:5432/studies /home/u/s.yaml\n"})
    EXPECT_NE(script->find(line), std::string::npos) << line << "in:\n" << *script;
  EXPECT_EQ(script->find("WARNING"), std::string::npos) << *script;
}

// The workers get the storage URL without its password (libpq reads it from PGPASSWORD or
// ~/.pgpass on the node, as the script says); the header shows it masked.
TEST(WorkerArray, TheScriptCarriesNoPassword) {
  const auto spec = study("");
  ASSERT_TRUE(spec) << spec.error();
  auto options = worker_options();
  options.storage = "postgresql://tune:pw-in-url@db:5432/studies?password=pw-in-query&retry_for=5m";
  const auto script = render_worker_array(*spec, options);
  ASSERT_TRUE(script) << script.error();
  EXPECT_EQ(script->find("pw-in-"), std::string::npos) << *script;
  for (const char* line :
       {"# Database: postgresql://tune:***@db:5432/studies?password=***&retry_for=5m\n",
        "# The database's password is not in this script: each worker's libpq reads it from\n"
        "# PGPASSWORD (sbatch passes on the environment it is run in) or ~/.pgpass on the node.\n",
        "--storage 'postgresql://tune@db:5432/studies?retry_for=5m' /home/u/s.yaml\n"})
    EXPECT_NE(script->find(line), std::string::npos) << line << "in:\n" << *script;
}

TEST(WorkerArray, SizesFromMpirunAndWarnsAboutSqlite) {
  const auto spec = study("launch: {mpirun: {n: 4, npernode: 2}}\n");
  ASSERT_TRUE(spec) << spec.error();
  auto options = worker_options();
  options.storage = "sqlite:///home/u/study.db";
  const auto script = render_worker_array(*spec, options);
  ASSERT_TRUE(script) << script.error();
  EXPECT_NE(script->find("#SBATCH --nodes=2\n#SBATCH --exclusive\n#SBATCH --ntasks=4\n"),
            std::string::npos)
      << *script;
  EXPECT_NE(script->find("WARNING"), std::string::npos) << *script;
  EXPECT_FALSE(is_postgres_url(options.storage));
  EXPECT_TRUE(is_postgres_url("postgresql://h/db"));
}

TEST(WorkerArray, TemplatedSizesAreLeftToTheNodes) {
  // {ranks} is known per trial only: the array asks for the whole node and no task count.
  const auto spec = study("launch: {slurm: {ntasks: '{ranks}'}}\n");
  ASSERT_TRUE(spec) << spec.error();
  const auto script = render_worker_array(*spec, worker_options());
  ASSERT_TRUE(script) << script.error();
  EXPECT_NE(script->find("#SBATCH --nodes=1\n#SBATCH --exclusive\n#SBATCH --output="),
            std::string::npos)
      << *script;
}

TEST(WorkerArray, BadOptionsAreErrors) {
  const auto spec = study("");
  ASSERT_TRUE(spec) << spec.error();
  auto options = worker_options();
  options.workers = 0;
  EXPECT_FALSE(render_worker_array(*spec, options));
  options = worker_options();
  options.study_file = "s.yaml";
  const auto r = render_worker_array(*spec, options);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("absolute"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace tune::tuner
