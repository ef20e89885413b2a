// `tune init` from what the probe run saw: result lines found in output (hpcc's summary, a
// training script's progress and result lines), import lines read as Python reads them, a
// program that is not there, and the study written from invented findings (the knobs of the
// pools the ranks start, the `program:` section, `files:`, the objective from a file).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "probes/knob_catalog.h"
#include "tuner/init/init_probe.h"
#include "tuner/init/init_study.h"
#include "tuner/measure/objective.h"
#include "tuner/study/patterns.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

const ResultLine* find(const std::vector<ResultLine>& lines, const std::string& name) {
  const auto it =
      std::find_if(lines.begin(), lines.end(), [&](const ResultLine& r) { return r.name == name; });
  return it == lines.end() ? nullptr : &*it;
}

// hpcc 1.5.0's hpccoutf.txt, shortened: rates, times, sizes and counts in one summary.
TEST(InitProbe, ResultLinesOfAnHpccSummary) {
  const std::string text =
      "Execution time (wall clock)      =     1.606 sec on 2 processes\n"
      "On naturally ordered ring: latency=      0.000291 msec, bandwidth=  12484.608818 MB/s\n"
      "Gflop/s:     3.800\n"
      "Begin of Summary section.\n"
      "VersionMajor=1\n"
      "CommWorldProcs=2\n"
      "HPL_Tflops=0.00749878\n"
      "HPL_time=0.0111629\n"
      "HPL_eps=1.11022e-16\n"
      "HPL_N=500\n"
      "StarDGEMM_Gflops=25.7324\n"
      "PTRANS_GBs=0.0368307\n"
      "MPIRandomAccess_GUPs=0.035796\n";
  const auto lines = find_result_lines(text, "hpccoutf.txt");
  ASSERT_FALSE(lines.empty());
  // Work rates first, named ones in the order they appear; then data rates; then times.
  EXPECT_EQ(lines[0].name, "HPL_Tflops");
  EXPECT_DOUBLE_EQ(lines[0].value, 0.00749878);
  EXPECT_TRUE(lines[0].maximize);
  EXPECT_EQ(lines[0].source, "hpccoutf.txt");
  EXPECT_EQ(lines[0].regex, R"(\bHPL_Tflops=\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?))");
  EXPECT_EQ(lines[1].name, "StarDGEMM_Gflops");
  EXPECT_EQ(lines[2].name, "MPIRandomAccess_GUPs");
  EXPECT_EQ(lines[3].name, "Gflop/s");  // a bare unit: of what, only its place says
  ASSERT_NE(find(lines, "bandwidth"), nullptr);
  EXPECT_EQ(find(lines, "bandwidth")->unit, "MB/s");
  EXPECT_EQ(find(lines, "bandwidth")->rank, 1);
  ASSERT_NE(find(lines, "PTRANS_GBs"), nullptr);
  ASSERT_NE(find(lines, "HPL_time"), nullptr);
  EXPECT_FALSE(find(lines, "HPL_time")->maximize);
  EXPECT_EQ(find(lines, "latency")->unit, "msec");
  EXPECT_FALSE(find(lines, "latency")->maximize);
  // Sizes, counts, versions and residuals are no objective.
  for (const char* name : {"VersionMajor", "CommWorldProcs", "HPL_eps", "HPL_N"})
    EXPECT_EQ(find(lines, name), nullptr) << name;
}

TEST(InitProbe, ResultLinesOfATrainingScript) {
  const std::string text =
      "step 1/20 loss 2.3012\n"
      "epoch: 1 samples/s: 1200.5 loss: 2.1\n"
      "step 2/20 loss 2.2\n"
      "epoch: 2 samples/s: 1300.5 loss: 2.0\n"
      "elapsed: 3.25 s\n"
      "samples/s: 1234.5 (12000 samples in 9.7 s)\n"
      "img/s=+88 version: 2x\n";
  const auto lines = find_result_lines(text, "stdout");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].name, "samples/s");
  EXPECT_DOUBLE_EQ(lines[0].value, 1234.5);  // the last one
  EXPECT_EQ(lines[0].count, 3);
  EXPECT_EQ(lines[0].regex, R"(\bsamples/s:\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?))");
  EXPECT_EQ(lines[1].name, "img/s");
  EXPECT_DOUBLE_EQ(lines[1].value, 88);
  EXPECT_EQ(lines[2].name, "elapsed");
  EXPECT_FALSE(lines[2].maximize);
  EXPECT_TRUE(find_result_lines("no numbers here: none\nloss: 0.5\nN = 12\n", "stdout").empty());
}

// Every regex offered is valid RE2 and reads the number back, whatever the name holds.
TEST(InitProbe, OfferedRegexesReadTheirNumberBack) {
  const std::string text = "train.img-per/s: 12.5\nHPL_Tflops=1.5e-03\nstep_time = 0.25 ms\n";
  const auto lines = find_result_lines(text, "stdout");
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) {
    EXPECT_FALSE(regex_error(line.regex)) << line.regex;
    ObjectiveSpec objective;
    objective.use_regex = true;
    objective.regex = line.regex;
    const fs::path out = fs::temp_directory_path() / ("tune-regex-" + std::to_string(getpid()));
    std::ofstream(out) << text;
    auto reading = read_objective(objective, {}, "", out.string(), "", 1.0, "", {});
    fs::remove(out);
    ASSERT_TRUE(reading) << line.regex << ": " << reading.error();
    EXPECT_DOUBLE_EQ(reading->value, line.value) << line.regex;
  }
}

TEST(InitProbe, ImportLinesAsPythonReadsThem) {
  auto frameworks = [](const std::string& text) {
    ProgramInfo info;
    detect_imports(text, info);
    return info.frameworks;
  };
  EXPECT_EQ(frameworks("import os, sys, numpy as np, torch\n"), std::vector<std::string>{"torch"});
  EXPECT_EQ(frameworks("import numpy as np, torch\n"), std::vector<std::string>{"torch"});
  EXPECT_EQ(frameworks("  import torch.distributed as dist  # DDP\n"),
            std::vector<std::string>{"torch"});
  EXPECT_EQ(frameworks("from torch.nn import Linear\n"), std::vector<std::string>{"torch"});
  EXPECT_EQ(frameworks("import chainer, cupy\n"), std::vector<std::string>{"chainer"});
  EXPECT_TRUE(frameworks("import torchvision\n# import torch\nx = 'import torch'\n").empty());
  EXPECT_EQ(frameworks("import torch\ndist.init_process_group(backend=\"nccl\")\n"),
            (std::vector<std::string>{"torch", "nccl"}));
}

TEST(InitProbe, AProgramThatIsNotThereIsNamed) {
  EXPECT_TRUE(check_program_exists({"/bin/sh", "-c", "true"}));
  EXPECT_TRUE(check_program_exists({"sh"}));
  EXPECT_EQ(check_program_exists({"./nope"}).error(), "program './nope' does not exist");
  EXPECT_EQ(check_program_exists({"no-such-program-tune"}).error(),
            "program 'no-such-program-tune' is not found on PATH");
  EXPECT_EQ(check_program_exists({"/usr/bin/python3", "-u", "nope.py"}).error(),
            "script 'nope.py' does not exist");
  EXPECT_TRUE(check_program_exists({"/usr/bin/python3", "-c", "print(1)"}));
}

// The probe run itself on a small shell program: it finds the input it read (opened and closed
// at once) and the output it wrote, its result line, and leaves the user's folder as it was.
TEST(InitProbeRun, SeesInputsOutputsAndResultsAndLeavesTheFolderAlone) {
  const fs::path dir = fs::temp_directory_path() / ("tune-probe-run-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  std::ofstream(dir / "input.txt") << "1 2 3\n";
  std::ofstream(dir / "unused.txt") << "never read\n";
  std::ofstream(dir / "state.db") << "opened read-write, only read\n";
  std::ofstream(dir / "data" / "x") << "in a folder\n";
  ProbeOptions options;
  options.source_dir = dir.string();
  const auto found =
      probe_program({"/bin/sh", "-c",
                     "cat input.txt > /dev/null; exec 3<>state.db; cat <&3 > /dev/null; "
                     "echo 'rate: 5.5 GFLOP/s'; echo 'elapsed=2 s' > out.txt"},
                    false, options);
  ASSERT_TRUE(found.ran) << found.not_run;
  EXPECT_FALSE(found.bounded);
  EXPECT_EQ(found.exit_code, 0);
  ASSERT_EQ(found.inputs.size(), 2u);
  EXPECT_EQ(found.inputs[0].name, "input.txt");
  EXPECT_EQ(found.inputs[0].bytes, 6u);
  EXPECT_EQ(found.inputs[1].name, "state.db");
  EXPECT_EQ(found.outputs, std::vector<std::string>{"out.txt"});
  ASSERT_EQ(found.results.size(), 2u);
  EXPECT_EQ(found.results[0].name, "rate");
  EXPECT_EQ(found.results[0].source, "stdout");
  EXPECT_EQ(found.results[1].name, "elapsed");
  EXPECT_EQ(found.results[1].source, "out.txt");
  EXPECT_FALSE(fs::exists(dir / "out.txt"));  // written in the mirror, removed with it
  fs::remove_all(dir);
}

TEST(InitProbeRun, StopsTheTreeAtTheBound) {
  ProbeOptions options;
  options.seconds = 0.3;
  const auto start = std::chrono::steady_clock::now();
  const auto found = probe_program({"/bin/sh", "-c", "sleep 30 & sleep 30"}, false, options);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(found.ran) << found.not_run;
  EXPECT_TRUE(found.bounded);
  EXPECT_EQ(found.ranks, 1);  // no MPI rank in the environment: the command is the one rank
  EXPECT_GE(found.threads_per_rank, 1);
  EXPECT_LT(took, 10.0);  // the tree was stopped, not waited for
  EXPECT_TRUE(found.results.empty());
}

// The keeper starts, its exec fails: a failed run, whose error line init shows the user.
TEST(InitProbeRun, AProgramThatCannotStartIsAFailedRunWithItsError) {
  const auto found = probe_program({"/nonexistent/prog"}, false, ProbeOptions{});
  ASSERT_TRUE(found.ran) << found.not_run;
  EXPECT_FALSE(found.bounded);
  EXPECT_EQ(found.exit_code, 127);
  EXPECT_EQ(found.last_error_line,
            "tune-keeper: cannot run /nonexistent/prog: No such file or directory");
  EXPECT_TRUE(found.libraries.empty());
}

class InitFromProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("tune-init-from-probe-" + std::to_string(getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    std::ofstream(m_dir / "hpccinf.txt") << "HPLinpack benchmark input file\n";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(m_dir);
  }

  // The text render_init_study writes for `argv` with `probe`, and the study it loads as (from
  // `study_dir`, default the folder init runs in).
  std::pair<std::string, StudySpec> init(const std::vector<std::string>& argv,
                                         const ProbeFindings& probe, bool program_key = false,
                                         fs::path study_dir = {}) {
    if (study_dir.empty()) study_dir = m_dir;
    InitRequest r;
    r.command = argv;
    r.source_dir = m_dir.string();
    r.study_dir = study_dir.string();
    r.program_key = program_key;
    r.line_buffering = m_line_buffering;
    // No allocator library installed, whatever this machine has (init_families_test.cpp gives
    // them).
    r.file_exists = [](const std::string&) { return false; };
    auto command = split_init_command(argv);
    EXPECT_TRUE(command);
    ProgramInfo program = inspect_program(command->program, &probe);
    program.help = m_help;
    auto topo = probes::read_synthetic_topology("pack:1 core:2 pu:1");
    auto text = render_init_study(r, *command, program, *topo, probes::knob_catalog());
    EXPECT_TRUE(text) << text.error();
    if (!program_key) {
      auto spec = parse_study_spec(*text, (study_dir / "init.yaml").string());
      EXPECT_TRUE(spec) << spec.error() << "\n" << *text;
      if (spec) return {*text, *spec};
    }
    return {*text, StudySpec{}};
  }

  fs::path m_dir;
  std::optional<LineBuffering> m_line_buffering;  // InitRequest::line_buffering
  std::optional<ProgramHelp> m_help;                // ProgramInfo::help
};

// `text` with its comments' line breaks undone: "a\n  #   b" -> "a b".
std::string flat(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      std::size_t j = text.find_first_not_of(' ', i + 1);
      if (j != std::string::npos && text[j] == '#') {
        j = text.find_first_not_of(' ', j + 1);
        out += ' ';
        i = j - 1;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// A help text as read_program_help() would have read it.
ProgramHelp help_of(const std::string& text) {
  ProgramHelp h;
  h.ran = true;
  h.options = parse_help_options(text);
  h.pool = pool_flags(h.options);
  return h;
}

std::vector<std::string> env_names(const StudySpec& spec) {
  std::vector<std::string> out;
  for (const auto& [name, value] : spec.env) out.push_back(name);
  return out;
}

ProbeFindings hpcc_findings() {
  const std::string d = "/usr/lib/x86_64-linux-gnu/";
  ProbeFindings p;
  p.ran = true;
  p.seconds = 2.5;
  p.exit_code = 0;
  p.ranks = 2;
  p.libraries = probes::classify_libraries(
      {d + "libmpi.so.40.30.4", d + "openblas-pthread/libblas.so.3", d + "libc.so.6"});
  p.threads_per_rank = 3;
  p.runtime_threads = 2;
  p.thread_names = {{"hpcc", 3}};
  p.inputs = {{"hpccinf.txt", 1429, false}};
  p.outputs = {"hpccoutf.txt"};
  p.results = find_result_lines("HPL_Tflops=0.0075\nHPL_time=0.011\n", "hpccoutf.txt");
  return p;
}

// hpcc as the probe saw it: OpenBLAS's pthreads pool and Open MPI, no OpenMP runtime.
TEST_F(InitFromProbe, NativeMpiProgramGetsItsBlasKnobItsInputAndItsResultFile) {
  const auto [text, spec] = init({"mpirun", "-n", "2", "hpcc"}, hpcc_findings());
  const auto env = env_names(spec);
  EXPECT_EQ(env, std::vector<std::string>{"OPENBLAS_NUM_THREADS"}) << text;
  EXPECT_TRUE(
      text.contains("#   ranks map /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3: "
                    "OpenBLAS (pthreads) (pool blas)"))
      << text;
  EXPECT_TRUE(text.contains("OMP_NUM_THREADS (omp_num_threads): the ranks started no openmp pool"))
      << text;
  ASSERT_EQ(spec.files.size(), 1u);
  EXPECT_EQ(spec.files[0].src, (m_dir / "hpccinf.txt").string());
  EXPECT_EQ(spec.files[0].dest, "hpccinf.txt");
  EXPECT_EQ(spec.files[0].mode, StagedFile::Mode::copy);
  ASSERT_TRUE(spec.objective.file);
  EXPECT_EQ(spec.objective.file->file, "hpccoutf.txt");
  EXPECT_EQ(spec.objective.file->regex, hpcc_findings().results[0].regex);
  EXPECT_EQ(spec.direction, search::Direction::maximize);
  EXPECT_TRUE(text.contains("Other candidates: HPL_time (hpccoutf.txt)")) << text;
  // The parser on this build does not know `program:`: the section is written as comments.
  EXPECT_TRUE(text.contains("# program:   # what the program is and starts")) << text;
  EXPECT_TRUE(text.contains("#   kind: any\n#   pools: [blas]\n#   runtime_threads: 2\n")) << text;
}

TEST_F(InitFromProbe, TheProgramSectionAsYaml) {
  const auto [text, spec] = init({"mpirun", "-n", "2", "hpcc"}, hpcc_findings(), true);
  EXPECT_TRUE(
      text.contains("\nprogram:   # what the program is and starts, as `tune init` saw "
                    "it run\n"))
      << text;
  EXPECT_TRUE(text.contains("\n  kind: any\n  pools: [blas]\n  runtime_threads: 2\n")) << text;
  EXPECT_TRUE(text.contains("at most 3 thread(s) per rank (hpcc x3); 2 of them")) << text;
}

// The study file in another folder: `files:` sources relative to it; a big input or a folder
// linked, not copied; a result line on stderr read from there.
TEST_F(InitFromProbe, FilesRelativeToTheStudyBigOnesLinkedResultOnStderr) {
  fs::create_directories(m_dir / "studies");
  fs::create_directories(m_dir / "data");
  std::ofstream(m_dir / "big.bin") << "stands for 100 MiB\n";
  ProbeFindings p = hpcc_findings();
  p.inputs = {{"hpccinf.txt", 1429, false}, {"big.bin", 100u << 20, false}, {"data", 0, true}};
  p.outputs.clear();
  p.results = find_result_lines("time: 2.5 s\n", "stderr");
  const auto [text, spec] = init({"mpirun", "-n", "2", "hpcc"}, p, false, m_dir / "studies");
  ASSERT_EQ(spec.files.size(), 3u) << text;
  EXPECT_TRUE(text.contains("- {copy: \"../hpccinf.txt\"}")) << text;
  EXPECT_TRUE(text.contains("- {link: \"../big.bin\"}")) << text;
  EXPECT_TRUE(text.contains("- {link: \"../data\"}")) << text;
  EXPECT_EQ(spec.files[0].src, (m_dir / "hpccinf.txt").string());
  EXPECT_EQ(spec.files[1].mode, StagedFile::Mode::link);
  EXPECT_TRUE(spec.objective.use_regex);
  EXPECT_EQ(spec.objective.stream, "stderr");
  EXPECT_EQ(spec.direction, search::Direction::minimize);  // a time
}

// A run that showed no result line keeps the wall time, and says why.
TEST_F(InitFromProbe, NoResultLineKeepsTheWallTime) {
  ProbeFindings p = hpcc_findings();
  p.results.clear();
  p.bounded = true;
  p.seconds = 10;
  const auto [text, spec] = init({"mpirun", "-n", "2", "hpcc"}, p);
  EXPECT_TRUE(spec.objective.wall_time);
  EXPECT_EQ(spec.direction, search::Direction::minimize);
  EXPECT_TRUE(text.contains("#   the probe's bound (10 s) with no progress line seen either, so "
                            "each trial runs the whole job:\n#   tune init --probe-for LONGER lets "
                            "it finish; a job that prints a progress line"))
      << text;
}

// With a probe run that showed the libraries, the import lines no longer decide torch (the
// libraries do), but Chainer, which maps no library of its own, is still read from them.
TEST(InitProbe, ImportLinesSpeakOnlyForWhatNoLibraryShows) {
  const fs::path script =
      fs::temp_directory_path() / ("tune-import-" + std::to_string(getpid()) + ".py");
  std::ofstream(script) << "import numpy as np, torch, chainer\n";
  ProbeFindings probe;
  probe.ran = true;
  probe.exit_code = 0;
  probe.libraries =
      probes::classify_libraries({"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"});
  const auto seen = inspect_program({"/usr/bin/python3", script.string()}, &probe);
  EXPECT_EQ(seen.frameworks, std::vector<std::string>{"chainer"});
  probe.exit_code = 1;  // a failed run: the text speaks whole
  const auto failed = inspect_program({"/usr/bin/python3", script.string()}, &probe);
  EXPECT_EQ(failed.frameworks, (std::vector<std::string>{"torch", "chainer"}));
  const auto unprobed = inspect_program({"/usr/bin/python3", script.string()});
  EXPECT_EQ(unprobed.frameworks, (std::vector<std::string>{"torch", "chainer"}));
  fs::remove(script);
}

// A torch script whose imports a grep would miss: torch is what its ranks map.
TEST_F(InitFromProbe, TorchFromTheMappedLibrariesWithThreadsFromTheEnvironment) {
  const std::string d = "/usr/lib/x86_64-linux-gnu/";
  ProbeFindings p;
  p.ran = true;
  p.ranks = 2;
  p.libraries = probes::classify_libraries(
      {d + "libgomp.so.1.0.0", d + "libtorch_cpu.so.1.13.0", d + "openblas-pthread/libblas.so.3"});
  p.threads_per_rank = 6;
  p.runtime_threads = 2;
  p.results = find_result_lines("step 1/2 loss 2.3\nsamples/s: 1234.5\n", "stdout");
  const auto [text, spec] =
      init({"mpirun", "-n", "2", "/usr/bin/python3", (m_dir / "hpccinf.txt").string()}, p, true);
  EXPECT_TRUE(text.contains("knobs of: libgomp, torch, openmpi")) << text;  // GNU OpenMP's own
  EXPECT_TRUE(text.contains("  # env OMP_NUM_THREADS:")) << text;
  EXPECT_FALSE(text.contains("  # env OPENBLAS_NUM_THREADS:")) << text;  // torch's math is OpenMP
  EXPECT_TRUE(text.contains("\n  kind: torch\n  pools: [blas, torch_intra_op]\n")) << text;
  EXPECT_TRUE(text.contains("  regex: \"\\\\bsamples/s:")) << text;
  EXPECT_TRUE(text.contains("direction: maximize")) << text;
  EXPECT_FALSE(text.contains("files:")) << text;
}

// A torch DDP script whose DataLoader is sized by a --workers flag the command does not type
// (its help shows the default) and which started two worker processes per rank: the flag becomes
// a parameter through the catalog's DataLoader knob, appended to the command, declared with the
// help's default, with the evidence in its comment; a flag the command types is not added twice.
TEST_F(InitFromProbe, AHiddenWorkersFlagOfATorchScriptBecomesTheDataLoaderParameter) {
  const std::string d = "/usr/lib/x86_64-linux-gnu/";
  ProbeFindings p;
  p.ran = true;
  p.ranks = 2;
  p.libraries = probes::classify_libraries({d + "libgomp.so.1.0.0", d + "libtorch_cpu.so.1.13.0"});
  p.child_processes = 2;
  p.child_names = {{"python3", 2}};
  m_help = help_of(
      "options:\n"
      "  -h, --help         show this help message and exit\n"
      "  --epochs EPOCHS    epochs (default: 1)\n"
      "  --workers WORKERS  DataLoader worker processes (default: 8)\n"
      "  --intra-op-threads N\n"
      "                     torch.set_num_threads (default: 2)\n");
  const std::string script = (m_dir / "hpccinf.txt").string();
  const auto [text, spec] = init({"mpirun", "-n", "2", "/usr/bin/python3", script, "--epochs",
                                  "1", "--intra-op-threads", "1"},
                                 p);
  ASSERT_TRUE(std::ranges::find(spec.command, std::string("--workers={workers}")) !=
              spec.command.end())
      << text;
  // --intra-op-threads is typed: the usual path makes it a parameter, once.
  EXPECT_EQ(std::ranges::count_if(spec.command,
                                  [](const std::string& a) { return a.contains("--intra-op"); }),
            1);
  EXPECT_TRUE(text.contains("  workers: [null, 0, 1, 8]\n")) << text;  // 1 PU per rank, and 8
  EXPECT_TRUE(text.contains("  workers: {knob: torch_dataloader_workers, default: 8}")) << text;
  EXPECT_TRUE(flat(text).contains(
      "its --help lists it and the command does not give it: \"DataLoader worker processes "
      "(default: 8)\"; left out, the program takes 8 (its --help); the probe run saw the ranks "
      "start 2 child process(es) each (python3 x2)"))
      << text;
  EXPECT_FALSE(text.contains("torch_dataloader_workers (dataloader_workers): no flag")) << text;
  // The baseline leaves the flag out: the program as it runs today.
  EXPECT_TRUE(text.contains("workers: null")) << text;
}

// Variables the ranks read (the getenv recorder) become knobs with that evidence, and the
// header says what the recorder cannot see; worker processes no flag sizes are named in a note.
TEST_F(InitFromProbe, VariablesTheRanksReadAreKnobsAndUnsizedWorkersAreNamed) {
  ProbeFindings p = hpcc_findings();
  p.child_processes = 3;
  p.child_names = {{"hpcc-helper", 3}};
  p.env_reads = probes::EnvReads{{"OPENBLAS_NUM_THREADS", {"libopenblas.so.0"}},
                                 {"OMP_NUM_THREADS", {"libopenblas.so.0"}},
                                 {"HOME", {"hpcc"}}};
  m_help = help_of("Usage: hpcc\n  -h, --help  this help\n");
  const auto [text, spec] = init({"mpirun", "-n", "2", "hpcc"}, p);
  EXPECT_EQ(env_names(spec), std::vector<std::string>{"OPENBLAS_NUM_THREADS"}) << text;
  EXPECT_TRUE(flat(text).contains(
      "one per PU of the rank's cpuset; read by the command's processes in the probe run "
      "(getenv, libopenblas.so.0)"))
      << text;
  EXPECT_TRUE(text.contains("the processes read 3 environment variable(s) through getenv")) << text;
  EXPECT_TRUE(text.contains("knobs among them: OMP_NUM_THREADS (libopenblas.so.0), "
                            "OPENBLAS_NUM_THREADS (libopenblas.so.0)"))
      << text;
  EXPECT_TRUE(text.contains("Python's os.environ (read from the process's environment at start, "
                            "without getenv)"))
      << text;
  EXPECT_TRUE(flat(text).contains("the blas pool that reads it takes its own variable first"))
      << text;
  EXPECT_TRUE(flat(text).contains("Not tuned: worker processes: the probe run saw the ranks "
                                  "start 3 child process(es) each (hpcc-helper x3), but no flag "
                                  "of the command or of its --help sizes them"))
      << text;
}

// A program that is no framework's: its --help's thread flag is a parameter of its own (nothing
// declared), its --jobs the catalog's program_workers; a prefetch flag has no knob (a note).
TEST_F(InitFromProbe, HiddenFlagsOfAProgramOfNoFramework) {
  ProbeFindings p = hpcc_findings();
  m_help = help_of(
      "  -T, --threads=NUM   use at most NUM threads; the default is 1\n"
      "  -j N                run N jobs at once (default: 4)\n"
      "  --prefetch=N        blocks read ahead\n");
  const auto [text, spec] = init({"hpcc", "-j", "2"}, p);
  EXPECT_EQ(spec.command, (std::vector<std::string>{"hpcc", "-j", "2", "--threads={threads}"}))
      << text;
  EXPECT_TRUE(text.contains("  threads: [null, 1, 2]\n")) << text;
  EXPECT_FALSE(text.contains("knobs:")) << text;
  EXPECT_TRUE(text.contains("--prefetch (prefetch): its --help lists it")) << text;
  // Not typed: -j is appended in its own short syntax, declared as the program's workers.
  m_help = help_of("  -j N                run N jobs at once (default: 4)\n");
  const auto [text2, spec2] = init({"hpcc"}, p);
  EXPECT_EQ(spec2.command, (std::vector<std::string>{"hpcc", "-j{j}"})) << text2;
  EXPECT_TRUE(text2.contains("  j: {knob: program_workers, default: 4}")) << text2;
  EXPECT_TRUE(text2.contains("  j: [null, 1, 2, 4]\n")) << text2;
}

// Lines as the probe run reads them: `per_read` lines every `dt` seconds, from `first_s`.
std::vector<TimedLine> timed(const std::vector<std::string>& texts, double first_s, double dt,
                             int per_read = 1, const std::string& source = "stdout") {
  std::vector<TimedLine> out;
  for (std::size_t i = 0; i < texts.size(); ++i)
    out.push_back({first_s + dt * static_cast<double>(i / per_read), source, texts[i]});
  return out;
}

TEST(InitProgress, AStepCounterIsTheBestProgress) {
  std::vector<std::string> texts = {"settings: 2 ranks, torch threads 1", "warning: step size"};
  for (int i = 1; i <= 30; ++i)
    texts.push_back("epoch 0 step " + std::to_string(5 * i) + " loss 2." + std::to_string(i % 10) +
                    " lr 0.01");
  texts.push_back("samples/s: 1234.5");
  const auto found = find_progress_lines(timed(texts, 3.0, 0.1, 2));
  ASSERT_FALSE(found.empty());
  const auto& p = found.front();
  EXPECT_EQ(p.measure, WindowMeasure::counter);
  EXPECT_EQ(p.name, "step");
  EXPECT_EQ(p.regex, "\\bstep\\s*([0-9]+)");
  EXPECT_EQ(p.count, 30);
  EXPECT_NEAR(p.interval_s, 0.1, 1e-9);
  EXPECT_NEAR(p.rate, 100, 2);  // two lines of 5 steps a read, a read every 0.1 s
  EXPECT_EQ(p.source, "stdout");
  // The regex reads each line's own number, and nothing of the other lines.
  EXPECT_EQ(regex_first_group(p.regex, "epoch 0 step 45 loss 2.1 lr 0.01"), "45");
  EXPECT_FALSE(regex_first_group(p.regex, "warning: step size"));
}

TEST(InitProgress, PrintedRatesAndRepeatedLinesAreOfferedAfterCounters) {
  std::vector<std::string> rates;
  for (int i = 0; i < 12; ++i)
    rates.push_back("throughput: " + std::to_string(900 + i) + ".5 samples/s");
  auto found = find_progress_lines(timed(rates, 1, 0.5));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].measure, WindowMeasure::rate);
  EXPECT_EQ(regex_first_group(found[0].regex, "throughput: 1234.5 samples/s"), "1234.5");
  EXPECT_TRUE(found[0].spread.has_value());

  // A counter that starts again each epoch is no counter: its lines are counted instead.
  std::vector<std::string> epochs;
  for (int e = 0; e < 3; ++e)
    for (int i = 1; i <= 4; ++i)
      epochs.push_back("epoch " + std::to_string(e) + " batch " + std::to_string(i) + " done");
  found = find_progress_lines(timed(epochs, 1, 0.2));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].measure, WindowMeasure::lines);
  EXPECT_TRUE(regex_first_group(found[0].regex, "epoch 7 batch 12 done").has_value());
  EXPECT_FALSE(regex_first_group(found[0].regex, "epoch 7 batch 12 failed").has_value());
}

TEST(InitProgress, ATableWrittenAtOnceIsNoProgress) {
  // hpcc's result table: many lines of one shape, all read at one moment.
  std::vector<std::string> table;
  for (int i = 0; i < 20; ++i)
    table.push_back("WR11C2R4  " + std::to_string(500 + i) + "  80  1  2  0.01");
  EXPECT_TRUE(find_progress_lines(timed(table, 2, 0, 20)).empty());
  // Three lines are not enough either.
  EXPECT_TRUE(find_progress_lines(timed({"step 1", "step 2", "step 3"}, 1, 1)).empty());
}

TEST(InitProgress, ACounterWithoutALeadingWordIsReadFromTheLineStart) {
  std::vector<std::string> texts;
  for (int i = 1; i <= 10; ++i) texts.push_back("[" + std::to_string(i * 10) + "/1000] 0.5");
  const auto found = find_progress_lines(timed(texts, 1, 0.3));
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].measure, WindowMeasure::counter);
  EXPECT_EQ(regex_first_group(found[0].regex, "[70/1000] 0.25"), "70") << found[0].regex;
}

// A job still running at the probe's bound that printed progress lines: the study measures a
// window of them; a noisy rate adds incumbent_repeats.
TEST_F(InitFromProbe, ProgressLinesOfAJobThatWouldRunOnMakeAWindowObjective) {
  ProbeFindings p;
  p.ran = true;
  p.bounded = true;
  p.seconds = 10;
  p.ranks = 2;
  std::vector<std::string> texts;
  for (int i = 1; i <= 40; ++i) texts.push_back("step " + std::to_string(5 * i) + " loss 0.5");
  p.progress = find_progress_lines(timed(texts, 3.5, 0.15));
  ASSERT_FALSE(p.progress.empty());
  const auto [text, spec] =
      init({"mpirun", "-n", "2", "/usr/bin/python3", (m_dir / "hpccinf.txt").string()}, p);
  ASSERT_TRUE(spec.objective.window) << text;
  const auto& w = *spec.objective.window;
  EXPECT_EQ(w.regex, "\\bstep\\s*([0-9]+)");
  EXPECT_EQ(w.settings.measure, WindowMeasure::counter);
  EXPECT_EQ(w.settings.warmup_s, 2);
  EXPECT_EQ(w.settings.min_s, 3);
  EXPECT_EQ(w.max_s, 10);
  EXPECT_EQ(w.startup_s, 60);
  EXPECT_EQ(spec.direction, search::Direction::maximize);
  EXPECT_TRUE(text.contains("Found in the probe run: 40 progress lines like \"step 200 loss 0.5\""))
      << text;
  EXPECT_TRUE(text.contains("still running at its bound (10 s)")) << text;
  EXPECT_EQ(spec.incumbent_repeats, 0) << "an even rate is no noise";

  // The same lines at an uneven pace: the rate varies between stretches of the run.
  ProbeFindings noisy = p;
  std::vector<TimedLine> lines;
  double t = 3.5;
  for (int i = 1; i <= 40; ++i) {
    t += (i / 8) % 2 ? 0.3 : 0.1;
    lines.push_back({t, "stdout", "step " + std::to_string(5 * i) + " loss 0.5"});
  }
  noisy.progress = find_progress_lines(lines);
  ASSERT_FALSE(noisy.progress.empty());
  ASSERT_TRUE(noisy.progress[0].spread);
  const auto [noisy_text, noisy_spec] =
      init({"mpirun", "-n", "2", "/usr/bin/python3", (m_dir / "hpccinf.txt").string()}, noisy);
  EXPECT_EQ(noisy_spec.incumbent_repeats, 2) << noisy_text;
  EXPECT_TRUE(noisy_text.contains("between stretches of the probe run")) << noisy_text;
}

// A job that ended by itself with a result line keeps that line as its objective, progress or
// not: it is short enough to run whole.
TEST_F(InitFromProbe, AShortJobWithAResultLineKeepsIt) {
  ProbeFindings p;
  p.ran = true;
  p.exit_code = 0;
  std::vector<std::string> texts;
  for (int i = 1; i <= 10; ++i) texts.push_back("step " + std::to_string(i) + "/10 loss 0.5");
  p.progress = find_progress_lines(timed(texts, 3, 0.2));
  p.results = find_result_lines("samples/s: 1234.5\n", "stdout");
  const auto [text, spec] =
      init({"mpirun", "-n", "2", "/usr/bin/python3", (m_dir / "hpccinf.txt").string()}, p);
  EXPECT_FALSE(spec.objective.window) << text;
  EXPECT_TRUE(spec.objective.use_regex) << text;
}

// Issue 36: a column that widens ("step    9" -> "step   10" -> "step  100", "[  9/200]" ->
// "[100/200]") or an aligned table keeps one shape, and the regex reads every line of it.
TEST(InitProgress, AWideningColumnAndAnAlignedTableAreOneShape) {
  std::vector<std::string> padded, bare, table;
  for (int i = 1; i <= 150; i += 7) {
    padded.push_back(fmt::format("step {:4d}  loss {:.3f}", i, 1.0 / i));
    bare.push_back(fmt::format("[{:3d}/200] eps: {:.2f}", i, 900.0 + i));
    table.push_back(fmt::format("{:6d} {:9.2f} {:7.1f}", i * 10, 1.0 / i, 100.0 + i));
  }
  for (const auto* texts : {&padded, &bare, &table}) {
    const auto found = find_progress_lines(timed(*texts, 1, 0.25));
    ASSERT_EQ(found.size(), 1u) << texts->front();
    const auto& p = found[0];
    EXPECT_EQ(p.measure, WindowMeasure::counter) << p.regex;
    EXPECT_EQ(p.count, static_cast<int>(texts->size())) << p.regex;
    EXPECT_TRUE(p.stopped.empty()) << p.stopped;
    // Every line, narrow or wide, gives its own count; and wider ones still to come too.
    for (std::size_t i = 0; i < texts->size(); ++i) {
      const auto got = regex_first_group(p.regex, (*texts)[i]);
      ASSERT_TRUE(got) << p.regex << " on " << (*texts)[i];
      EXPECT_EQ(std::stol(*got), (texts == &table ? 10 : 1) * (1 + 7 * static_cast<long>(i)))
          << p.regex << " on " << (*texts)[i];
    }
  }
  const auto step = find_progress_lines(timed(padded, 1, 0.25));
  EXPECT_EQ(step[0].regex, "\\bstep\\s*([0-9]+)");
  EXPECT_EQ(regex_first_group(step[0].regex, "step 12345  loss 0.000"), "12345");
  const auto total = find_progress_lines(timed(bare, 1, 0.25));
  ASSERT_TRUE(total[0].total);  // "[ 57/200]": the count it runs to
  EXPECT_EQ(*total[0].total, 200);
  EXPECT_EQ(total[0].last_value, 148);
  EXPECT_EQ(regex_first_group(total[0].regex, "[1000/2000] eps: 5.5"), "1000") << total[0].regex;
}

// sysbench's "eps:" is a printed rate; an "eps" that stays put is an epsilon, and the lines are
// counted instead.
TEST(InitProgress, AShortRateNameIsARateOnlyWhenItVaries) {
  std::vector<std::string> rates, epsilons;
  for (int i = 1; i <= 12; ++i) {
    rates.push_back(fmt::format("[ {}s ] thds: 1 eps: {}.25 lat (ms,95%): 0.31", i, 3900 + i % 5));
    epsilons.push_back(fmt::format("adam eps: 1e-08 loss {:.3f}", 1.0 / i));
  }
  auto found = find_progress_lines(timed(rates, 1, 1));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].measure, WindowMeasure::rate);
  EXPECT_EQ(found[0].name, "eps");
  found = find_progress_lines(timed(epsilons, 1, 1));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].measure, WindowMeasure::lines);
}

// LAMMPS's thermo table: the step is the first column, other lines start with a number too
// (its first row, whose last column is still negative; "1 by 1 by 2 MPI processor grid"): the
// step is read through the whole row.
TEST(InitProgress, AStepColumnOfATableIsReadThroughItsRow) {
  std::vector<std::string> texts = {
      "  1 by 1 by 2 MPI processor grid", "Step Temp E_pair E_mol TotEng Press ",
      "       0            3   -6.7733681            0   -2.2735087   "
      "-3.7027964 "};
  for (int step = 25; step <= 1000; step += 25)
    texts.push_back(fmt::format("{:8d} {:12.7f} {:12.7f} {:12d} {:12.7f} {:12.7f} ", step,
                                1.6 + 0.001 * (step % 7), -4.7 - 0.001 * (step % 5), 0,
                                -2.28 - 1e-6 * step, 5.8 + 0.01 * (step % 3)));
  const auto found = find_progress_lines(timed(texts, 1, 0.5));
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].measure, WindowMeasure::counter) << found[0].regex;
  EXPECT_EQ(found[0].count, 40);
  EXPECT_NEAR(found[0].rate, 50, 1) << "25 steps a line, a line every 0.5 s";
  EXPECT_EQ(regex_first_group(found[0].regex,
                              "   12000    1.6376181    -4.738955            0   -2.2826046    "
                              "5.8951046 "),
            "12000")
      << found[0].regex;
  EXPECT_FALSE(regex_first_group(found[0].regex, texts[0]));
}

// Progress lines that stop while their stream goes on (the format changed, a phase ended)
// would leave a window waiting: they are offered last, with why, and the lines that kept
// coming first.
TEST(InitProgress, LinesThatStopComingWhileTheStreamGoesOnAreOfferedLast) {
  std::vector<std::string> texts;
  for (int i = 1; i <= 10; ++i) texts.push_back("step " + std::to_string(i) + " loss 0.5");
  for (int i = 1; i <= 10; ++i) texts.push_back("eval iter " + std::to_string(i) + " acc 0.9");
  const auto found = find_progress_lines(timed(texts, 1, 0.5));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "iter");
  EXPECT_TRUE(found[0].stopped.empty());
  EXPECT_EQ(found[1].name, "step");
  EXPECT_EQ(found[1].stopped,
            "they stopped at 5.5 s after launch while 10 more line(s) came on stdout until 10.5 s");
}

// Figures printed at a program's end (sysbench's, LAMMPS's): a name of several words, a number
// named by its rate unit; how far from the end each is.
TEST(InitProbe, FiguresAProgramPrintsAtItsEnd) {
  const std::string sysbench =
      "[ 11s ] thds: 1 eps: 3910.05 lat (ms,95%): 0.31\n"
      "CPU speed:\n"
      "    events per second:  3948.55\n"
      "\n"
      "General statistics:\n"
      "    total time:                          12.0013s\n"
      "    total number of events:              47391\n"
      "Latency (ms):\n"
      "         min:                                    0.21\n"
      "         95th percentile:                        0.34\n"
      "    execution time (avg/stddev):   11.9788/0.00\n";
  auto lines = find_result_lines(sysbench, "stdout");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].name, "events per second");
  EXPECT_DOUBLE_EQ(lines[0].value, 3948.55);
  EXPECT_TRUE(lines[0].maximize);
  EXPECT_EQ(lines[0].lines_after, 8);
  EXPECT_EQ(regex_first_group(lines[0].regex, "  events   per second:   12.5"), "12.5");
  EXPECT_FALSE(regex_first_group(lines[0].regex, "total number of events: 47391"));

  const std::string lammps =
      "Loop time of 9.24 on 2 procs for 1000 steps with 32000 atoms\n"
      "Performance: 46748.6 tau/day, 108.2 timesteps/s, 3.46 Matom-step/s\n"
      "97.1% CPU use with 2 MPI tasks x 1 OpenMP threads\n"
      "Total wall time: 0:00:09\n";
  lines = find_result_lines(lammps, "log.lammps");
  std::vector<std::string> names;
  for (const auto& l : lines) names.push_back(l.name);
  // Per second first: the same figure as tau/day, in the unit users compare.
  EXPECT_EQ(names, (std::vector<std::string>{"timesteps/s", "Matom-step/s", "tau/day"}));
  const ResultLine* ts = find(lines, "timesteps/s");
  ASSERT_NE(ts, nullptr);
  EXPECT_DOUBLE_EQ(ts->value, 108.2);
  EXPECT_EQ(ts->lines_after, 2);
  EXPECT_EQ(regex_first_group(ts->regex, lammps), "108.2") << ts->regex;
  EXPECT_FALSE(regex_first_group(ts->regex, "12.5 timesteps/sec"));
}

// sysbench's figure and progress lines as a probe run that watched it end (14 s, past the
// 10-s bound) would find them.
ProbeFindings short_job_findings() {
  ProbeFindings p;
  p.ran = true;
  p.exit_code = 0;
  p.seconds = 14;
  p.bound_s = 10;
  p.ranks = 1;
  std::vector<std::string> texts;
  for (int i = 1; i <= 13; ++i)
    texts.push_back(fmt::format("[ {}s ] thds: 1 eps: {}.5 lat (ms,95%): 0.31", i, 3900 + i));
  p.progress = find_progress_lines(timed(texts, 1, 1));
  p.results = find_result_lines(
      "[ 13s ] thds: 1 eps: 3913.5 lat (ms,95%): 0.31\nCPU speed:\n    events per second:  "
      "3948.55\n\nGeneral statistics:\n    total time:      14.0013s\n",
      "stdout");
  return p;
}

// Issue 36: a job that ends within a few probe lengths is scored by the figure it prints at its
// end, not by a window over its progress lines longer than the job.
TEST_F(InitFromProbe, AJobThatEndsSoonIsScoredByTheFigureAtItsEnd) {
  m_line_buffering = LineBuffering{"/usr/libexec/coreutils/libstdbuf.so", {{"_STDBUF_O", "L"}}};
  const ProbeFindings p = short_job_findings();
  ASSERT_FALSE(p.progress.empty());
  const auto [text, spec] = init({"/usr/bin/sysbench", "cpu", "--time=14", "run"}, p);
  EXPECT_FALSE(spec.objective.window) << text;
  ASSERT_TRUE(spec.objective.use_regex) << text;
  EXPECT_EQ(spec.objective.regex, p.results[0].regex);
  EXPECT_EQ(spec.direction, search::Direction::maximize);
  EXPECT_TRUE(
      text.contains("# The job ended by itself 14.0 s after launch in the probe run (watched "
                    "past the 10-s probe"))
      << text;
  EXPECT_TRUE(text.contains("stdout gave events per second 3948.55 (a rate: maximized)")) << text;
  EXPECT_TRUE(text.contains("Not a window over its progress lines (\"[ 13s ] thds: 1 eps:"))
      << text;
  EXPECT_TRUE(env_names(spec).empty()) << "the figure is read after the end: no buffering to undo";

  // The same job ending with no figure: its wall time, still no window.
  ProbeFindings bare = p;
  bare.results.clear();
  const auto [bare_text, bare_spec] = init({"/usr/bin/sysbench", "cpu", "run"}, bare);
  EXPECT_TRUE(bare_spec.objective.wall_time) << bare_text;
  EXPECT_FALSE(bare_spec.objective.window) << bare_text;
  EXPECT_TRUE(bare_text.contains("printed no figure at its end")) << bare_text;

  // Still running after the end wait: a window over the rate its lines print ("eps: N"),
  // read line-buffered.
  ProbeFindings long_job = p;
  long_job.bounded = true;
  long_job.seconds = 30;
  const auto [long_text, long_spec] = init({"/usr/bin/sysbench", "cpu", "run"}, long_job);
  ASSERT_TRUE(long_spec.objective.window) << long_text;
  EXPECT_EQ(long_spec.objective.window->regex, p.progress[0].regex);
  EXPECT_EQ(long_spec.objective.window->settings.measure, WindowMeasure::rate);
  EXPECT_EQ(
      regex_first_group(p.progress[0].regex, "[ 123s ] thds: 1 eps: 3922.05 lat (ms,95%): 0.31"),
      "3922.05");
  EXPECT_TRUE(long_text.contains("nor 'events per second', which the job prints once"))
      << long_text;
  EXPECT_EQ(env_names(long_spec), std::vector<std::string>{"_STDBUF_O"}) << long_text;
  EXPECT_TRUE(
      long_text.contains("line-buffered into the trial's\n  #   pipe, as `stdbuf -oL` does"))
      << long_text;
  EXPECT_TRUE(long_text.contains("/usr/libexec/coreutils/libstdbuf.so")) << long_text;
}

// Progress lines that stopped matching are no window: the study falls back and says why.
TEST_F(InitFromProbe, ProgressLinesThatStoppedAreNoWindow) {
  ProbeFindings p;
  p.ran = true;
  p.bounded = true;
  p.seconds = 30;
  std::vector<std::string> texts;
  for (int i = 1; i <= 8; ++i) texts.push_back("step " + std::to_string(i));
  for (int i = 1; i <= 8; ++i) texts.push_back("now at " + std::to_string(i) + "%, loss nan");
  p.progress = find_progress_lines(timed(texts, 1, 1));
  ASSERT_EQ(p.progress.size(), 2u);
  p.progress.erase(p.progress.begin());  // only the lines that stopped (offered last)
  ASSERT_FALSE(p.progress[0].stopped.empty());
  const auto [text, spec] = init({"/usr/bin/sysbench", "cpu", "run"}, p);
  EXPECT_TRUE(spec.objective.wall_time) << text;
  EXPECT_TRUE(text.contains("Not a window over the lines like \"step 8\" on stdout: they stopped"))
      << text;
}

// coreutils' libstdbuf beside the `stdbuf` on PATH, the user's own preloads kept after it.
TEST(InitProbe, LineBufferingIsFoundBesideStdbuf) {
  const fs::path dir = fs::temp_directory_path() / ("tune-stdbuf-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "libexec" / "coreutils");
  std::ofstream(dir / "bin" / "stdbuf") << "";
  std::ofstream(dir / "libexec" / "coreutils" / "libstdbuf.so") << "";
  const auto lb = line_buffering("/nonexistent:" + (dir / "bin").string(), "/opt/mine.so");
  ASSERT_TRUE(lb);
  EXPECT_EQ(lb->library, (dir / "libexec" / "coreutils" / "libstdbuf.so").string());
  EXPECT_EQ(lb->env.at("LD_PRELOAD"), lb->library + " /opt/mine.so");
  EXPECT_EQ(lb->env.at("_STDBUF_O"), "L");
  EXPECT_EQ(lb->env.at("PYTHONUNBUFFERED"), "1");
  fs::remove_all(dir);
}

// The probe run on a program that prints with C stdio and never flushes, into the probe's pipe:
// with this machine's line buffering its progress lines come as printed, at their true rate;
// without it nothing comes before the tree is stopped (one 4-KiB block takes longer).
TEST(InitProbeRun, CStdioIntoAPipeIsReadLineBuffered) {
  const char* path = std::getenv("PATH");
  const auto lb = line_buffering(path ? path : "", "");
  ASSERT_TRUE(lb) << "no libstdbuf.so (Debian's coreutils has it)";
  ProbeOptions options;
  options.seconds = 1.5;
  options.env = lb->env;
  const std::vector<std::string> argv = {FAKE_PROGRESS, "--stdio", "--rate",  "200",
                                         "--every-ms",  "20",      "--width", "6"};
  const auto found = probe_program(argv, false, options);
  ASSERT_TRUE(found.ran) << found.not_run;
  EXPECT_TRUE(found.bounded);
  EXPECT_TRUE(found.line_buffered);
  ASSERT_FALSE(found.progress.empty());
  EXPECT_EQ(found.progress[0].measure, WindowMeasure::counter);
  EXPECT_GE(found.progress[0].count, 20);
  EXPECT_NEAR(found.progress[0].rate, 200, 40);

  options.env.clear();
  const auto buffered = probe_program(argv, false, options);
  ASSERT_TRUE(buffered.ran) << buffered.not_run;
  EXPECT_FALSE(buffered.line_buffered);
  EXPECT_TRUE(buffered.progress.empty()) << buffered.progress[0].example;
}

// A job that ends a little after the bound is watched to its end (its figure read there); one
// whose lines say it runs far past the end wait is stopped at the bound.
TEST(InitProbeRun, WatchedToTheEndOnlyWhenItEndsSoon) {
  ProbeOptions options;
  options.seconds = 0.5;
  options.end_wait_s = 4;
  const auto ends = probe_program(
      {FAKE_PROGRESS, "--stdio", "--for", "1.2", "--summary", "--every-ms", "20"}, false, options);
  ASSERT_TRUE(ends.ran) << ends.not_run;
  EXPECT_FALSE(ends.bounded);
  EXPECT_EQ(ends.exit_code, 0);
  EXPECT_GE(ends.seconds, 1.2);
  ASSERT_NE(find(ends.results, "steps per second"), nullptr);
  EXPECT_NEAR(find(ends.results, "steps per second")->value, 100, 20);
  EXPECT_LT(find(ends.results, "steps per second")->lines_after, 2);

  const auto start = std::chrono::steady_clock::now();
  const auto runs_on =
      probe_program({FAKE_PROGRESS, "--total", "100000", "--every-ms", "20"}, false, options);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(runs_on.ran) << runs_on.not_run;
  EXPECT_TRUE(runs_on.bounded);
  EXPECT_LT(took, 3.0) << "100000 steps at 100 a second end long after the 4-s wait";
  ASSERT_FALSE(runs_on.progress.empty());
  EXPECT_EQ(runs_on.progress[0].total, 100000);
}

}  // namespace
}  // namespace tune::tuner
