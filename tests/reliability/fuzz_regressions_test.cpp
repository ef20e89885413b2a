// Inputs the fuzzers (bench/fuzz, scripts/fuzz.sh) found to crash or hang tune, replayed through
// exactly the calls the fuzz target made (bench/fuzz/fuzz_targets.h). Every file under
// tests/reliability/fuzz_inputs/<target>/ is one test. Each runs in a child process with a time
// limit, so a crash or a hang fails that test alone, with the reason, instead of taking the test
// binary down or stalling it.
//
// Found so far (objective_regex): std::regex backtracks exponentially on nested quantifiers, so
// a study regex such as `time: ([0-9]+)*s` over a line of 40 digits, PCRE-style possessive
// quantifiers (`[0-9]+\.?+`, nested ones to std::regex), or the fuzzer's
// `[]******+++++++++++++` over 5 bytes never return, and tune hangs reading the objective.
// These pass once the regex objective moves to RE2 (linear time; it rejects the fuzzer's patterns
// as malformed, and matches the first one in microseconds).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "bench/fuzz/fuzz_targets.h"
#include "tuner/study/patterns.h"

namespace {

namespace fs = std::filesystem;

// Generous for sanitizer builds and a loaded machine: a good input takes milliseconds, the hangs
// found take minutes to forever.
constexpr unsigned k_limit_s = 10;

struct FuzzInput {
  std::string target;  // study_spec | chainer_log | objective_regex
  fs::path file;
};

std::vector<FuzzInput> all_inputs() {
  std::vector<FuzzInput> inputs;
  const fs::path root = fs::path(TUNE_SOURCE_DIR) / "tests/reliability/fuzz_inputs";
  for (const char* target : {"study_spec", "chainer_log", "objective_regex"}) {
    if (!fs::is_directory(root / target)) continue;
    for (const auto& entry : fs::directory_iterator(root / target))
      if (entry.is_regular_file()) inputs.push_back({target, entry.path()});
  }
  std::sort(inputs.begin(), inputs.end(),
            [](const FuzzInput& a, const FuzzInput& b) { return a.file < b.file; });
  return inputs;
}

// gtest prints a parameter that fails; the file says it all.
void PrintTo(const FuzzInput& input, std::ostream* os) { *os << input.file; }

void replay(const FuzzInput& input, const std::string& bytes, const tune::fuzz::Scratch& scratch) {
  if (input.target == "study_spec") tune::fuzz::run_study_spec(bytes);
  if (input.target == "chainer_log") tune::fuzz::run_chainer_log(bytes, scratch);
  if (input.target == "objective_regex") tune::fuzz::run_objective_regex(bytes, scratch);
}

class FuzzRegression : public ::testing::TestWithParam<FuzzInput> {};

TEST_P(FuzzRegression, ReturnsWithinTheTimeLimit) {
  const FuzzInput& input = GetParam();
  std::ifstream in(input.file, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << input.file;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  // Made here, so this process removes the files even when the child is killed.
  const tune::fuzz::Scratch scratch;
  const pid_t child = fork();
  ASSERT_GE(child, 0) << "fork failed";
  if (child == 0) {
    // SIGALRM's default action ends the child: that is the hang being reported.
    alarm(k_limit_s);
    replay(input, bytes, scratch);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    FAIL() << input.file << ": still running after " << k_limit_s << " s (a hang)";
  }
  ASSERT_TRUE(WIFEXITED(status)) << input.file << ": killed by signal " << WTERMSIG(status)
                                 << " (a crash; rerun the fuzz target on the file for the trace)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << input.file << ": exited with " << WEXITSTATUS(status);
}

std::string test_name(const ::testing::TestParamInfo<FuzzInput>& info) {
  std::string name = info.param.target + "_" + info.param.file.filename().string();
  std::replace_if(
      name.begin(), name.end(), [](unsigned char c) { return !std::isalnum(c); }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(SavedInputs, FuzzRegression, ::testing::ValuesIn(all_inputs()), test_name);

// Found by fuzz_objective_regex under UBSan: libstdc++ 12's regex compiler multiplies a repeat
// count by 10 per digit in a `long` without checking, so `x{11111111111111111111}` was undefined
// behaviour inside parse_study_spec's check of the pattern. The check now uses RE2, the engine
// that runs the pattern: a count it cannot read is no repetition, so RE2 (as Perl) takes the
// braces as literal text, with no arithmetic on the digits. The study loads, and the pattern
// means exactly what the trial will be matched against.
TEST(FuzzRegressionRegex, AnOverflowingRepeatCountIsNoUndefinedBehaviour) {
  const std::string pattern = "time: x{11111111111111111111}";
  auto spec = tune::tuner::parse_study_spec(
      "name: f\ncommand: [x]\nobjective:\n  regex: '" + pattern + "'\n", "s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->objective.regex, pattern);
  EXPECT_EQ(tune::tuner::regex_error(pattern), std::nullopt);
}

}  // namespace
