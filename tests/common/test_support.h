// Test helpers shared by tests/tuner, tests/reliability and tests/e2e, so each test file holds
// only what it tests: a fresh folder per test (TempDirTest), files written and read whole, a
// command run to its end with its output captured (run_command, through the launcher under test
// elsewhere: an argv, never a shell line), the trials a study stored, and a bounded wait for a
// file. Header-only; the helpers hold no state (TempDirTest: one folder per fixture object).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "search/trial.h"
#include "tuner/launch/launcher.h"
#include "tuner/storage/sqlite_storage.h"

extern char** environ;

namespace tune::test_support {

namespace fs = std::filesystem;

// "<prefix><suite>-<test>-<pid>" in the temp folder, emptied and created. The pid keeps apart
// two checkouts that run the same test on one machine at once.
inline fs::path fresh_test_dir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test =
      info ? std::string(info->test_suite_name()) + "-" + info->name() : std::string("global");
  std::string name = prefix + test + "-" + std::to_string(getpid());
  for (char& c : name) {
    if (c == '/') c = '_';  // parameterised tests: "Suite/Name/3"
  }
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A fixture with its own folder m_dir (fresh_test_dir(prefix)); removed after a passing test,
// kept after a failing one to look at.
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string prefix) : m_prefix(std::move(prefix)) {}
  void SetUp() override {
    // The load other work puts on the machine is recorded but not judged (tuner/run/
    // load_check.h): a test judges what it tests, also on a machine shared with builds.
    // tests/e2e/load_e2e_test.cpp runs tune without it.
    setenv("TUNE_LOAD_CHECK", "off", 0);
    m_dir = fresh_test_dir(m_prefix);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(m_dir);
  }

  fs::path m_dir;

 private:
  std::string m_prefix;
};

// The whole file; empty when it cannot be read.
inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes `text` as the whole file; returns its path.
inline std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

struct CommandOutput {
  int exit_code = -1;  // -1 when a signal ended it (see signal)
  int signal = 0;
  std::string out, err;
};

// Runs `argv` to its end in `dir`, with `env` added to this process's environment; stdout and
// stderr go through `dir`/<name>.out and .err, which are left there. Stopped (SIGTERM, then
// SIGKILL) after `timeout_s` when one is given.
inline CommandOutput run_command(const std::vector<std::string>& argv, const fs::path& dir,
                                 const std::map<std::string, std::string>& env = {},
                                 const std::string& name = "cmd",
                                 std::optional<double> timeout_s = std::nullopt) {
  tuner::LaunchRequest req;
  req.argv = argv;
  req.env_set = env;
  req.timeout_s = timeout_s;
  req.stdout_path = (dir / (name + ".out")).string();
  req.stderr_path = (dir / (name + ".err")).string();
  req.workdir = dir.string();
  const auto r = tuner::run_process(req);
  EXPECT_TRUE(r.started) << r.error;
  return {r.exit_code, r.signal, read_file(req.stdout_path), read_file(req.stderr_path)};
}

// Every trial of study `study` in the SQLite database `db`: none when the study is not there
// (yet: a test may stop tune before it created it), none and a test failure when the database
// cannot be read.
inline std::vector<search::FrozenTrial> stored_trials(const fs::path& db,
                                                      const std::string& study) {
  auto storage = tuner::SqliteStorage::open(db.string());
  EXPECT_TRUE(storage) << storage.error();
  if (!storage) return {};
  auto info = (*storage)->get_study(study);
  if (!info) return {};
  auto trials = (*storage)->get_all_trials(info->study_id);
  EXPECT_TRUE(trials) << trials.error();
  return trials ? std::move(*trials) : std::vector<search::FrozenTrial>{};
}

// The user attrs of study `study` in the SQLite database `db`: an empty object (and a test
// failure) when they cannot be read.
inline nlohmann::json study_user_attrs(const fs::path& db, const std::string& study) {
  auto storage = tuner::SqliteStorage::open(db.string());
  EXPECT_TRUE(storage) << storage.error();
  if (!storage) return nlohmann::json::object();
  auto info = (*storage)->get_study(study);
  EXPECT_TRUE(info) << study;
  if (!info) return nlohmann::json::object();
  auto attrs = (*storage)->get_study_user_attrs(info->study_id);
  EXPECT_TRUE(attrs) << attrs.error().message;
  return attrs ? *attrs : nlohmann::json::object();
}

// Waits (bounded) until `path` exists and holds at least `min_bytes` (a file written in one go,
// as a pid, is then whole; 0 for one made by `touch`): the condition ends the wait, not a fixed
// delay. Whether it came.
inline bool wait_for_file(const fs::path& path, std::chrono::seconds limit,
                          std::uintmax_t min_bytes = 1) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    std::error_code ec;
    if (fs::exists(path, ec) && fs::file_size(path, ec) >= min_bytes) return true;
    std::this_thread::yield();
  }
  return false;
}

// Runs `argv` (no shell) to its end as a plain child, not under tune's keeper: a fixture's own
// commands (starting servers, namespace hosts) leave daemons running on purpose, which the
// keeper would stop as it stops whatever a trial leaves behind. stdout and stderr are appended to
// `log`. Its exit status; -1 if it could not start or a signal ended it.
inline int spawn_and_wait(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace tune::test_support
