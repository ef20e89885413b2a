// Issue 12, points 5-7: the study file and what is made of it. Duplicate keys, alias bombs and
// alias cycles are refused with file:line:key before anything grows; a study name is one safe
// path component and cannot reach outside the output folder; environment variable names are
// portable; every word `tune export` writes is quoted, so running an exported script or sourcing
// an env file runs nothing of the study's values and passes them byte for byte; and the exit
// status says who must act: 2 bad input, 1 a run that failed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "search/trial.h"
#include "tests/common/test_support.h"
#include "tuner/export/export.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int status = -1;  // exit code, or 128 + signal
  std::string out, err;
  long max_rss_kb = 0;  // of the process itself (wait4)
  double wall_s = 0;
};

using test_support::read_file;

// Splits NUL-terminated records (printf '%s\0', env -0).
std::vector<std::string> records(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto end = text.find('\0', pos);
    if (end == std::string::npos) break;
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::map<std::string, std::string> environment_of(const std::string& env0) {
  std::map<std::string, std::string> env;
  for (const auto& r : records(env0)) {
    const auto eq = r.find('=');
    if (eq != std::string::npos) env[r.substr(0, eq)] = r.substr(eq + 1);
  }
  return env;
}

class SpecTest : public test_support::TempDirTest {
 protected:
  SpecTest() : TempDirTest("tune-spec-") {}
  void SetUp() override {
    TempDirTest::SetUp();
    m_dir = fs::canonical(m_dir);
  }

  fs::path write(const fs::path& rel, const std::string& text) {
    const auto p = m_dir / rel;
    fs::create_directories(p.parent_path());
    return test_support::write_file(p, text);
  }

  // Runs argv (looked up in PATH) in `cwd` with `env` added, under an address-space limit when
  // `as_limit` > 0, and reports the child's own peak RSS.
  Ran run(const std::vector<std::string>& argv, const fs::path& cwd,
          const std::map<std::string, std::string>& env = {}, rlim_t as_limit = 0) {
    const auto out_path = m_dir / ".run.out";
    const auto err_path = m_dir / ".run.err";
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      if (!env.contains(entry.substr(0, entry.find('=')))) env_text.push_back(entry);
    }
    for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
      const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || chdir(cwd.c_str()) != 0)
        _exit(126);
      if (as_limit > 0) {
        const rlimit lim{as_limit, as_limit};
        if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(126);
      }
      execvpe(args[0], args.data(), envp.data());
      _exit(127);
    }
    Ran r;
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      return r;
    }
    int st = 0;
    rusage ru{};
    EXPECT_EQ(wait4(pid, &st, 0, &ru), pid);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.max_rss_kb = ru.ru_maxrss;
    r.out = read_file(out_path);
    r.err = read_file(err_path);
    return r;
  }
  Ran tune(const std::vector<std::string>& args, const fs::path& cwd = {}) {
    std::vector<std::string> argv = {TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, cwd.empty() ? m_dir : cwd);
  }

  // Every file named PWNED under the test's folder.
  std::vector<std::string> pwned() const {
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(m_dir)) {
      if (e.path().filename() == "PWNED") found.push_back(e.path().string());
    }
    return found;
  }
};

// ---------------------------------------------------------------------------------------------
// Point 7: duplicate keys, aliases, directories.

std::string error_of(const std::string& yaml) {
  auto spec = parse_study_spec(yaml, "s.yaml");
  EXPECT_FALSE(spec.has_value()) << "expected an error for:\n" << yaml;
  return spec ? std::string() : spec.error();
}

struct BadCase {
  const char* yaml;
  const char* expect;  // the error's start: "s.yaml:LINE: key 'KEY': ..."
};

class StudyFileDuplicateKeys : public ::testing::TestWithParam<BadCase> {};

// yaml-cpp kept both keys; lookups saw the first, the loops the second, and the database then
// stored x=3.4 under an int distribution.
TEST_P(StudyFileDuplicateKeys, AreRefusedWithFileLineAndKey) {
  const auto err = error_of(GetParam().yaml);
  EXPECT_TRUE(err.starts_with(GetParam().expect)) << err;
  EXPECT_NE(err.find("duplicate key"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(
    Everywhere, StudyFileDuplicateKeys,
    ::testing::Values(
        BadCase{"name: a\ncommand: [p]\nname: b\n", "s.yaml:3: key 'name': duplicate key"},
        BadCase{"name: a\ncommand: [p]\nparams:\n  x: {type: int, low: 1, high: 5}\n"
                "  x: {type: float, low: 1, high: 5}\nenqueue: [{x: 3.4}]\n",
                "s.yaml:5: key 'params.x': duplicate key (first at line 4)"},
        BadCase{"name: a\ncommand: [p]\nparams:\n  x: {type: int, low: 1, high: 5, low: 2}\n",
                "s.yaml:4: key 'params.x.low': duplicate key"},
        BadCase{"name: a\ncommand: [p]\nenv:\n  OMP_NUM_THREADS: 1\n  OMP_NUM_THREADS: 2\n",
                "s.yaml:5: key 'env.OMP_NUM_THREADS': duplicate key (first at line 4)"},
        BadCase{"name: a\ncommand: [p]\nlaunch:\n  mpirun:\n    mca: {btl: tcp, btl: self}\n",
                "s.yaml:5: key 'launch.mpirun.mca.btl': duplicate key"},
        BadCase{"name: a\ncommand: [p]\nsampler:\n  type: random\n  seed: 1\n  seed: 2\n",
                "s.yaml:6: key 'sampler.seed': duplicate key (first at line 5)"},
        BadCase{"name: a\ncommand: [p]\nparams: {x: [1, 2]}\nenqueue:\n  - {x: 1, x: 2}\n",
                "s.yaml:5: key 'enqueue[0].x': duplicate key"},
        // Keys compare by text, as the parser reads them: 1 and "1" are one key.
        BadCase{"name: a\ncommand: [p]\nparams: {x: [1, 2]}\nsampler:\n  type: grid\n"
                "  search_space: {x: [1], 'x': [2]}\n",
                "s.yaml:6: key 'sampler.search_space.x': duplicate key"}));

TEST(StudyFileDocuments, ASecondDocumentIsRefused) {
  // It was ignored without a word.
  const auto err = error_of("name: a\ncommand: [p]\n---\nname: b\n");
  EXPECT_TRUE(err.starts_with("s.yaml:3: key '(top level)': ")) << err;
  EXPECT_NE(err.find("second YAML document"), std::string::npos) << err;
}

// The 1 KB bomb of the issue: ten copies per level, nine levels, under a section the parser walks.
std::string alias_bomb() {
  std::string y = "name: bomb\ncommand: [p]\nsampler:\n  type: random\n  lol:\n";
  y += "    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    y += fmt::format("    a{}: &a{} [", i, i);
    for (int k = 0; k < 10; ++k) y += fmt::format("{}*a{}", k ? ", " : "", i - 1);
    y += "]\n";
  }
  return y;
}

TEST_F(SpecTest, AnAliasBombIsRefusedBeforeItGrows) {
  const auto bomb = alias_bomb();
  ASSERT_LT(bomb.size(), 1024u);
  const auto file = write("bomb.yaml", bomb);
  // 1 GiB of address space: the old tune grew past it (std::bad_alloc, abort); 9 levels of ten
  // would be 10^9 nodes.
  const auto r = run({TUNE_BIN, "--trials", "1", file.string()}, m_dir, {}, rlim_t{1} << 30);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.err.starts_with("tune: error: " + file.string() + ":10: key 'sampler.lol.a4["))
      << r.err;
  EXPECT_NE(r.err.find("alias"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_LT(r.max_rss_kb, 64 * 1024) << "peak RSS " << r.max_rss_kb << " KB";
  EXPECT_LT(r.wall_s, 10.0);
  EXPECT_FALSE(fs::exists(m_dir / "tune-out")) << "nothing is created for a bad study file";

  // Aliases that share a value, the reason YAML has them, still work.
  auto spec = parse_study_spec(
      "name: a\ncommand: [p, '{x}', '{y}']\n"
      "params:\n  x: &choices [1, 2, 4]\n  y: *choices\n",
      "s.yaml");
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_EQ(spec->space.size(), 2u);
  EXPECT_EQ(std::get<search::CategoricalDistribution>(spec->space[1].second).choices.size(), 3u);
}

// 200,000 levels of nesting (issue 37): refused with the line and the cause, not yaml-cpp's
// "bad file", in a tune process that stays small and quick.
TEST_F(SpecTest, NestingPastTheParsersLimitNamesItsLineAndCause) {
  const auto file =
      write("deep.yaml", "name: a\ncommand: [p]\nparams:\n  x: " + std::string(200000, '[') +
                             std::string(200000, ']') + "\n");
  const auto r = tune({"--trials", "1", file.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.err.starts_with("tune: error: " + file.string() + ":4: invalid YAML: nested "))
      << r.err;
  EXPECT_TRUE(r.err.contains("levels deep here, past the parser's limit")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Issue 50: a timeout past what the clocks hold overflowed the deadline and failed every trial at
// once; now the study file (and --time-limit) is refused at load, naming the line.
TEST_F(SpecTest, ATimeoutPastTheClocksIsRefusedAtLoad) {
  for (const std::string value : {"9999999999", "3000000h"}) {
    const auto file =
        write("long.yaml", "name: a\ncommand: [sh, -c, 'echo value=1']\ntimeout: " + value +
                               "\nparams:\n  x: [1, 2]\n");
    const auto r = tune({"--trials", "1", file.string()});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err, "tune: error: " + file.string() + ":3: key 'timeout': '" + value +
                         "' is longer than tune can time (at most 1000000000 s, about 31 years); "
                         "leave it out for no limit\n");
    EXPECT_FALSE(fs::exists(m_dir / "tune-out")) << "nothing ran";
  }
  const auto file =
      write("ok.yaml", "name: a\ncommand: [sh, -c, 'echo value=1']\nparams:\n  x: [1]\n");
  const auto r = tune({"--trials", "1", "--time-limit", "3000000h", file.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.err.contains("--time-limit: '3000000h' is longer than tune can time")) << r.err;
}

// Issue 50: yaml-cpp calls a tab in indentation "illegal map value"; the tab is named.
TEST_F(SpecTest, ATabInIndentationIsNamed) {
  const auto file =
      write("tab.yaml", "name: a\ncommand: [p]\nparams:\n\tx: {type: int, low: 1, high: 3}\n");
  const auto r = tune({"--trials", "1", file.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, "tune: error: " + file.string() +
                       ":4: invalid YAML: line 4 is indented with a tab, which YAML does not "
                       "allow; indent with spaces (illegal map value)\n");
}

// A cycle made the walk over the sampler section recurse until the stack ran out (SIGSEGV):
// run in a tune process so that the old crash fails this test alone.
TEST_F(SpecTest, AnAliasCycleIsRefused) {
  const auto file =
      write("cycle.yaml", "name: a\ncommand: [p]\nsampler: {type: random, x: &a [1, *a]}\n");
  const auto r = tune({"--trials", "1", file.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.err.starts_with("tune: error: " + file.string() + ":3: key 'sampler.x[1]': "))
      << r.err;
  EXPECT_NE(r.err.find("cycle"), std::string::npos) << r.err;
}

TEST_F(SpecTest, ADirectoryIsNotAStudyFile) {
  fs::create_directories(m_dir / "studies.yaml");
  const auto r = tune({"--trials", "1", (m_dir / "studies.yaml").string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "tune: error: " + (m_dir / "studies.yaml").string() +
                       ": is a directory, not a study file\n");
}

// ---------------------------------------------------------------------------------------------
// Point 6: the study name is one folder of the output.

class StudyNames : public ::testing::TestWithParam<const char*> {};

TEST_P(StudyNames, ThatAreNotOnePathComponentAreRefused) {
  const auto err = error_of(std::string("name: ") + GetParam() + "\ncommand: [p]\n");
  EXPECT_TRUE(err.starts_with("s.yaml:1: key 'name': ")) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line, control characters escaped: " << err;
}

INSTANTIATE_TEST_SUITE_P(Unsafe, StudyNames,
                         ::testing::Values("'.'", "'..'", "../../victim", "a/b", "/abs",
                                           "\"a\\nb\"", "\"a\\0b\"", "\"tab\\there\"",
                                           "\"del\\x7f\""));

TEST(StudyOutput, MustBeAPlainFolder) {
  EXPECT_TRUE(error_of("name: a\ncommand: [p]\noutput: ''\n")
                  .starts_with("s.yaml:3: key 'output': must not be empty"));
  EXPECT_TRUE(error_of("name: a\ncommand: [p]\noutput: \"out\\nx\"\n")
                  .starts_with("s.yaml:3: key 'output': 'out\\x0ax' holds a control character"));
  EXPECT_TRUE(error_of("name: a\ncommand: [p]\nstorage: 'mysql://h/db'\n")
                  .starts_with("s.yaml:3: key 'storage': "));
}

// `name: ../../victim` made the default output tune-out/../../victim; the first trial's folder
// was then removed with everything in it.
TEST_F(SpecTest, ANameCannotReachOutsideTheOutputFolder) {
  const auto victim = write("victim/trials/0/important.txt", "keep me\n");
  const auto study = write("work/s.yaml", "name: ../../victim\ncommand: ['" FAKE_TRIAL
                                          "', --out, '{trial_dir}', --value, '1']\n"
                                          "sampler: {type: random, seed: 1}\n");
  const auto r = tune({"--trials", "1", study.string()}, m_dir / "work");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.starts_with("tune: error: " + study.string() + ":1: key 'name': ")) << r.err;
  EXPECT_EQ(read_file(victim), "keep me\n");
  EXPECT_FALSE(fs::exists(m_dir / "victim" / "study.db"));
  EXPECT_FALSE(fs::exists(m_dir / "work" / "tune-out"));

  // Ordinary names, spaces and all, still name a folder under tune-out.
  for (const char* name : {"quickstart", "exp study", "run-2_b.v3", "...dots", "日本"}) {
    auto spec = parse_study_spec(fmt::format("name: '{}'\ncommand: [p]\n", name), "s.yaml");
    ASSERT_TRUE(spec) << name << ": " << spec.error();
    EXPECT_EQ(spec->output, std::string("tune-out/") + name);
  }
}

// ---------------------------------------------------------------------------------------------
// Point 5: export injection.

class EnvNames : public ::testing::TestWithParam<const char*> {};

TEST_P(EnvNames, ThatNoShellCanSetAreRefused) {
  const auto err = error_of(fmt::format("name: a\ncommand: [p]\nenv:\n  {}: '1'\n", GetParam()));
  EXPECT_TRUE(err.starts_with("s.yaml:4: key 'env.")) << err;
  EXPECT_NE(err.find("not an environment variable name"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(Unsafe, EnvNames,
                         ::testing::Values("'X; touch PWNED'", "\"A\\ntouch PWNED\"", "'A B'", "1X",
                                           "'A=B'", "''", "'$(id)'", "'-x'", "'é'"));

// A program that writes its argv ($0 first) and environment, NUL-separated, to its cwd.
constexpr const char* k_dump_program =
    "#!/bin/sh\nprintf '%s\\0' \"$0\" \"$@\" > argv.bin\nenv -0 > env.bin\n";

// Values that a shell would run or change if any word were left unquoted.
const std::map<std::string, std::string> k_env_values = {
    {"V_SUBST", "$(touch PWNED)"},
    {"V_TICK", "`touch PWNED`"},
    {"V_QUOTES", "it's \"q\" \\ $HOME ${HOME} !! ~ *"},
    {"V_NL", "one\ntwo\n; touch PWNED\n"},
    {"V_PARAM", "x'; touch PWNED; echo '"},
};

class ExportInjection : public SpecTest {
 protected:
  // The hostile study, its program being `program_name` (a copy of the dump program).
  StudySpec hostile_spec(const std::string& program_name, bool with_env = true) {
    const auto program = write("bin/" + program_name, k_dump_program);
    fs::permissions(program, fs::perms::owner_all);
    std::string yaml = "name: hostile\n";
    // YAML double quotes: ' and $ are literal; \" and \n are escapes.
    auto dq = [](const std::string& s) {
      std::string out = "\"";
      for (char c : s) {
        if (c == '"' || c == '\\') {
          out += '\\';
          out += c;
        } else if (c == '\n') {
          out += "\\n";
        } else {
          out += c;
        }
      }
      return out + "\"";
    };
    yaml += "command: [" + dq(program.string()) +
            ", '--label={label}', '$(touch PWNED)', '`touch PWNED`', " + dq("a'b\"c\nd") +
            ", '{trial_dir}/sub', '--gone={maybe}']\n";
    // A template's literal braces are written doubled.
    auto literal = [](const std::string& s) {
      std::string out;
      for (char c : s) out += (c == '{' || c == '}') ? std::string(2, c) : std::string(1, c);
      return out;
    };
    if (with_env) {
      yaml += "env:\n";
      for (const auto& [k, v] : k_env_values) {
        yaml +=
            "  " + k + ": " + (k == "V_PARAM" ? std::string("'{label}'") : dq(literal(v))) + "\n";
      }
      yaml += "  V_NULL: '{maybe}'\n";
    }
    yaml += "params:\n  label: [" + dq(k_env_values.at("V_PARAM")) + "]\n  maybe: [null]\n";
    auto spec = parse_study_spec(yaml, (m_dir / "s.yaml").string());
    EXPECT_TRUE(spec) << spec.error() << "\n" << yaml;
    return spec ? *spec : StudySpec{};
  }

  static search::FrozenTrial trial_of(const StudySpec& spec) {
    search::FrozenTrial t;
    t.number = 0;
    t.state = search::TrialState::complete;
    t.value = 1.0;
    for (const auto& [name, dist] : spec.space) {
      const auto& c = std::get<search::CategoricalDistribution>(dist);
      t.distributions[name] = dist;
      t.params[name] = *search::to_internal(dist, c.choices.front());
    }
    return t;
  }

  std::vector<std::string> expected_argv(const fs::path& program, const fs::path& out) const {
    return {program.string(), "--label=" + k_env_values.at("V_PARAM"),
            "$(touch PWNED)", "`touch PWNED`",
            "a'b\"c\nd",      (out / "sub").string()};
  }

  // The dump program's record of its run in `dir`: argv and environment as they arrived.
  void expect_arrived(const fs::path& dir, const fs::path& program, const fs::path& out,
                      bool expect_unset, const std::string& what) {
    EXPECT_EQ(records(read_file(dir / "argv.bin")), expected_argv(program, out)) << what;
    const auto env = environment_of(read_file(dir / "env.bin"));
    for (const auto& [k, v] : k_env_values) {
      ASSERT_TRUE(env.contains(k)) << what << ": " << k;
      EXPECT_EQ(env.at(k), v) << what << ": " << k;
    }
    if (expect_unset) {
      EXPECT_FALSE(env.contains("V_NULL")) << what << ": null means unset";
    }
  }
};

// The old export wrote a first word holding '=' as '...' without escaping its quotes: a program
// path `x=1'$(touch PWNED)'` ran touch when the script ran.
TEST_F(ExportInjection, ScriptsAndEnvFileRunNothingAndPassEveryValueByteForByte) {
  const std::string name = "x=1'$(touch PWNED)'";
  const auto spec = hostile_spec(name);
  const auto trial = trial_of(spec);
  for (const auto format : {ExportFormat::bash, ExportFormat::slurm, ExportFormat::pbs}) {
    const auto what = "format " + std::to_string(static_cast<int>(format));
    const auto text = render_export(spec, trial, format);
    ASSERT_TRUE(text) << text.error();
    const auto script = write("job.sh", *text);
    const auto syntax = run({"bash", "-n", script.string()}, m_dir);
    EXPECT_EQ(syntax.status, 0) << what << ": " << syntax.err << "\n" << *text;
    const auto out = m_dir / ("out" + std::to_string(static_cast<int>(format)));
    fs::create_directories(m_dir / "cwd");
    const auto r = run({"bash", script.string()}, m_dir / "cwd",
                       {{"TUNE_OUT", out.string()}, {"V_NULL", "inherited"}});
    EXPECT_EQ(r.status, 0) << what << ": " << r.err << "\n" << *text;
    expect_arrived(out, m_dir / "bin" / name, out, /*expect_unset=*/true, what);
    EXPECT_EQ(pwned(), std::vector<std::string>{}) << what << ":\n" << *text;
  }

  // The env file, sourced as its header says, from a folder where a stray command would leave
  // PWNED: the same values, nothing run.
  const auto text = render_export(spec, trial, ExportFormat::env);
  ASSERT_TRUE(text) << text.error();
  const auto file = write("trial.env", *text);
  const auto syntax = run({"bash", "-n", file.string()}, m_dir);
  EXPECT_EQ(syntax.status, 0) << syntax.err;
  const auto r = run({"bash", "-c", "set -a; . \"$1\"; set +a; exec \"$2\"", "bash", file.string(),
                      (m_dir / "bin" / name).string()},
                     m_dir);
  EXPECT_EQ(r.status, 0) << r.err << "\n" << *text;
  const auto env = environment_of(read_file(m_dir / "env.bin"));
  for (const auto& [k, v] : k_env_values)
    EXPECT_EQ(env.contains(k) ? env.at(k) : "<unset>", v) << "env file: " << k;
  EXPECT_EQ(pwned(), std::vector<std::string>{}) << *text;
}

TEST_F(ExportInjection, TheMpirunLineRunsNothingAndRefusesWhatEnvWouldMisread) {
  // env(1) reads a program path holding '=' as one more variable: refused, not mis-exported.
  const auto with_eq = hostile_spec("x=1'$(touch PWNED)'");
  const auto refused = render_export(with_eq, trial_of(with_eq), ExportFormat::mpirun);
  ASSERT_FALSE(refused) << *refused;
  EXPECT_NE(refused.error().find("holds '='"), std::string::npos) << refused.error();

  // Without environment there is no env(1): the '=' program is the first word, quoted.
  const auto out = m_dir / "out";
  fs::create_directories(out);
  const auto bare = hostile_spec("x=1'$(touch PWNED)'", /*with_env=*/false);
  auto line = render_export(bare, trial_of(bare), ExportFormat::mpirun);
  ASSERT_TRUE(line) << line.error();
  auto r = run({"bash", "-c", *line}, out, {{"TUNE_OUT", out.string()}});
  EXPECT_EQ(r.status, 0) << r.err << "\n" << *line;
  EXPECT_EQ(records(read_file(out / "argv.bin")),
            expected_argv(m_dir / "bin" / "x=1'$(touch PWNED)'", out))
      << *line;

  // And with environment, a program path of quotes and $(...) but no '='.
  const std::string name = "p'$(touch PWNED)'`touch PWNED`";
  const auto spec = hostile_spec(name);
  line = render_export(spec, trial_of(spec), ExportFormat::mpirun);
  ASSERT_TRUE(line) << line.error();
  r = run({"bash", "-c", *line}, out, {{"TUNE_OUT", out.string()}, {"V_NULL", "inherited"}});
  EXPECT_EQ(r.status, 0) << r.err << "\n" << *line;
  expect_arrived(out, m_dir / "bin" / name, out, /*expect_unset=*/true, *line);
  EXPECT_EQ(pwned(), std::vector<std::string>{}) << *line;
}

// `unset NAME` and the env file's "# NAME is left unset" comment carried the name as it was: a
// name with "; touch PWNED" or a newline ran a command. The study file refuses such names (above);
// export checks again, whatever StudySpec it is handed.
TEST_F(ExportInjection, ExportRefusesAVariableNameAShellWouldRun) {
  auto spec = hostile_spec("prog");
  for (const std::string bad : {"X; touch PWNED", "A\ntouch PWNED", "A B", "1X", "A=B"}) {
    auto s = spec;
    s.env.emplace_back(bad, "{maybe}");  // null in the trial: the name goes to unset
    for (const auto format : {ExportFormat::bash, ExportFormat::slurm, ExportFormat::pbs,
                              ExportFormat::env, ExportFormat::mpirun}) {
      const auto text = render_export(s, trial_of(s), format);
      EXPECT_FALSE(text) << "format " << static_cast<int>(format) << ", name '" << bad << "':\n"
                         << *text;
      if (!text) {
        EXPECT_NE(text.error().find("not a valid environment variable name"), std::string::npos)
            << text.error();
        EXPECT_EQ(text.error().find('\n'), std::string::npos) << text.error();
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Point 7: exit status 2 for bad input, 1 for a study that could not run.

TEST_F(SpecTest, ExitStatusSaysWhoMustAct) {
  const auto study = write("s.yaml", "name: ok\noutput: " + (m_dir / "out").string() +
                                         "\ncommand: ['" FAKE_TRIAL
                                         "', --out, '{trial_dir}', --value, '{x}']\n"
                                         "sampler: {type: random, seed: 1}\n"
                                         "params:\n  x: {type: float, low: 1, high: 10}\n")
                         .string();
  const auto setup = tune({"--trials", "1", "--quiet", study});
  ASSERT_EQ(setup.status, 0) << setup.err;
  const auto db = (m_dir / "out" / "study.db").string();
  const auto bad = write("bad.yaml", "name: x\ncommand: [p]\nbogus: 1\n").string();
  fs::create_directories(m_dir / "dir.yaml");
  const auto not_db = write("notes.txt", "not a database\n").string();
  const std::vector<std::vector<std::string>> bad_input = {
      {"--no-such-flag", study},
      {"--trials", "0", study},
      {"--trials", "many", study},
      {"--time-limit", "soon", study},
      {"--timeout", "30m", study},  // renamed --time-limit
      {"reprot", study},            // a mistyped command
      {bad},
      {(m_dir / "dir.yaml").string()},
      {(m_dir / "missing.yaml").string()},
      {"--storage", "mysql://h/db", study},
      {"best", (m_dir / "missing.db").string()},
      {"best", study, "--study", "nope"},
      {"trials", db, "--study", "nope"},
      {"report", study, "--format", "pdf"},
      {"report", bad},
      {"export", study, "--trial", "999"},
      {"export", study, "--format", "lsf"},
      {"export", study, "--format", "slurm-array", "--workers", "2", "--trials", "3"},
      {"export", study, "--trials-per-worker", "3"},
      {"export", bad},
      {"confirm", bad},
      {"confirm", study, "--repeats", "0"},
      {"probe", "--format", "xml"},
      {"no-such-command", "x"},
  };
  for (const auto& args : bad_input) {
    std::string line;
    for (const auto& a : args) line += a + ' ';
    const auto r = tune(args);
    EXPECT_EQ(r.status, 2) << "tune " << line << "\n" << r.err;
    EXPECT_TRUE(r.err.starts_with("tune: error: ")) << "tune " << line << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "tune " << line << "\n" << r.err;
  }
  // Good input that cannot run: the database's folder is a file.
  const auto blocked = write("blocked.yaml", "name: blocked\nstorage: " +
                                                 (m_dir / "notes.txt" / "study.db").string() +
                                                 "\ncommand: [/bin/true]\n")
                           .string();
  auto r = tune({"--trials", "1", blocked});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(r.err.starts_with("tune: error: ")) << r.err;
  // A file that is there but no readable database (corrupt, or never one): the database failed,
  // as a server that does not answer would (tune_e2e's ExitStatusMeansTheSameInEverySubcommand).
  r = tune({"trials", not_db});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(r.err.starts_with("tune: error: ")) << r.err;
  // And the statuses are documented where a user looks.
  const auto help = tune({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("Exit status: 0 done; 1 "), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("2 bad input"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("130 interrupted"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace tune::tuner
