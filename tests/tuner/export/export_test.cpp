// Job-script export: shell quoting round-trips nasty values through a real bash, every format is
// checked line by line and with `bash -n`, and the exported command is word for word what the
// runner would launch for the same trial.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/common/fake_source.h"
#include "tests/common/test_support.h"
#include "tests/tuner/support/text_lines.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/export/export.h"
#include "tuner/launch/launcher.h"
#include "tuner/probing/probe_hooks.h"
#include "tuner/run/runner.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

using test_support::read_file;

class ExportTest : public test_support::TempDirTest {
 protected:
  ExportTest() : TempDirTest("tune-export-") {}

  test_support::CommandOutput run(const std::vector<std::string>& argv,
                                  const std::map<std::string, std::string>& env = {}) {
    return test_support::run_command(argv, m_dir, env, "run", 20);
  }
  std::string write(const std::string& name, const std::string& text) {
    return test_support::write_file(m_dir / name, text);
  }
  // bash -n: the script parses.
  void expect_bash_syntax_ok(const std::string& name, const std::string& script) {
    const auto r = run({"bash", "-n", write(name, script)});
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.err << "\n" << script;
  }
  // The words bash makes of a command line, one per line between brackets.
  std::vector<std::string> words_of(const std::string& line,
                                    std::map<std::string, std::string> env = {}) {
    const auto r = run({"bash", "-c", "w() { printf '[%s]\\n' \"$@\"; }; w " + line}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> words;
    std::size_t pos = 0;
    while (pos < r.out.size()) {
      const auto end = r.out.find("]\n", pos);
      if (end == std::string::npos) break;
      words.push_back(r.out.substr(pos + 1, end - pos - 1));
      pos = end + 2;
    }
    return words;
  }
};

const char* k_study = R"(name: exp study
command: ["{tune_trainer}", "--out={trial_dir}", "--x={x}", "--label={label}", "--threads={omp}"]
launch:
  mpirun:
    n: "{ranks}"
    npernode: 2
    bind_to: "{bind}"
    oversubscribe: true
    mca: {btl: "self,vader"}
env:
  OMP_NUM_THREADS: "{omp}"
  WEIRD: "it's $HOME `id` \"q\" {x}"
  OUT_DIR: "{trial_dir}/sub"
  THREADS: "{nproc}"
params:
  x: {type: float, low: 0.5, high: 10}
  label: ["a b'c", plain]
  omp: [null, 1, 2]
  ranks: {type: int, low: 1, high: 8}
  bind: [none, core]
)";

StudySpec spec() {
  auto s = parse_study_spec(k_study, "/studies/exp.yaml");
  EXPECT_TRUE(s) << s.error();
  return *s;
}

// Trial #3 with x=2.5, label "a b'c", omp null, 5 ranks, bind core.
search::FrozenTrial winner(const StudySpec& s) {
  search::FrozenTrial t;
  t.number = 3;
  t.state = search::TrialState::complete;
  t.value = 1.25;
  const std::map<std::string, search::ParamValue> external = {{"x", 2.5},
                                                              {"label", std::string("a b'c")},
                                                              {"omp", std::monostate{}},
                                                              {"ranks", std::int64_t{5}},
                                                              {"bind", std::string("core")}};
  for (const auto& [name, dist] : s.space) {
    t.distributions[name] = dist;
    t.params[name] = *search::to_internal(dist, external.at(name));
  }
  return t;
}

ExportOptions options() {
  ExportOptions o;
  o.trainer = "/opt/tune/bin/tune-trainer";
  o.measured = "elapsed_time = 1.25 (one run)";
  o.storage = "/data/study.db";
  return o;
}

using test_text::lines_of;

// The script's mpirun command, its continuation lines joined back into one; empty if none.
std::string mpirun_command(const std::vector<std::string>& lines) {
  auto cmd = std::find_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.starts_with("mpirun "); });
  std::string command;
  for (; cmd != lines.end(); ++cmd) {
    std::string l = *cmd;
    const bool more = l.ends_with(" \\");
    if (more) l.resize(l.size() - 2);
    if (!command.empty()) command += ' ';
    command.append(l, l.find_first_not_of(' '));
    if (!more) break;
  }
  return command;
}

TEST_F(ExportTest, ShellQuoteRoundTripsNastyValuesThroughBash) {
  const std::vector<std::string> nasty = {
      "",     "plain", "a b",  "it's",      "'",        "''",       "$HOME",   "${x:-y}",
      "`id`", "$(id)", "a\nb", "tab\there", "\"",       "\\",       "*",       "~",
      "-n",   "a=b",   "!x",   "x;y&z|w",   "é ü 日本", "#comment", "{}[]?<>", " lead"};
  std::string line;
  for (const auto& v : nasty) line += shell_quote(v) + ' ';
  EXPECT_EQ(words_of(line), nasty);
  EXPECT_EQ(shell_quote("plain-1.5/x:y,z@w+q"), "plain-1.5/x:y,z@w+q");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  // What a terminal would obey (ESC, BEL, a C1 control, an invalid byte) is written \xNN inside
  // $'...', so a script shown with cat acts on nothing, and bash still reads the very bytes.
  std::vector<std::string> controls = nasty;
  for (const std::string v : {"omp\x1b]0;pwned\x07=1", "\x1b[2J",
                              "\xC2\x9B"
                              "2J",
                              "x\xFFy", "é\x01'\\", "tab\there", "\x7f"})
    controls.push_back(v);
  line.clear();
  for (const auto& v : controls) {
    const std::string quoted = bash_quote(v);
    EXPECT_EQ(terminal_text(quoted), quoted) << quoted;
    line += quoted + ' ';
  }
  EXPECT_EQ(words_of(line), controls);
  EXPECT_EQ(bash_quote("it's"), shell_quote("it's"));
  EXPECT_EQ(bash_quote("\x1b[2J'"), "$'\\x1b[2J\\''");
}

TEST_F(ExportTest, FormatNamesAreChecked) {
  EXPECT_EQ(*parse_export_format("slurm"), ExportFormat::slurm);
  auto bad = parse_export_format("lsf");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("bash, slurm, pbs, env, mpirun"), std::string::npos);
}

// The CLI checks --format against export_format_names(): every name there must parse.
TEST_F(ExportTest, EveryListedFormatNameParses) {
  EXPECT_EQ(export_format_names(),
            (std::vector<std::string>{"bash", "slurm", "pbs", "env", "mpirun", "slurm-array"}));
  for (const auto& name : export_format_names()) EXPECT_TRUE(parse_export_format(name)) << name;
}

TEST_F(ExportTest, MpirunLineIsWordForWordWhatTheRunnerLaunches) {
  const auto s = spec();
  const auto t = winner(s);
  const auto line = render_export(s, t, ExportFormat::mpirun, options());
  ASSERT_TRUE(line) << line.error();
  EXPECT_EQ(std::count(line->begin(), line->end(), '\n'), 1) << "one command line";

  // What the runner builds for this trial, with its folder where the script's $TUNE_OUT is.
  std::map<std::string, search::ParamValue> params;
  for (const auto& [name, dist] : s.space)
    params[name] = search::to_external(dist, t.params.at(name));
  const std::string out = (m_dir / "run").string();
  const auto values = trial_template_values(s, params, out, t.number, options().trainer);
  const auto req = expand_launch(s, values, /*allow_run_as_root=*/false);
  ASSERT_TRUE(req) << req.error();
  std::vector<std::string> expected = {"env", "-u", "OMP_NUM_THREADS"};
  for (const auto& [name, value] : req->env_set) expected.push_back(name + "=" + value);
  expected.insert(expected.end(), req->argv.begin(), req->argv.end());
  EXPECT_EQ(words_of(*line, {{"TUNE_OUT", out}}), expected) << *line;
  // And the pieces that matter, spelled out.
  EXPECT_NE(std::find(expected.begin(), expected.end(), "--label=a b'c"), expected.end());
  EXPECT_NE(std::find(expected.begin(), expected.end(), "--out=" + out), expected.end());
  EXPECT_EQ(std::find(expected.begin(), expected.end(), "--threads="), expected.end())
      << "a null parameter drops its argument";
  EXPECT_NE(std::find(expected.begin(), expected.end(),
                      "THREADS=" + std::to_string(std::thread::hardware_concurrency())),
            expected.end());
}

TEST_F(ExportTest, BashScriptLines) {
  const auto s = spec();
  const auto text = render_export(s, winner(s), ExportFormat::bash, options());
  ASSERT_TRUE(text) << text.error();
  expect_bash_syntax_ok("job.sh", *text);
  const auto lines = lines_of(*text);
  ASSERT_GE(lines.size(), 10u);
  EXPECT_EQ(lines[0], "#!/usr/bin/env bash");
  EXPECT_EQ(lines[1], "# Exported by `tune export` from study 'exp study', trial #3.");
  EXPECT_EQ(lines[2], "# Measured: elapsed_time = 1.25 (one run)");
  EXPECT_EQ(lines[3], "# Parameters: x=2.5 label=a b'c omp=null ranks=5 bind=core");
  EXPECT_EQ(lines[4], "# Study file: /studies/exp.yaml");
  EXPECT_EQ(lines[5], "# Database: /data/study.db");
  auto has = [&](const std::string& l) {
    return std::find(lines.begin(), lines.end(), l) != lines.end();
  };
  EXPECT_TRUE(has("set -euo pipefail"));
  EXPECT_TRUE(has("if [ -z \"${TUNE_OUT:-}\" ]; then TUNE_OUT=./tune-run; fi"));
  EXPECT_TRUE(
      has("unset OMP_NUM_THREADS  # null in this trial: the library keeps its own default"));
  EXPECT_TRUE(has("export WEIRD='it'\\''s $HOME `id` \"q\" 2.5'"));
  EXPECT_TRUE(has("export OUT_DIR=\"$TUNE_OUT\"/sub"));
  EXPECT_TRUE(has("export THREADS=\"$(nproc)\""));
  EXPECT_TRUE(has("  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"));
  EXPECT_TRUE(has("cd -- \"$TUNE_OUT\""));
  const std::string command = mpirun_command(lines);
  ASSERT_FALSE(command.empty());
  EXPECT_TRUE(
      command.starts_with("mpirun -n 5 --npernode 2 --bind-to core --oversubscribe --mca btl "
                          "self,vader -x OUT_DIR -x THREADS -x WEIRD /opt/tune/bin/tune-trainer "
                          "--out=\"$TUNE_OUT\" --x=2.5 '--label=a b'\\''c'"))
      << command;
}

TEST_F(ExportTest, SlurmAndPbsDirectivesComeFromTheLaunchSpec) {
  const auto s = spec();
  const auto slurm = render_export(s, winner(s), ExportFormat::slurm, options());
  ASSERT_TRUE(slurm) << slurm.error();
  expect_bash_syntax_ok("slurm.sh", *slurm);
  auto lines = lines_of(*slurm);
  EXPECT_EQ(lines[0], "#!/usr/bin/env bash");
  EXPECT_EQ(lines[1], "#SBATCH --job-name=tune-exp_study");
  EXPECT_EQ(lines[2], "#SBATCH --nodes=3");  // 5 ranks, 2 per node
  EXPECT_EQ(lines[3], "#SBATCH --ntasks-per-node=2");
  // sbatch stops reading directives at the first command: every #SBATCH comes before it.
  const auto first_command = std::find_if(lines.begin() + 1, lines.end(),
                                          [](const auto& l) { return !l.empty() && l[0] != '#'; });
  EXPECT_EQ(std::find_if(first_command, lines.end(),
                         [](const auto& l) { return l.starts_with("#SBATCH"); }),
            lines.end());

  const auto pbs = render_export(s, winner(s), ExportFormat::pbs, options());
  ASSERT_TRUE(pbs) << pbs.error();
  expect_bash_syntax_ok("pbs.sh", *pbs);
  lines = lines_of(*pbs);
  EXPECT_EQ(lines[1], "#PBS -N tune-exp_study");
  EXPECT_EQ(lines[2], "#PBS -l select=3:ncpus=2:mpiprocs=2");
  EXPECT_EQ(lines[3], "#PBS -j oe");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "cd -- \"${PBS_O_WORKDIR:-.}\""), lines.end());
}

TEST_F(ExportTest, EnvFileSourcesToTheTrialsEnvironment) {
  const auto s = spec();
  const auto text = render_export(s, winner(s), ExportFormat::env, options());
  ASSERT_TRUE(text) << text.error();
  const auto lines = lines_of(*text);
  EXPECT_EQ(lines[0], "# Exported by `tune export` from study 'exp study', trial #3.");
  for (const auto& l : lines) {
    if (l.empty() || l[0] == '#') continue;
    const auto eq = l.find('=');
    ASSERT_NE(eq, std::string::npos) << l;
    EXPECT_TRUE(
        std::all_of(l.begin(), l.begin() + static_cast<long>(eq),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
        << "KEY=VALUE lines only: " << l;
  }
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "# OMP_NUM_THREADS is left unset (null in this trial: the library's own "
                      "default)"),
            lines.end());
  const auto file = write("winner.env", *text);
  const auto r = run({"bash", "-c",
                      "set -a; . \"$1\"; set +a; printf '%s|%s|%s|%s' \"$WEIRD\" \"$OUT_DIR\" "
                      "\"${OMP_NUM_THREADS-unset}\" \"$THREADS\"",
                      "bash", file},
                     {{"TUNE_OUT", "/jobs/42"}, {"HOME", "/home/u"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "it's $HOME `id` \"q\" 2.5|/jobs/42/sub|unset|" +
                       std::to_string(std::thread::hardware_concurrency()));
}

TEST_F(ExportTest, JobShapes) {
  auto s = spec();
  auto t = winner(s);
  auto shape = job_shape(s, t);
  ASSERT_TRUE(shape) << shape.error();
  EXPECT_EQ(shape->nodes, 3);
  EXPECT_EQ(shape->tasks_per_node, 2);
  EXPECT_EQ(shape->total_tasks, 5);
  s.launch.npernode.clear();
  shape = job_shape(s, t);
  EXPECT_EQ(shape->nodes, 1);
  EXPECT_EQ(shape->tasks_per_node, 5);
  s.launch.n = "{nproc}";  // known only where the job runs
  shape = job_shape(s, t);
  EXPECT_EQ(shape->nodes, 1);
  EXPECT_FALSE(shape->tasks_per_node);
  s.launch.mpirun = false;
  shape = job_shape(s, t);
  EXPECT_EQ(shape->tasks_per_node, 1);
}

// 2 hosts x 1 rank from a hostfile: two nodes of one task each, not one node of two tasks.
TEST_F(ExportTest, HostsSizeTheBatchJob) {
  auto s = spec();
  s.launch.n = "2";
  s.launch.npernode.clear();
  s.launch.hostfile = write("hostfile", "10.99.0.1 slots=1\n10.99.0.2 slots=1\n");
  const auto t = winner(s);
  const auto shape = job_shape(s, t);
  ASSERT_TRUE(shape) << shape.error();
  EXPECT_EQ(shape->nodes, 2);
  EXPECT_EQ(shape->tasks_per_node, 1);
  EXPECT_EQ(shape->total_tasks, 2);
  const auto slurm = render_export(s, t, ExportFormat::slurm, options());
  ASSERT_TRUE(slurm) << slurm.error();
  const auto lines = lines_of(*slurm);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "#SBATCH --nodes=2"), lines.end()) << *slurm;
  EXPECT_NE(std::find(lines.begin(), lines.end(), "#SBATCH --ntasks-per-node=1"), lines.end());
  EXPECT_NE(mpirun_command(lines).find("--hostfile " + s.launch.hostfile), std::string::npos)
      << *slurm;
  const auto pbs = render_export(s, t, ExportFormat::pbs, options());
  ASSERT_TRUE(pbs) << pbs.error();
  EXPECT_NE(pbs->find("#PBS -l select=2:ncpus=1:mpiprocs=1\n"), std::string::npos) << *pbs;
  // --host with npernode: 2 hosts x 2.
  s.launch.hostfile.clear();
  s.launch.host = "a:2,b:2";
  s.launch.n.clear();
  s.launch.npernode = "2";
  const auto both = job_shape(s, t);
  ASSERT_TRUE(both) << both.error();
  EXPECT_EQ(both->nodes, 2);
  EXPECT_EQ(both->tasks_per_node, 2);
  EXPECT_EQ(both->total_tasks, 4);
}

// Trials run as root had --allow-run-as-root; the one-line export keeps it, scripts need not.
TEST_F(ExportTest, MpirunLineKeepsAllowRunAsRootWhenAsked) {
  const auto s = spec();
  auto o = options();
  const auto plain = render_export(s, winner(s), ExportFormat::mpirun, o);
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(plain->find("--allow-run-as-root"), std::string::npos);
  o.allow_run_as_root = true;
  const auto root = render_export(s, winner(s), ExportFormat::mpirun, o);
  ASSERT_TRUE(root) << root.error();
  EXPECT_NE(root->find(" mpirun --allow-run-as-root -n 5 "), std::string::npos) << *root;
  const auto script = render_export(s, winner(s), ExportFormat::bash, o);
  ASSERT_TRUE(script) << script.error();
  EXPECT_EQ(script->find("--allow-run-as-root"), std::string::npos);
}

// launch.slurm: the batch job asks for what the trial's step used, and runs the same srun line.
TEST_F(ExportTest, SlurmScriptOfASrunStudySizesTheJobFromTheStep) {
  auto s = spec();
  s.launch = {};
  s.launch.slurm.emplace();
  s.launch.slurm->nodes = "2";
  s.launch.slurm->ntasks = "{ranks}";  // 5 in the winner
  const auto t = winner(s);
  auto shape = job_shape(s, t);
  ASSERT_TRUE(shape) << shape.error();
  EXPECT_EQ(shape->nodes, 2);
  EXPECT_EQ(shape->tasks_per_node, 3);
  EXPECT_EQ(shape->total_tasks, 5);
  const auto text = render_export(s, t, ExportFormat::slurm, options());
  ASSERT_TRUE(text) << text.error();
  expect_bash_syntax_ok("srun.slurm", *text);
  EXPECT_NE(text->find("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=3\n"), std::string::npos)
      << *text;
  EXPECT_NE(text->find("\nsrun --job-name=tune-exp_study-3 --mpi=pmix --nodes=2 --ntasks=5 "),
            std::string::npos)
      << *text;
  s.launch.slurm->ntasks.clear();
  s.launch.slurm->ntasks_per_node = "4";
  shape = job_shape(s, t);
  ASSERT_TRUE(shape) << shape.error();
  EXPECT_EQ(shape->tasks_per_node, 4);
  EXPECT_EQ(shape->total_tasks, 8);
}

// A cluster-bound trial: OMP_NUM_THREADS=2 (the largest pool), bind_to core, --oversubscribe and
// a pml workaround from the development machine, 100 s measured, tuned on a 2-socket node.
StudySpec cluster_spec() {
  auto s = spec();
  s.launch.mca = {{"pml", "^cm"}};
  return s;
}

search::FrozenTrial cluster_winner(const StudySpec& s, const nlohmann::json& machine) {
  auto t = winner(s);
  t.params["omp"] = *search::to_internal(t.distributions.at("omp"), std::int64_t{2});
  t.user_attrs[k_attr_wall_time] = 100.0;
  if (!machine.is_null()) t.system_attrs[k_attr_machine] = machine;
  return t;
}

const nlohmann::json k_node7 = {
    {"host", "node7"}, {"packages", 2}, {"numa_nodes", 2}, {"cores", 16}, {"pus", 32}};

TEST_F(ExportTest, WalltimeIsTwiceTheMeasuredTimeAtLeastFiveMinutesMoreInWholeMinutes) {
  EXPECT_EQ(walltime_from_measured(0), 300);
  EXPECT_EQ(walltime_from_measured(1), 360);      // 301 s, rounded up
  EXPECT_EQ(walltime_from_measured(100), 420);    // 400 s: +5 min beats 2x
  EXPECT_EQ(walltime_from_measured(1000), 2040);  // 2000 s: 2x beats +5 min
  EXPECT_EQ(format_walltime(420), "00:07:00");
  EXPECT_EQ(format_walltime(100 * 3600 + 61), "100:01:01");
}

TEST_F(ExportTest, SlurmScriptAsksForTimeCpusAndNamesTheTunedMachine) {
  const auto s = cluster_spec();
  const auto text = render_export(s, cluster_winner(s, k_node7), ExportFormat::slurm, options());
  ASSERT_TRUE(text) << text.error();
  expect_bash_syntax_ok("cluster.slurm", *text);
  const auto lines = lines_of(*text);
  ASSERT_GE(lines.size(), 12u);
  EXPECT_EQ(lines[1], "#SBATCH --job-name=tune-exp_study");
  EXPECT_EQ(lines[2], "#SBATCH --nodes=3");
  EXPECT_EQ(lines[3], "#SBATCH --ntasks-per-node=2");
  EXPECT_EQ(lines[4], "#SBATCH --cpus-per-task=2");
  EXPECT_EQ(lines[5], "#SBATCH --time=00:07:00");
  auto has = [&](const std::string& l) {
    return std::find(lines.begin(), lines.end(), l) != lines.end();
  };
  EXPECT_TRUE(has("# Tuned on: node7: 2 packages, 2 NUMA nodes, 16 cores, 32 PUs")) << *text;
  // No prediction stored (probes off): the variables' guess, and the header says so.
  EXPECT_NE(
      text->find("\n# CPUs per task: 2; the largest thread pool of a rank (OMP_NUM_THREADS=2), "
                 "read from the trial's\n#   variables named *THREADS*: the trial has no "
                 "prediction (probes off).\n# The winner ran 2 ranks x 2 threads on 16 "
                 "cores (32 PUs): 4 of its 32 PUs busy, as --cpus-per-task=2 asks.\n"),
      std::string::npos)
      << *text;
  EXPECT_TRUE(
      has("# Time limit 00:07:00: twice the trial's run (100.0 s), at least 5 minutes "
          "more, rounded up to minutes."))
      << *text;
  EXPECT_TRUE(
      has("# The trial may have been a shortened run (fewer steps than a real one): a "
          "full run may need longer;"));
  // The OpenMP pool and the task's CPUs agree, and the script checks the allocation did so.
  EXPECT_TRUE(
      has("# OMP_NUM_THREADS=2, as the trial set it, matches --cpus-per-task=2 above: "
          "each rank's OpenMP"));
  EXPECT_TRUE(has("if [ \"${SLURM_CPUS_PER_TASK:-2}\" != 2 ]; then"));
  // mpirun stays, with why and the srun line that would match its binding.
  EXPECT_TRUE(
      has("# Started with the study's mpirun, not srun: inside the allocation Open MPI's "
          "mpirun reads"))
      << *text;
  EXPECT_NE(text->find("(--bind-to core) stays word for word what was measured"),
            std::string::npos);
  EXPECT_TRUE(
      has("#   srun --mpi=pmix --ntasks=5 --ntasks-per-node=2 --cpus-per-task=2 "
          "--cpu-bind=cores ..."))
      << *text;
  // The development machine's flags are kept, each named with why it may not fit a cluster.
  EXPECT_TRUE(
      has("# Kept from the study, which ran on a development machine; they may not be "
          "wanted on a cluster:"));
  EXPECT_NE(text->find("\n#   --oversubscribe: lets more ranks start than the node has slots, "
                       "as the study needed on its\n#     development machine; in an allocation it "
                       "hides a job shape that does not fit.\n"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("\n#   --mca pml ^cm: turns off the cm PML (PSM/OFI), a workaround on the "
                       "study's machine; on a\n#     cluster that PML may be the fast "
                       "interconnect.\n"),
            std::string::npos);
  const std::string command = mpirun_command(lines);
  EXPECT_TRUE(
      command.starts_with("mpirun -n 5 --npernode 2 --bind-to core --oversubscribe "
                          "--mca pml '^cm' -x OMP_NUM_THREADS"))
      << command;
  // Every comment about the job comes before the command it is about.
  const auto at = [&](std::string_view prefix) {
    return std::find_if(lines.begin(), lines.end(),
                        [&](const auto& l) { return l.starts_with(prefix); }) -
           lines.begin();
  };
  EXPECT_LT(at("# Kept from the study"), at("mpirun "));
  EXPECT_LT(at("# Started with the study's mpirun"), at("mpirun "));
}

TEST_F(ExportTest, PbsScriptAsksForTheSameTimeAndCpus) {
  const auto s = cluster_spec();
  const auto text = render_export(s, cluster_winner(s, k_node7), ExportFormat::pbs, options());
  ASSERT_TRUE(text) << text.error();
  expect_bash_syntax_ok("cluster.pbs", *text);
  const auto lines = lines_of(*text);
  EXPECT_EQ(lines[2], "#PBS -l select=3:ncpus=4:mpiprocs=2:ompthreads=2");  // 2 ranks x 2
  EXPECT_EQ(lines[3], "#PBS -l walltime=00:07:00");
  EXPECT_EQ(lines[4], "#PBS -j oe");
}

TEST_F(ExportTest, ReRunsAndTheUsersWalltimeSetTheTimeLimit) {
  const auto s = cluster_spec();
  auto o = options();
  o.rerun_wall_times = {90.0, 250.0};  // the longest of 3 runs: 250 s -> 550 s -> 10 min
  auto text = render_export(s, cluster_winner(s, k_node7), ExportFormat::slurm, o);
  ASSERT_TRUE(text) << text.error();
  EXPECT_NE(text->find("\n#SBATCH --time=00:10:00\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("(250.0 s, the longest of 3 runs)"), std::string::npos) << *text;
  o.walltime_s = 2 * 3600;
  text = render_export(s, cluster_winner(s, k_node7), ExportFormat::slurm, o);
  ASSERT_TRUE(text) << text.error();
  EXPECT_NE(text->find("\n#SBATCH --time=02:00:00\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("# Time limit 02:00:00: given to tune export (--walltime).\n"),
            std::string::npos);
  // Nothing measured, nothing given: no limit, and the header says so.
  auto t = cluster_winner(s, nlohmann::json());
  t.user_attrs.erase(k_attr_wall_time);
  text = render_export(s, t, ExportFormat::slurm, options());
  ASSERT_TRUE(text) << text.error();
  EXPECT_EQ(text->find("#SBATCH --time"), std::string::npos) << *text;
  EXPECT_NE(text->find("# No time limit: the trial has no measured wall time"), std::string::npos);
  EXPECT_NE(text->find("# Tuned on: unknown (the trial did not record its machine"),
            std::string::npos);
  EXPECT_EQ(text->find("tune_pus="), std::string::npos);  // no machine to compare with
}

// The script's body runs under bash with a stand-in mpirun: the machine and thread checks warn
// exactly when this node or the allocation differs from what was tuned.
TEST_F(ExportTest, SlurmScriptBodyWarnsOnAnotherMachineOrAnotherCpuCount) {
  const auto s = cluster_spec();
  const fs::path bin = m_dir / "bin";
  fs::create_directories(bin);
  write("bin/mpirun", "#!/bin/sh\necho \"mpirun $*\" > ran\n");
  fs::permissions(bin / "mpirun", fs::perms::owner_all);
  const std::map<std::string, std::string> env = {
      {"PATH", bin.string() + ":" + std::getenv("PATH")}, {"TUNE_OUT", (m_dir / "out").string()}};

  // This machine, as the runner records it: no warning about the machine.
  const auto here = run({"bash", "-c",
                         "echo $(nproc --all) $({ lscpu -p=core,socket 2>/dev/null || true; } | "
                         "{ grep -v '^#' || true; } | sort -u | wc -l)"});
  ASSERT_EQ(here.exit_code, 0) << here.err;
  int pus = 0, cores = 0;
  std::istringstream(here.out) >> pus >> cores;
  ASSERT_GT(pus, 0);
  const nlohmann::json this_machine = {{"host", "here"},
                                       {"packages", 1},
                                       {"numa_nodes", 1},
                                       {"cores", cores > 0 ? cores : 1},
                                       {"pus", pus}};
  auto text = render_export(s, cluster_winner(s, this_machine), ExportFormat::slurm, options());
  ASSERT_TRUE(text) << text.error();
  auto r = run({"bash", write("here.slurm", *text)}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (cores > 0) {
    EXPECT_EQ(r.err.find("warning: this node"), std::string::npos) << r.err;
  }
  EXPECT_EQ(r.err.find("SLURM_CPUS_PER_TASK"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(m_dir / "out" / "ran").starts_with("mpirun -n 5 --npernode 2"));

  // Another machine and an allocation with 3 CPUs per task: both are named, the job still runs.
  text = render_export(s, cluster_winner(s, k_node7), ExportFormat::slurm, options());
  ASSERT_TRUE(text) << text.error();
  auto env3 = env;
  env3["SLURM_CPUS_PER_TASK"] = "3";
  r = run({"bash", write("node7.slurm", *text)}, env3);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the setting was tuned on 16 cores and 32 PUs (node7)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("warning: SLURM_CPUS_PER_TASK=3, but the tuned setting runs 2 thread(s) "
                       "per rank"),
            std::string::npos)
      << r.err;
}

TEST_F(ExportTest, DirectCommandWithoutMpirun) {
  auto s = spec();
  s.launch = {};
  const auto text = render_export(s, winner(s), ExportFormat::bash, options());
  ASSERT_TRUE(text) << text.error();
  expect_bash_syntax_ok("direct.sh", *text);
  EXPECT_EQ(text->find("OMPI_ALLOW_RUN_AS_ROOT"), std::string::npos);
  EXPECT_NE(text->find("\n/opt/tune/bin/tune-trainer --out=\"$TUNE_OUT\" --x=2.5 "
                       "'--label=a b'\\''c'\n"),
            std::string::npos)
      << *text;
}

// A study's PGPASSWORD and a storage URL's password never go into an export: the header shows the
// database masked, the scripts say where the password comes from instead, and the mpirun line
// leaves the variable to the caller's environment.
TEST_F(ExportTest, NoFormatCarriesAPassword) {
  std::string text = k_study;
  text.replace(text.find("env:\n") + 5, 0, "  PGPASSWORD: \"pw-in-study\"\n");
  const auto s = parse_study_spec(text, "/studies/exp.yaml");
  ASSERT_TRUE(s) << s.error();
  auto o = options();
  o.storage = "postgresql://tune:pw-in-url@db:5432/studies?password=pw-in-query&sslmode=require";
  for (const auto format : {ExportFormat::bash, ExportFormat::slurm, ExportFormat::pbs,
                            ExportFormat::env, ExportFormat::mpirun}) {
    const auto out = render_export(*s, winner(*s), format, o);
    ASSERT_TRUE(out) << out.error();
    for (const char* secret : {"pw-in-study", "pw-in-url", "pw-in-query"})
      EXPECT_EQ(out->find(secret), std::string::npos) << secret << " in:\n" << *out;
    EXPECT_NE(out->find("WEIRD="), std::string::npos) << *out;  // the other variables stay
    if (format == ExportFormat::mpirun) {
      EXPECT_EQ(out->find("PGPASSWORD="), std::string::npos) << *out;  // `-x PGPASSWORD` stays
      continue;
    }
    EXPECT_NE(out->find("# Database: postgresql://tune:***@db:5432/studies?password=***&"
                        "sslmode=require\n"),
              std::string::npos)
        << *out;
    EXPECT_NE(out->find("# PGPASSWORD is a secret and not written here: set it in the "
                        "environment (or use ~/.pgpass)\n"),
              std::string::npos)
        << *out;
    if (format != ExportFormat::env) expect_bash_syntax_ok("secret.sh", *out);
  }
}

// --- CPUs per task from the trial's prediction (issue 35) -----------------------------------

// `trial` with what the runner and the probes store before it runs: the machine it ran on and
// the prediction the probe hooks make from its rendered launch, on an invented machine of
// `cores` cores (one PU each).
search::FrozenTrial with_prediction(const StudySpec& s, search::FrozenTrial t, int cores) {
  auto topo = probes::read_synthetic_topology(fmt::format("pack:1 core:{} pu:1", cores));
  EXPECT_TRUE(topo.has_value());
  auto hooks = make_probe_hooks(s.probes, std::make_unique<probes::FakeSource>(*topo));
  EXPECT_TRUE(hooks.has_value()) << (hooks ? "" : hooks.error());
  std::map<std::string, search::ParamValue> params;
  for (const auto& [name, dist] : s.space)
    params[name] = search::to_external(dist, t.params.at(name));
  const auto launch = render_launch(
      s, trial_template_values(s, params, "/tmp/trial", t.number, "/opt/tune/bin/tune-trainer"),
      false);
  EXPECT_TRUE(launch.has_value()) << (launch ? "" : launch.error());
  const auto attrs = hooks->before_launch(t, *launch);
  t.system_attrs[k_attr_probe_prediction] = attrs.at(k_attr_probe_prediction);
  t.system_attrs[k_attr_machine] = {
      {"host", "node1"}, {"packages", 1}, {"numa_nodes", 1}, {"cores", cores}, {"pus", cores}};
  return t;
}

// A program whose threads are its own flag, `--threads={t}`, which the study's `knobs:` says
// sizes its intra-op pool; no variable of the trial names a thread count.
const char* k_flag_study = R"(name: flag study
command: [python3, train.py, "--threads={t}"]
launch:
  mpirun: {n: 2, bind_to: none}
knobs:
  t: {pool: torch_intra_op}
params:
  t: [1, 2, 4]
)";

search::FrozenTrial trial_of(const StudySpec& s,
                             const std::map<std::string, search::ParamValue>& v) {
  search::FrozenTrial t;
  t.number = 7;
  t.state = search::TrialState::complete;
  t.value = 1.0;
  for (const auto& [name, dist] : s.space) {
    t.distributions[name] = dist;
    t.params[name] = *search::to_internal(dist, v.at(name));
  }
  return t;
}

TEST_F(ExportTest, AFlagKnobGetsCpusPerTaskFromThePrediction) {
  const auto s = parse_study_spec(k_flag_study, "/studies/flag.yaml");
  ASSERT_TRUE(s) << s.error();
  // 2 ranks x 4 intra-op threads on 16 cores: the prediction's 4 busy threads per rank fit.
  const auto t = with_prediction(*s, trial_of(*s, {{"t", std::int64_t{4}}}), 16);
  const auto text = render_export(*s, t, ExportFormat::slurm, options());
  ASSERT_TRUE(text) << text.error();
  expect_bash_syntax_ok("flag.slurm", *text);
  const auto lines = lines_of(*text);
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[2], "#SBATCH --nodes=1");
  EXPECT_EQ(lines[3], "#SBATCH --ntasks-per-node=2");
  EXPECT_EQ(lines[4], "#SBATCH --cpus-per-task=4") << *text;
  EXPECT_NE(text->find("\n# CPUs per task: 4; the trial's busy threads per rank, 4, from the "
                       "probes' prediction for it:\n#   main 1, torch_intra_op 3 ({t} = 4 (study "
                       "knob)).\n"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("\n# The winner ran 2 ranks x 4 threads on 16 cores: 8 of its 16 PUs "
                       "busy, as --cpus-per-task=4 asks.\n"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("--cpus-per-task=4 --cpu-bind=none ..."), std::string::npos) << *text;
  const auto pbs = render_export(*s, t, ExportFormat::pbs, options());
  ASSERT_TRUE(pbs) << pbs.error();
  EXPECT_NE(pbs->find("\n#PBS -l select=1:ncpus=8:mpiprocs=2:ompthreads=4\n"), std::string::npos)
      << *pbs;

  // Without a prediction (probes off), the variable-name rule finds nothing: no request, as before.
  auto off = t;
  off.system_attrs.erase(k_attr_probe_prediction);
  const auto guessed = render_export(*s, off, ExportFormat::slurm, options());
  ASSERT_TRUE(guessed) << guessed.error();
  EXPECT_EQ(guessed->find("--cpus-per-task"), std::string::npos) << *guessed;
}

// The quickstart's winner: 2 ranks x 2 OpenMP threads, unbound, on 2 cores (oversubscribed on
// purpose). The script asks for the 2 CPUs the node has, 1 per task, and says why; a node of
// that size could never grant 2 x 2.
TEST_F(ExportTest, CpusPerTaskNeverExceedTheTunedNode) {
  auto s = parse_study_spec(R"(name: omp
command: [prog]
launch:
  mpirun: {n: 2, bind_to: none, oversubscribe: true}
env: {OMP_NUM_THREADS: "{omp}"}
params:
  omp: [1, 2]
)",
                            "/studies/omp.yaml");
  ASSERT_TRUE(s) << s.error();
  const auto t = with_prediction(*s, trial_of(*s, {{"omp", std::int64_t{2}}}), 2);
  const auto text = render_export(*s, t, ExportFormat::slurm, options());
  ASSERT_TRUE(text) << text.error();
  expect_bash_syntax_ok("omp.slurm", *text);
  const auto lines = lines_of(*text);
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[3], "#SBATCH --ntasks-per-node=2");
  EXPECT_EQ(lines[4], "#SBATCH --cpus-per-task=1") << *text;
  auto has = [&](const std::string& l) {
    return std::find(lines.begin(), lines.end(), l) != lines.end();
  };
  EXPECT_TRUE(
      has("# The winner ran 2 ranks x 2 threads on 2 cores (2x oversubscribed); "
          "--cpus-per-task=1 asks for what it had."))
      << *text;
  EXPECT_TRUE(
      has("# --cpus-per-task=1 above is what the winner had on the node it was tuned on; "
          "the trial's OMP_NUM_THREADS is 2."))
      << *text;
  EXPECT_TRUE(has("if [ \"${SLURM_CPUS_PER_TASK:-1}\" != 1 ]; then")) << *text;
  EXPECT_TRUE(has("export OMP_NUM_THREADS=2")) << "the winner's threads stay what was measured";
  const auto pbs = render_export(*s, t, ExportFormat::pbs, options());
  ASSERT_TRUE(pbs) << pbs.error();
  EXPECT_NE(pbs->find("\n#PBS -l select=1:ncpus=2:mpiprocs=2:ompthreads=1\n"), std::string::npos)
      << *pbs;
  EXPECT_NE(pbs->find("\n# ncpus: 2 (2 ranks x 1 CPU); the trial's busy threads per rank, 2, "),
            std::string::npos)
      << *pbs;
  EXPECT_NE(pbs->find("(2x oversubscribed); ncpus=2 (1 per rank) asks for what it had.\n"),
            std::string::npos)
      << *pbs;

  // Without a prediction the variables' guess (OMP_NUM_THREADS=2) is capped the same way.
  auto off = t;
  off.system_attrs.erase(k_attr_probe_prediction);
  const auto guessed = render_export(*s, off, ExportFormat::slurm, options());
  ASSERT_TRUE(guessed) << guessed.error();
  EXPECT_NE(guessed->find("\n#SBATCH --cpus-per-task=1\n"), std::string::npos) << *guessed;
  EXPECT_NE(guessed->find("the trial has no prediction (probes off)"), std::string::npos)
      << *guessed;
  // 4 cores hold 2 x 2: asked as it ran.
  const auto roomy = with_prediction(*s, trial_of(*s, {{"omp", std::int64_t{2}}}), 4);
  const auto fits = render_export(*s, roomy, ExportFormat::slurm, options());
  ASSERT_TRUE(fits) << fits.error();
  EXPECT_NE(fits->find("\n#SBATCH --cpus-per-task=2\n"), std::string::npos) << *fits;
  EXPECT_NE(fits->find("\n# The winner ran 2 ranks x 2 threads on 4 cores: 4 of its 4 PUs busy"),
            std::string::npos)
      << *fits;
}

// A stored prediction that is not as the probes write it is an error naming the attribute.
TEST_F(ExportTest, AMalformedPredictionIsAnErrorNamingTheAttribute) {
  const auto s = spec();
  auto t = winner(s);
  t.system_attrs[k_attr_probe_prediction] = {{"schema_version", 1},
                                             {"ranks", {{{"groups", {{{"name", "main"}}}}}}}};
  const auto r = render_export(s, t, ExportFormat::slurm, options());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("trial #3: system attr 'probe_prediction.ranks[0].groups[0].busy' is "
                           "not a whole number"),
            std::string::npos)
      << r.error();
  t.system_attrs[k_attr_probe_prediction] = "oops";
  const auto p = render_export(s, t, ExportFormat::pbs, options());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("'probe_prediction' is not a JSON object"), std::string::npos)
      << p.error();
  // bash and env ask the scheduler for nothing: they export as before.
  EXPECT_TRUE(render_export(s, t, ExportFormat::bash, options()));
}

TEST_F(ExportTest, TrialMissingAParameterIsAnErrorNamingIt) {
  const auto s = spec();
  auto t = winner(s);
  t.params.erase("bind");
  const auto r = render_export(s, t, ExportFormat::bash, options());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("trial #3 has no value for parameter 'bind'"), std::string::npos)
      << r.error();
}

}  // namespace
}  // namespace tune::tuner
