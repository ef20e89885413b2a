// The structured launch (tuner/launch/rendered_launch.h): the argv the runner launches and the plan
// the probes predict from both come from one RenderedLaunch. For a set of launch.mpirun sections
// the plan built from the settings equals what reading the rendered argv back gives (the way the
// probes used to get it), and a command the user wrote as an mpirun line is still read as one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <string>
#include <vector>

#include "probes/predict.h"
#include "tuner/launch/rendered_launch.h"

namespace tune::tuner {
namespace {

// A study around one launch section; {ranks}, {bind}, {omp} and {extra} are parameters.
StudySpec study(
    const std::string& launch,
    const std::string& command = R"(["/opt/tune/bin/tune-trainer", "--out", "{trial_dir}"])") {
  const std::string yaml = "name: s\ncommand: " + command +
                           "\n"
                           "env:\n  OMP_NUM_THREADS: \"{omp}\"\n  GONE: \"{bind}\"\n"
                           "params:\n"
                           "  ranks: [1, 2, 4]\n"
                           "  bind: {type: categorical, choices: [null, core, none]}\n"
                           "  omp: {type: categorical, choices: [null, 1, 3]}\n"
                           "  extra: [\"--bind-to\", \"-x\"]\n" +
                           launch + "objective: {key: loss}\n";
  auto spec = parse_study_spec(yaml, "s.yaml");
  EXPECT_TRUE(spec) << (spec ? "" : spec.error()) << "\n" << yaml;
  return spec ? *spec : StudySpec{};
}

TemplateValues values(search::ParamValue ranks, search::ParamValue bind, search::ParamValue omp) {
  return {{"ranks", ranks},
          {"bind", bind},
          {"omp", omp},
          {"extra", std::string("--bind-to")},
          {"trial_dir", std::string("/t/3")},
          {"nproc", std::int64_t{8}}};
}

const std::map<std::string, std::string> k_env = {{"HOME", "/root"}, {"OMP_NUM_THREADS", "2"}};

struct Case {
  std::string launch;
  TemplateValues values;
};

std::vector<Case> cases() {
  const auto null = search::ParamValue{};
  const auto some = values(std::int64_t{2}, std::string("core"), std::int64_t{3});
  return {
      {"launch: {mpirun: true}\n", some},
      {"launch: {mpirun: {n: 2, bind_to: core}}\n", some},
      {"launch: {mpirun: {n: \"{ranks}\", bind_to: \"{bind}\", oversubscribe: true}}\n",
       values(std::int64_t{4}, null, null)},
      {"launch: {mpirun: {n: \"{ranks}\", bind_to: \"{bind}\"}}\n",
       values(std::int64_t{1}, std::string("none"), std::int64_t{1})},
      {"launch: {mpirun: {n: 4, npernode: 2, map_by: \"socket:PE=2\", host: \"a:2,b:2\"}}\n", some},
      {"launch: {mpirun: {npernode: 3, host: \"a,b,c\", hostfile: /etc/hosts}}\n", some},
      {"launch: {mpirun: {npernode: 2, hosts: [h1, \"h2:1\"], bind_to: core}}\n", some},
      {"launch: {mpirun: {n: 3, map_by: \"ppr:2:node\", hosts: [h1, h2]}}\n", some},
      {"launch: {mpirun: {n: 4, host: \"a:2,b:2,a:1\"}}\n", some},
      {"launch: {mpirun: {n: \"{nproc}\", map_by: \"ppr:2:socket\", bind_to: hwthread}}\n", some},
      {"launch: {mpirun: {program: /usr/bin/mpiexec, n: 2, mca: {btl: \"self,vader\", "
       "pml: ob1}}}\n",
       some},
      // The user's extra mpirun arguments override the settings before them, as in mpirun.
      {"launch: {mpirun: {n: 2, bind_to: core, extra: [\"--bind-to\", none, \"-x\", "
       "\"OMP_NUM_THREADS=7\", \"--map-by=numa\", \"-N\", \"1\", \"--report-bindings\"]}}\n",
       some},
      {"launch: {mpirun: {n: 2, extra: [\"--mca\", btl, tcp, \"--\"]}}\n", some},
      {"launch: {mpirun: {n: junk, npernode: \"\"}}\n", some},
      // An option left without its value takes the next word, the command's first, as mpirun
      // would.
      {"launch: {mpirun: {n: 2, extra: [\"{extra}\"]}}\n", some},
  };
}

TEST(RenderedLaunch, ProbePlanEqualsTheRenderedArgvReadBack) {
  for (const bool root : {false, true}) {
    for (const auto& c : cases()) {
      const auto spec = study(c.launch);
      const auto rendered = render_launch(spec, c.values, root);
      ASSERT_TRUE(rendered) << rendered.error();
      ASSERT_EQ(rendered->kind->name(), "mpirun") << c.launch;
      const auto argv = rendered->argv();
      const auto structured = rendered->probe_plan(k_env);
      const auto parsed = probes::launch_plan_from_argv(argv, k_env);
      EXPECT_EQ(structured, parsed)
          << c.launch << "structured: n=" << structured.n << " nodes=" << structured.nodes
          << " per node=" << structured.ranks_per_node << " bind=" << structured.bind_to;
      EXPECT_TRUE(structured.uses_mpirun);
    }
  }
}

TEST(RenderedLaunch, ProbePlanReadsTheSettings) {
  const auto spec = study(
      "launch: {mpirun: {n: \"{ranks}\", npernode: 2, bind_to: \"{bind}\", map_by: socket}}\n");
  const auto rendered =
      render_launch(spec, values(std::int64_t{4}, std::string("core"), std::int64_t{3}), false);
  ASSERT_TRUE(rendered) << rendered.error();
  const auto plan = rendered->probe_plan(k_env);
  EXPECT_TRUE(plan.uses_mpirun);
  EXPECT_EQ(plan.n, 4);
  EXPECT_EQ(plan.ranks_per_node, 2);
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_EQ(plan.bind_to, "core");
  EXPECT_EQ(plan.map_by, "socket");
  EXPECT_EQ(plan.program_argv,
            (std::vector<std::string>{"/opt/tune/bin/tune-trainer", "--out", "/t/3"}));
  EXPECT_EQ(plan.env, k_env) << "the environment is the caller's (the launching one)";
}

TEST(RenderedLaunch, ArgvIsTheMpirunPrefixThenTheCommand) {
  const auto spec = study(
      "launch: {mpirun: {program: mpiexec, n: \"{ranks}\", npernode: 2, bind_to: \"{bind}\", "
      "map_by: socket, hostfile: hf, host: \"a,b\", oversubscribe: true, "
      "mca: {btl: \"self,vader\"}, extra: [\"--report-bindings\"]}}\n");
  const auto rendered =
      render_launch(spec, values(std::int64_t{4}, search::ParamValue{}, std::int64_t{3}), true);
  ASSERT_TRUE(rendered) << rendered.error();
  const std::vector<std::string> expected = {"mpiexec", "--allow-run-as-root", "-n", "4",
                                             "--npernode", "2", "--map-by", "socket", "--hostfile",
                                             // mpirun runs in the trial's folder: the path is
                                             // made absolute from where tune runs
                                             std::filesystem::absolute("hf").string(), "--host",
                                             "a,b", "--oversubscribe", "--mca", "btl", "self,vader",
                                             "-x", "OMP_NUM_THREADS", "--report-bindings",
                                             "/opt/tune/bin/tune-trainer", "--out", "/t/3"};
  EXPECT_EQ(rendered->argv(), expected);
  const auto req = rendered->request();
  EXPECT_EQ(req.argv, expected);
  EXPECT_EQ(req.env_set, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", "3"}}));
  EXPECT_EQ(req.env_unset, std::vector<std::string>{"GONE"}) << "null value: unset";
  const auto expanded =
      expand_launch(spec, values(std::int64_t{4}, search::ParamValue{}, std::int64_t{3}), true);
  ASSERT_TRUE(expanded) << expanded.error();
  EXPECT_EQ(expanded->argv, expected);
}

// hosts: [a, b] with npernode N is --host a:N,b:N (mpirun gives a bare name one slot); the
// probes see 2 nodes of 2 ranks, numbered by node.
TEST(RenderedLaunch, HostsListIsOneSlotCountPerNode) {
  const auto spec =
      study("launch: {mpirun: {npernode: 2, hosts: [h1, \"{extra}\"], bind_to: core}}\n");
  auto v = values(std::int64_t{2}, search::ParamValue{}, std::int64_t{1});
  v["extra"] = std::string("h2");
  const auto rendered = render_launch(spec, v, false);
  ASSERT_TRUE(rendered) << rendered.error();
  const auto argv = rendered->argv();
  const auto at = std::find(argv.begin(), argv.end(), "--host");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at + 1), "h1:2,h2:2");
  const auto plan = rendered->probe_plan(k_env);
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_EQ(plan.n, 4);
  ASSERT_EQ(plan.layout.size(), 2u);
  EXPECT_EQ(plan.layout[1], (probes::NodeRanks{"h2", {2, 3}}));
}

TEST(RenderedLaunch, ARawMpirunCommandIsReadFromItsArgv) {
  // No launch.mpirun: the user wrote the mpirun line into the command.
  const auto spec =
      study("", R"(["mpirun", "-n", "{ranks}", "--bind-to", "none", "-x", "OMP_NUM_THREADS=5",
                  "./train", "--omp-threads", "2"])");
  const auto rendered =
      render_launch(spec, values(std::int64_t{4}, std::string("core"), std::int64_t{3}), false);
  ASSERT_TRUE(rendered) << rendered.error();
  EXPECT_EQ(rendered->kind->name(), "direct");
  const auto plan = rendered->probe_plan(k_env);
  EXPECT_EQ(plan, probes::launch_plan_from_argv(rendered->argv(), k_env));
  EXPECT_TRUE(plan.uses_mpirun);
  EXPECT_EQ(plan.n, 4);
  EXPECT_EQ(plan.ranks_per_node, 4);
  EXPECT_EQ(plan.bind_to, "none");
  EXPECT_EQ(plan.env.at("OMP_NUM_THREADS"), "5");
  EXPECT_EQ(plan.program_argv, (std::vector<std::string>{"./train", "--omp-threads", "2"}));
}

TEST(RenderedLaunch, APlainCommandIsOneRank) {
  const auto spec = study("", R"(["./train", "-n", "4"])");
  const auto rendered =
      render_launch(spec, values(std::int64_t{4}, std::string("core"), std::int64_t{3}), false);
  ASSERT_TRUE(rendered) << rendered.error();
  const auto plan = rendered->probe_plan(k_env);
  EXPECT_FALSE(plan.uses_mpirun);
  EXPECT_EQ(plan.n, 1);
  EXPECT_EQ(plan.ranks_per_node, 1);
  EXPECT_EQ(plan.program_argv, (std::vector<std::string>{"./train", "-n", "4"}));
}

}  // namespace
}  // namespace tune::tuner
