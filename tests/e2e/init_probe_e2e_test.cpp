// Issue 24's `tune init` that looks at the running program, end to end, on two programs that
// are not ours to edit:
//   - hpcc (Debian's HPC Challenge): a native MPI program linked to OpenBLAS's pthreads build
//     through the libblas.so.3 alternatives link, reading ./hpccinf.txt and writing its results
//     to ./hpccoutf.txt. Without the input it quietly runs a default problem (N=3520 here), so
//     the test checks each trial ran the user's (HPL_N=500).
//   - a PyTorch DDP script written unlike examples/pytorch_ddp (tests/e2e/programs/
//     ddp_env_threads.py): its imports on one line, no thread flag (OMP_NUM_THREADS decides).
// For each: `tune init -- mpirun -n 2 PROGRAM` (its probe run included), what it found in the
// study it wrote, then `tune --trials 3` on that study. And a program that is not there: exit 2.
// hpcc and python3-torch are test dependencies (scripts/install-deps.sh test); without them the
// test fails saying so. 62 s on the 2-core development machine at load 9 (26 s hpcc, 36 s torch).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/process.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/common/test_support.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

// hpcc's example input (/usr/share/doc/hpcc/examples/_hpccinf.txt) made small and fast: HPL at
// N=500 on a 1x2 process grid (2 ranks), about 2 s a run.
constexpr const char* k_hpccinf =
    "HPLinpack benchmark input file\n"
    "Innovative Computing Laboratory, University of Tennessee\n"
    "HPL.out      output file name (if any)\n"
    "8            device out (6=stdout,7=stderr,file)\n"
    "1            # of problems sizes (N)\n"
    "500          Ns\n"
    "1            # of NBs\n"
    "80           NBs\n"
    "0            PMAP process mapping (0=Row-,1=Column-major)\n"
    "1            # of process grids (P x Q)\n"
    "1            Ps\n"
    "2            Qs\n"
    "16.0         threshold\n"
    "1            # of panel fact\n"
    "2            PFACTs (0=left, 1=Crout, 2=Right)\n"
    "1            # of recursive stopping criterium\n"
    "4            NBMINs (>= 1)\n"
    "1            # of panels in recursion\n"
    "2            NDIVs\n"
    "1            # of recursive panel fact.\n"
    "1            RFACTs (0=left, 1=Crout, 2=Right)\n"
    "1            # of broadcast\n"
    "1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)\n"
    "1            # of lookahead depth\n"
    "1            DEPTHs (>=0)\n"
    "2            SWAP (0=bin-exch,1=long,2=mix)\n"
    "64           swapping threshold\n"
    "0            L1 in (0=transposed,1=no-transposed) form\n"
    "0            U  in (0=transposed,1=no-transposed) form\n"
    "1            Equilibration (0=no,1=yes)\n"
    "8            memory alignment in double (> 0)\n"
    "##### This line (no. 32) is ignored (it serves as a separator). ######\n"
    "0                      \t\tNumber of additional problem sizes for PTRANS\n"
    "1200 10000 30000        \tvalues of N\n"
    "0                       \tnumber of additional blocking sizes for PTRANS\n"
    "40 9 8 13 13 20 16 32 64       \tvalues of NB\n";

class InitProbeE2E : public test_support::TempDirTest {
 protected:
  InitProbeE2E() : TempDirTest("tune-init-probe-e2e-") {}

  test_support::CommandOutput run(const std::vector<std::string>& argv) {
    return test_support::run_command(argv, m_dir, {}, "init-probe-e2e");
  }
  test_support::CommandOutput init(const std::vector<std::string>& command) {
    std::vector<std::string> argv = {TUNE_BIN, "init", "--no-input", "-o", "study.yaml", "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    return run(argv);
  }
  std::vector<search::FrozenTrial> trials(const std::string& study) {
    return test_support::stored_trials(m_dir / "tune-out" / study / "study.db", study);
  }
  // The trials that ran: the study also holds the rule baselines init wrote, still waiting
  // after a few trials.
  std::vector<search::FrozenTrial> ran_trials(const std::string& study) {
    auto ts = trials(study);
    std::erase_if(ts, [](const auto& t) { return t.state == TrialState::waiting; });
    return ts;
  }
};

bool has_param(const StudySpec& spec, const std::string& name) {
  return std::any_of(spec.space.begin(), spec.space.end(),
                     [&](const auto& p) { return p.first == name; });
}

std::string env_of(const StudySpec& spec, const std::string& name) {
  for (const auto& [k, v] : spec.env) {
    if (k == name) return v;
  }
  return "";
}

// The number after `key=` at the start of a line of `text`; nullopt when absent.
std::optional<double> summary_value(const std::string& text, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\\n" + key + "=([-+0-9.eE]+)"))) return std::nullopt;
  return std::stod(m[1]);
}

// The count in the `program:` section's `runtime_threads: N` (live or as a comment); -1 absent.
int runtime_threads(const std::string& study_text) {
  std::smatch m;
  if (!std::regex_search(study_text, m, std::regex("runtime_threads: ([0-9]+)"))) return -1;
  return std::stoi(m[1]);
}

TEST_F(InitProbeE2E, HpccIsSeenAsOpenBlasPthreadsAndTunedOnTheUsersInput) {
  ASSERT_TRUE(fs::exists("/usr/bin/hpcc"))
      << "hpcc is missing (scripts/install-deps.sh test installs it)";
  test_support::write_file(m_dir / "hpccinf.txt", k_hpccinf);
  const auto made = init({"mpirun", "-n", "2", "hpcc"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string text = test_support::read_file(m_dir / "study.yaml");
  // The evidence, as the ranks mapped it: the alternatives link resolved to the pthreads build.
  EXPECT_TRUE(text.contains(
      "ranks map /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3: OpenBLAS (pthreads)"))
      << text;
  EXPECT_TRUE(text.contains("pools: [blas]")) << text;
  EXPECT_TRUE(text.contains("kind: any")) << text;
  EXPECT_TRUE(text.contains("2 rank(s) seen")) << text;
  // Open MPI's progress and event threads (PMIx, libevent), waiting in poll/epoll_wait.
  EXPECT_GE(runtime_threads(text), 1) << text;
  // The probe ran in a mirror: nothing it wrote is left in the user's folder.
  EXPECT_FALSE(fs::exists(m_dir / "hpccoutf.txt"));

  const auto spec = load_study_spec((m_dir / "study.yaml").string());
  ASSERT_TRUE(spec) << spec.error() << "\n" << text;
  EXPECT_TRUE(has_param(*spec, "openblas_num_threads")) << text;
  EXPECT_EQ(env_of(*spec, "OPENBLAS_NUM_THREADS"), "{openblas_num_threads}");
  EXPECT_EQ(env_of(*spec, "OMP_NUM_THREADS"), "");  // hpcc maps no OpenMP runtime
  ASSERT_EQ(spec->files.size(), 1u) << text;
  EXPECT_EQ(spec->files[0].dest, "hpccinf.txt");
  EXPECT_EQ(spec->files[0].src, (fs::canonical(m_dir) / "hpccinf.txt").string());
  EXPECT_EQ(spec->files[0].mode, StagedFile::Mode::copy);
  ASSERT_TRUE(spec->objective.file) << text;
  EXPECT_EQ(spec->objective.file->file, "hpccoutf.txt");
  EXPECT_TRUE(spec->objective.file->regex.contains("HPL_Tflops")) << spec->objective.file->regex;
  EXPECT_EQ(spec->direction, search::Direction::maximize);

  const auto tuned = run({TUNE_BIN, "--trials", "3", "study.yaml"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const auto ts = ran_trials(spec->name);
  ASSERT_EQ(ts.size(), 3u);
  for (const auto& t : ts) {
    ASSERT_EQ(t.state, TrialState::complete) << t.number << " " << t.system_attrs.dump();
    const std::string out = test_support::read_file(m_dir / "tune-out" / spec->name / "trials" /
                                                    std::to_string(t.number) / "hpccoutf.txt");
    EXPECT_EQ(summary_value(out, "HPL_N"), 500.0) << "trial " << t.number << " ran hpcc's default";
    const auto tflops = summary_value(out, "HPL_Tflops");
    ASSERT_TRUE(tflops) << "trial " << t.number;
    EXPECT_GT(*tflops, 0);
    EXPECT_DOUBLE_EQ(*t.value, *tflops) << "trial " << t.number;
  }
}

TEST_F(InitProbeE2E, TorchIsSeenFromItsLibrariesWhateverTheImportLineLooksLike) {
  const auto torch = run({"/usr/bin/python3", "-c", "import torch"});
  ASSERT_EQ(torch.exit_code, 0)
      << "python3-torch is missing (scripts/install-deps.sh test installs it): " << torch.err;
  const auto made = init({"mpirun", "-n", "2", "/usr/bin/python3",
                          TUNE_SOURCE_DIR "/tests/e2e/programs/ddp_env_threads.py", "10"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string text = test_support::read_file(m_dir / "study.yaml");
  EXPECT_TRUE(text.contains("PyTorch (libtorch)")) << text;
  EXPECT_TRUE(text.contains("knobs of: torch")) << text;
  EXPECT_TRUE(text.contains("kind: torch")) << text;
  EXPECT_TRUE(text.contains("2 rank(s) seen")) << text;
  EXPECT_TRUE(text.contains("pool_defaults: {torch_intra_op: ")) << text;
  const auto spec = load_study_spec((m_dir / "study.yaml").string());
  ASSERT_TRUE(spec) << spec.error() << "\n" << text;
  EXPECT_TRUE(has_param(*spec, "omp_num_threads")) << text;
  EXPECT_EQ(env_of(*spec, "OMP_NUM_THREADS"), "{omp_num_threads}");
  EXPECT_TRUE(spec->objective.use_regex) << text;
  EXPECT_TRUE(spec->objective.regex.contains("samples/s")) << spec->objective.regex;
  EXPECT_EQ(spec->direction, search::Direction::maximize);
  EXPECT_TRUE(spec->files.empty()) << text;

  const auto tuned = run({TUNE_BIN, "--trials", "3", "study.yaml"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const auto ts = ran_trials(spec->name);
  ASSERT_EQ(ts.size(), 3u);
  for (const auto& t : ts) {
    ASSERT_EQ(t.state, TrialState::complete) << t.number << " " << t.system_attrs.dump();
    EXPECT_GT(*t.value, 0) << "trial " << t.number;
  }
}

TEST_F(InitProbeE2E, AProgramOrScriptThatIsNotThereIsBadInput) {
  const auto nope = init({"mpirun", "-n", "2", "./nope"});
  EXPECT_EQ(nope.exit_code, 2);
  EXPECT_EQ(nope.err, "tune: error: program './nope' does not exist\n");
  const auto script = init({"/usr/bin/python3", "nope.py"});
  EXPECT_EQ(script.exit_code, 2);
  EXPECT_EQ(script.err, "tune: error: script 'nope.py' does not exist\n");
  EXPECT_FALSE(fs::exists(m_dir / "study.yaml"));
}

// Ctrl-C during the probe run: the program's tree is stopped, its mirror folder removed, and
// nothing is written.
TEST_F(InitProbeE2E, CtrlCDuringTheProbeRunStopsItAndWritesNothing) {
  namespace bp = boost::process;
  const fs::path started = m_dir / "started";
  bp::child init(TUNE_BIN, "init", "--no-input", "-o", (m_dir / "study.yaml").string(), "--",
                 "/bin/sh", "-c", "echo $$ > " + started.string() + "; exec sleep 60",
                 bp::start_dir = m_dir.string(), bp::std_out > bp::null, bp::std_err > bp::null);
  ASSERT_TRUE(test_support::wait_for_file(started, std::chrono::seconds(30)));
  pid_t pid = 0;
  std::ifstream(started) >> pid;
  ASSERT_GT(pid, 0);
  const fs::path mirror = fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd");
  EXPECT_TRUE(mirror.string().contains("tune-init-probe-")) << mirror;
  ASSERT_EQ(kill(init.id(), SIGINT), 0);
  init.wait();
  EXPECT_EQ(init.exit_code(), 130);
  EXPECT_NE(kill(pid, 0), 0) << "the probed program survived Ctrl-C";
  EXPECT_FALSE(fs::exists(mirror.parent_path())) << mirror;
  EXPECT_FALSE(fs::exists(m_dir / "study.yaml"));
}

}  // namespace
}  // namespace tune::tuner
