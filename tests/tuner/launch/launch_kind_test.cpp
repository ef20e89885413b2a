// The launch kinds (tuner/launch/launch_kind.h), each on its own: its argv prefix, the probes'
// plan, the job shape a batch script asks for, and what it stops after a trial. render_launch's
// choice of kind and the byte-for-byte argv are in launch_plan_test.cpp and
// slurm_launch_test.cpp; the real srun, under a local Slurm, is tests/cluster/slurm_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "probes/mpirun_flags.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/launch_kind.h"
#include "tuner/launch/rendered_launch.h"

namespace tune::tuner {
namespace {

using Argv = std::vector<std::string>;
const std::map<std::string, std::string> k_env = {{"PATH", "/usr/bin"}};
const Argv k_command = {"./train", "--epochs", "1"};

// A trial that ended on its own, and one that was stopped.
LaunchResult ended() {
  LaunchResult r;
  r.started = true;
  return r;
}

TEST(DirectLaunch, HasNoPrefixAndReadsTheCommand) {
  const auto kind = direct_launch();
  EXPECT_EQ(kind->name(), "direct");
  EXPECT_EQ(kind->program(), std::nullopt);
  EXPECT_TRUE(kind->prefix({{"OMP_NUM_THREADS", "2"}}).empty());
  const auto plan = kind->probe_plan(k_command, k_env);
  EXPECT_FALSE(plan.uses_mpirun);
  EXPECT_EQ(plan.n, 1);
  EXPECT_EQ(plan.program_argv, k_command);
  EXPECT_EQ(plan.env, k_env);
  // An mpirun line the user wrote is read as mpirun reads it.
  const auto raw = kind->probe_plan({"mpirun", "-np", "3", "./train"}, k_env);
  EXPECT_TRUE(raw.uses_mpirun);
  EXPECT_EQ(raw.n, 3);
}

TEST(DirectLaunch, AsksForOneTaskAndLeavesNothing) {
  const auto kind = direct_launch();
  const JobShape shape = kind->job_shape(k_command);
  EXPECT_EQ(shape.nodes, 1);
  EXPECT_EQ(shape.tasks_per_node, 1);
  EXPECT_EQ(shape.total_tasks, 1);
  EXPECT_TRUE(kind->ranks_in_tree());
  EXPECT_FALSE(kind->forwards_env_to_hosts());
  EXPECT_FALSE(kind->places_tasks());
  EXPECT_EQ(kind->cpus_per_task(), std::nullopt);
  // A command that starts its own mpirun: Open MPI's variables name the remote shell.
  EXPECT_EQ(kind->remote_shell({{"OMPI_MCA_plm_rsh_agent", "rsh"}}),
            std::vector<std::string>{"rsh"});
  EXPECT_EQ(kind->end_trial(ended()), nlohmann::json::object());
  EXPECT_EQ(kind->script_setup(), "");
  EXPECT_TRUE(kind->kept_flag_notes().empty());
}

RenderedMpirun four_ranks_two_per_node() {
  RenderedMpirun m;
  m.n = "4";
  m.npernode = "2";
  m.bind_to = "core";
  m.mca = {{"btl", "self,tcp"}};
  m.extra = {"--report-bindings"};
  return m;
}

TEST(MpirunLaunch, PrefixExportsEveryVariableByName) {
  auto m = four_ranks_two_per_node();
  m.allow_run_as_root = true;
  m.oversubscribe = true;
  const auto kind = mpirun_launch(m);
  EXPECT_EQ(kind->name(), "mpirun");
  EXPECT_EQ(kind->program(), "mpirun");
  EXPECT_EQ(kind->prefix({{"A", "1"}, {"B", "2"}}),
            (Argv{"mpirun", "--allow-run-as-root", "-n", "4", "--npernode", "2", "--bind-to",
                  "core", "--oversubscribe", "--mca", "btl", "self,tcp", "-x", "A", "-x", "B",
                  "--report-bindings"}));
  EXPECT_TRUE(kind->forwards_env_to_hosts());
  EXPECT_TRUE(kind->ranks_in_tree());
}

TEST(MpirunLaunch, ProbePlanFromTheSettingsWithExtraReadAsMpirunReadsIt) {
  auto m = four_ranks_two_per_node();
  m.extra = {"--bind-to", "none", "-x", "OMP_NUM_THREADS=3"};  // a later --bind-to wins
  const auto plan = mpirun_launch(m)->probe_plan(k_command, k_env);
  EXPECT_TRUE(plan.uses_mpirun);
  EXPECT_EQ(plan.n, 4);
  EXPECT_EQ(plan.ranks_per_node, 2);
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_EQ(plan.bind_to, "none");
  EXPECT_EQ(plan.program_argv, k_command);
  EXPECT_EQ(plan.env.at("OMP_NUM_THREADS"), "3");
  EXPECT_EQ(plan.env.at("PATH"), "/usr/bin");
}

TEST(MpirunLaunch, JobShapeFromHostsElseFromTheCounts) {
  const JobShape counted = mpirun_launch(four_ranks_two_per_node())->job_shape(k_command);
  EXPECT_EQ(counted.nodes, 2);
  EXPECT_EQ(counted.tasks_per_node, 2);
  EXPECT_EQ(counted.total_tasks, 4);
  RenderedMpirun hosts;
  hosts.n = "3";
  hosts.host = "a:2,b:2";
  const JobShape laid_out = mpirun_launch(hosts)->job_shape(k_command);
  EXPECT_EQ(laid_out.nodes, 2);
  EXPECT_EQ(laid_out.tasks_per_node, 2);
  EXPECT_EQ(laid_out.total_tasks, 3);
  RenderedMpirun unknown;
  unknown.n = "$(nproc)";  // no plain number: left to the scheduler
  const JobShape left = mpirun_launch(unknown)->job_shape(k_command);
  EXPECT_EQ(left.nodes, 1);
  EXPECT_EQ(left.tasks_per_node, std::nullopt);
}

TEST(MpirunLaunch, McaAndOversubscribeAreReadFromExtraToo) {
  auto m = four_ranks_two_per_node();
  m.extra = {"-mca", "plm_rsh_agent", "ssh -q", "-oversubscribe"};
  const auto kind = mpirun_launch(m);
  EXPECT_EQ(kind->remote_shell({}), (std::vector<std::string>{"ssh", "-q"}));
  // An exported script keeps both, and says why a cluster may not want them.
  const auto notes = kind->kept_flag_notes();
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_TRUE(notes[0].starts_with("--oversubscribe: ")) << notes[0];
  EXPECT_TRUE(notes[1].starts_with("--mca btl self,tcp: ")) << notes[1];
  EXPECT_TRUE(notes[2].starts_with("--mca plm_rsh_agent: ")) << notes[2];
  EXPECT_EQ(mpirun_launch(four_ranks_two_per_node())->kept_flag_notes().size(), 1u)
      << "its btl only: no --oversubscribe";
  EXPECT_TRUE(srun_launch(RenderedSrun{})->kept_flag_notes().empty());
}

// A Slurm script that starts the job with mpirun says why, with the srun line that would match.
TEST(MpirunLaunch, ABatchScriptSaysWhyMpirunAndTheMatchingSrunLine) {
  auto m = four_ranks_two_per_node();
  m.bind_to = "core";
  m.map_by = "node";
  const auto kind = mpirun_launch(m);
  const auto note = kind->batch_launch_note(kind->job_shape({}), 2);
  EXPECT_NE(note.why.find("(--bind-to core --map-by node)"), std::string::npos) << note.why;
  EXPECT_EQ(note.equivalent,
            "srun --mpi=pmix --ntasks=4 --ntasks-per-node=2 --cpus-per-task=2 --cpu-bind=cores "
            "--distribution=cyclic ...");
  EXPECT_TRUE(srun_launch(RenderedSrun{})->batch_launch_note({}, 2).why.empty());
}

TEST(MpirunLaunch, AScriptGivesOpenMpiTheRootConsentOnlyAsRoot) {
  const std::string setup = mpirun_launch(four_ranks_two_per_node())->script_setup();
  EXPECT_NE(setup.find("if [ \"$(id -u)\" -eq 0 ]; then"), std::string::npos) << setup;
  EXPECT_NE(setup.find("export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"),
            std::string::npos)
      << setup;
  EXPECT_EQ(srun_launch(RenderedSrun{})->script_setup(), "");
}

TEST(MpirunLaunch, LeavesNothingAfterATrial) {
  LaunchResult stopped = ended();
  stopped.stopped = StopReason::timeout;
  EXPECT_EQ(mpirun_launch(four_ranks_two_per_node())->end_trial(stopped), nlohmann::json::object());
}

RenderedSrun srun_step() {
  RenderedSrun s;
  s.step_name = "tune-s-7";
  s.mpi = "pmix";
  s.nodes = "2";
  s.ntasks = "6";
  s.cpus_per_task = "2";
  s.cpu_bind = "cores";
  return s;
}

TEST(SrunLaunch, PrefixNamesTheStepAndNoVariables) {
  const auto kind = srun_launch(srun_step());
  EXPECT_EQ(kind->name(), "srun");
  EXPECT_EQ(kind->program(), "srun");
  EXPECT_EQ(kind->prefix({{"A", "1"}}),
            (Argv{"srun", "--job-name=tune-s-7", "--mpi=pmix", "--nodes=2", "--ntasks=6",
                  "--cpus-per-task=2", "--cpu-bind=cores", "--kill-on-bad-exit=1"}));
  EXPECT_FALSE(kind->forwards_env_to_hosts());
}

TEST(SrunLaunch, ProbePlanInMpirunsTerms) {
  const auto plan = srun_launch(srun_step())->probe_plan(k_command, k_env);
  EXPECT_EQ(plan.n, 6);
  EXPECT_EQ(plan.ranks_per_node, 3);  // 6 tasks on 2 nodes: at most 3 on one
  EXPECT_EQ(plan.bind_to, "core");
  EXPECT_EQ(plan.map_by, "core:PE=2");
  EXPECT_EQ(plan.program_argv, k_command);
}

TEST(SrunLaunch, JobShapeAndCpusAreTheSteps) {
  const auto kind = srun_launch(srun_step());
  const JobShape shape = kind->job_shape(k_command);
  EXPECT_EQ(shape.nodes, 2);
  EXPECT_EQ(shape.tasks_per_node, 3);
  EXPECT_EQ(shape.total_tasks, 6);
  EXPECT_EQ(kind->cpus_per_task(), "2");
  EXPECT_TRUE(kind->places_tasks());
  EXPECT_FALSE(kind->ranks_in_tree()) << "the ranks are slurmstepd's children";
}

// A step that ended on its own is recorded and not looked up (no squeue here); a stopped one is
// cancelled by name (tests/cluster/slurm_test.cpp, under a real Slurm).
TEST(SrunLaunch, RecordsItsStepAfterATrial) {
  EXPECT_EQ(srun_launch(srun_step())->end_trial(ended()),
            (nlohmann::json{{k_attr_slurm_step, {{"name", "tune-s-7"}, {"cancelled", 0}}}}));
}

TEST(RenderedLaunch, HoldsOneKindAndComposesTheTrialsEnvironment) {
  RenderedLaunch l;
  EXPECT_EQ(l.kind->name(), "direct");
  l.command = k_command;
  l.env_set = {{"TUNE_KIND_TEST", "set"}};
  l.env_unset = {"PATH"};
  EXPECT_EQ(l.argv(), k_command);
  const auto env = l.environment();
  EXPECT_EQ(env.at("TUNE_KIND_TEST"), "set");
  EXPECT_FALSE(env.contains("PATH"));
  EXPECT_EQ(env, trial_environment(l.request()));
  l.kind = mpirun_launch(four_ranks_two_per_node());
  const auto argv = l.argv();
  EXPECT_EQ(argv.front(), "mpirun");
  EXPECT_EQ(Argv(argv.end() - 3, argv.end()), k_command);
  EXPECT_EQ(l.job_shape().total_tasks, 4);
}

// One table of mpirun's spellings: every alias of a setting finds it.
TEST(MpirunFlags, AliasesShareTheirSetting) {
  using probes::MpirunSetting;
  for (const char* n : {"-n", "-np", "--np", "--n", "-c"})
    EXPECT_EQ(probes::find_mpirun_flag(n)->setting, MpirunSetting::n) << n;
  EXPECT_EQ(probes::find_mpirun_flag("--machinefile")->setting, MpirunSetting::hostfile);
  EXPECT_EQ(probes::find_mpirun_flag("-mca")->values, 2);
  EXPECT_EQ(probes::find_mpirun_flag("--report-bindings"), nullptr);
}

}  // namespace
}  // namespace tune::tuner
