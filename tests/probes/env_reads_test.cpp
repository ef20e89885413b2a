// The variables a program reads (probes/env_reads.h): the lines libtune_getenv.so writes, parsed
// with their bounds, and the library itself preloaded into real Debian programs: xz reads
// XZ_DEFAULTS, and OpenBLAS (loaded by `import numpy`) reads OPENBLAS_NUM_THREADS, through their
// own getenv calls.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "probes/env_reads.h"

extern char** environ;

namespace tune::probes {
namespace {

namespace fs = std::filesystem;

TEST(EnvReads, ParsesNameAndLibraryLinesAndSkipsJunk) {
  EnvReads out;
  parse_env_reads(
      "OMP_NUM_THREADS\tlibgomp.so.1\n"
      "OMP_NUM_THREADS\tlibopenblas.so.0\n"
      "not a line\n"
      "1BAD\tx\n"
      "BAD-NAME\tx\n"
      "PATH\tpython3\n"
      "EVIL\tlib/with/slash\n"
      "CTRL\tlib\x1b[2J\n"
      "TRUNCATED",
      out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out["OMP_NUM_THREADS"], (std::set<std::string>{"libgomp.so.1", "libopenblas.so.0"}));
  EXPECT_EQ(out["PATH"], std::set<std::string>{"python3"});
  EnvReads few;
  parse_env_reads("A\tx\nB\tx\nC\tx\n", few, 2);
  EXPECT_EQ(few.size(), 2u);
}

// The preload library built next to the tests' binaries (build/bin).
std::string library() {
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  return (exe.parent_path() / k_env_reads_library).string();
}

// Runs `argv` with the library preloaded and its folder set; what it recorded.
EnvReads run_recorded(const std::vector<std::string>& argv) {
  char pattern[] = "/tmp/tune-env-reads-test-XXXXXX";
  EXPECT_NE(::mkdtemp(pattern), nullptr);
  std::vector<std::string> env_text = {"LD_PRELOAD=" + library(),
                                       std::string(k_env_reads_env) + "=" + pattern};
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!entry.starts_with("LD_PRELOAD=") && !entry.starts_with("TUNE_ENV_READS="))
      env_text.push_back(entry);
  }
  std::vector<char*> env, args;
  for (auto& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << argv[0];
  EnvReads out = read_env_reads(pattern);
  std::error_code ec;
  fs::remove_all(pattern, ec);
  return out;
}

TEST(EnvReads, RecordsTheVariablesANativeProgramReads) {
  ASSERT_TRUE(fs::exists(library())) << library();
  ASSERT_TRUE(fs::exists("/usr/bin/xz"));
  const EnvReads reads = run_recorded({"/usr/bin/xz", "--threads=2", "--stdout", "/dev/null"});
  ASSERT_TRUE(reads.contains("XZ_DEFAULTS"));
  EXPECT_EQ(reads.at("XZ_DEFAULTS"), std::set<std::string>{"xz"});
}

TEST(EnvReads, RecordsTheThreadVariablesAPythonProgramsLibrariesRead) {
  ASSERT_TRUE(fs::exists("/usr/bin/python3"));
  const EnvReads reads = run_recorded({"/usr/bin/python3", "-c", "import numpy"});
  ASSERT_TRUE(reads.contains("OPENBLAS_NUM_THREADS"));
  bool by_openblas = false;
  for (const auto& lib : reads.at("OPENBLAS_NUM_THREADS")) by_openblas |= lib.contains("openblas");
  EXPECT_TRUE(by_openblas);
  // The interpreter's own reads are recorded by the interpreter's name.
  ASSERT_TRUE(reads.contains("PYTHONPATH"));
  EXPECT_TRUE(reads.at("PYTHONPATH").begin()->starts_with("python3"));
}

}  // namespace
}  // namespace tune::probes
