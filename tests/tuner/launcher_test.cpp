// Launcher: argv and environment, exit status and signals, timeouts that take the whole tree.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tuner/launcher.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            (std::string("tune-launcher-") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string read(const std::string& name) {
    std::ifstream in(m_dir / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  LaunchRequest request(std::vector<std::string> argv) {
    LaunchRequest r;
    r.argv = std::move(argv);
    r.stdout_path = (m_dir / "out").string();
    r.stderr_path = (m_dir / "err").string();
    r.workdir = m_dir.string();
    return r;
  }
  fs::path m_dir;
};

TEST_F(LauncherTest, RunsArgvWithoutAShell) {
  // A shell would expand $HOME and split on spaces; an argv vector passes them through.
  auto r = run_process(request({"printf", "%s|%s", "$HOME", "a b"}));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(read("out"), "$HOME|a b");
  EXPECT_GT(r.wall_s, 0);
}

TEST_F(LauncherTest, EnvironmentIsParentPlusTemplate) {
  setenv("TUNE_TEST_INHERITED", "yes", 1);
  setenv("TUNE_TEST_REMOVED", "still here", 1);
  auto req = request({"env"});
  req.env_set["TUNE_TEST_SET"] = "42";
  req.env_unset.push_back("TUNE_TEST_REMOVED");
  auto r = run_process(req);
  ASSERT_EQ(r.exit_code, 0);
  const auto out = read("out");
  EXPECT_NE(out.find("TUNE_TEST_INHERITED=yes"), std::string::npos);
  EXPECT_NE(out.find("TUNE_TEST_SET=42"), std::string::npos);
  EXPECT_EQ(out.find("TUNE_TEST_REMOVED"), std::string::npos);
}

TEST_F(LauncherTest, ExitCodeAndSignal) {
  auto crash = run_process(request({FAKE_TRIAL, "--mode", "crash"}));
  EXPECT_EQ(crash.exit_code, 3);
  EXPECT_NE(read("err").find("crashing on purpose"), std::string::npos);
  auto segv = run_process(request({FAKE_TRIAL, "--mode", "segv"}));
  EXPECT_EQ(segv.signal, SIGSEGV);
}

TEST_F(LauncherTest, MissingProgramIsAnError) {
  auto r = run_process(request({"tune-no-such-program-xyz"}));
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("not found"), std::string::npos);
}

TEST_F(LauncherTest, TimeoutKillsTheWholeProcessTree) {
  // The fake trial ignores SIGTERM; its grandchild copy must die too (SIGKILL after grace).
  const auto started = (m_dir / "grandchild.pid").string();
  auto req =
      request({"sh", "-c", "\"$0\" --mode hang --started \"$1\" & wait", FAKE_TRIAL, started});
  req.timeout_s = 0.5;
  req.kill_grace_s = 0.3;
  auto r = run_process(req);
  EXPECT_EQ(r.stopped, StopReason::timeout);
  EXPECT_LT(r.wall_s, 5.0);
  std::ifstream in(started);
  pid_t grandchild = 0;
  ASSERT_TRUE(in >> grandchild) << "the grandchild never started";
  // Reaped by init or dead: either way no longer signalable as a live process of ours.
  const bool gone = kill(grandchild, 0) != 0 || [&] {
    std::ifstream st("/proc/" + std::to_string(grandchild) + "/stat");
    std::string s;
    std::getline(st, s);
    return s.find(") Z") != std::string::npos;
  }();
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the timeout";
}

TEST_F(LauncherTest, WatcherCanStopTheTrial) {
  int ticks = 0;
  auto req = request({FAKE_TRIAL, "--mode", "hang"});
  req.tick_s = 0.01;
  req.kill_grace_s = 0.1;
  auto r = run_process(req, [&](pid_t) { return ++ticks >= 3 ? std::string("enough") : ""; });
  EXPECT_EQ(r.stopped, StopReason::watcher);
  EXPECT_EQ(r.stop_detail, "enough");
  EXPECT_EQ(r.signal, SIGKILL);  // it ignored SIGTERM
}

TEST_F(LauncherTest, DescendantsAreFound) {
  EXPECT_TRUE(descendants(999999).empty());
  auto self_children = descendants(1);
  EXPECT_FALSE(self_children.empty());
}

}  // namespace
}  // namespace tune::tuner
