// Trial ownership: when a RUNNING trial's tune is gone, on an invented host (HostEnv fake), and
// the runner's recovery on open driven through the same seam.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "tuner/base/trial_attrs.h"
#include "tuner/run/runner.h"
#include "tuner/storage/storage_url.h"
#include "tuner/storage/trial_owner.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

class FakeHost final : public HostEnv {
 public:
  FakeHost(std::string name, pid_t self) : m_name(std::move(name)), m_self(self) {}
  std::string host_name() const override { return m_name; }
  pid_t self_pid() const override { return m_self; }
  std::optional<std::uint64_t> process_start_time(pid_t pid) const override {
    auto it = m_procs.find(pid);
    if (it == m_procs.end()) return std::nullopt;
    return it->second;
  }
  std::map<pid_t, std::uint64_t> m_procs;

 private:
  std::string m_name;
  pid_t m_self;
};

nlohmann::json owner(const std::string& host, pid_t pid, std::uint64_t start) {
  return {{"host", host}, {"pid", pid}, {"start", start}};
}

TrialLiveness ages(std::optional<double> heartbeat, std::optional<double> start) {
  TrialLiveness l;
  l.since_heartbeat_s = heartbeat;
  l.since_start_s = start;
  return l;
}

TEST(TrialOwner, IdentityNamesHostPidAndStartTime) {
  FakeHost host("node7", 42);
  host.m_procs[42] = 1234;
  EXPECT_EQ(owner_identity(host), owner("node7", 42, 1234));
}

TEST(TrialOwner, OnItsOwnHostTheProcessTableDecides) {
  FakeHost host("node7", 1);
  host.m_procs[42] = 1234;
  const auto old = ages(1e6, 1e6);  // ages do not matter here
  EXPECT_FALSE(owner_is_dead(owner("node7", 42, 1234), host, old, 120));
  EXPECT_TRUE(owner_is_dead(owner("node7", 42, 999), host, old, 120)) << "a reused pid";
  EXPECT_TRUE(owner_is_dead(owner("node7", 43, 1234), host, ages(1, 1), 120)) << "gone";
}

TEST(TrialOwner, OnAnotherHostOnlyTimeDecides) {
  FakeHost host("node7", 1);
  const auto other = owner("node8", 42, 1234);
  EXPECT_FALSE(owner_is_dead(other, host, ages(119, 1e6), 120));
  EXPECT_TRUE(owner_is_dead(other, host, ages(121, 1e6), 120));
  // No heartbeat ever: the trial ages from its start.
  EXPECT_FALSE(owner_is_dead(other, host, ages(std::nullopt, 60), 120));
  EXPECT_TRUE(owner_is_dead(other, host, ages(std::nullopt, 600), 120));
  EXPECT_FALSE(owner_is_dead(other, host, std::nullopt, 120)) << "ages unknown: leave it";
}

TEST(TrialOwner, TrialsTuneDidNotStartNeedAHeartbeatToBeDeclaredDead) {
  FakeHost host("node7", 1);
  EXPECT_FALSE(owner_is_dead(nlohmann::json(), host, ages(std::nullopt, 1e6), 120));
  EXPECT_TRUE(owner_is_dead(nlohmann::json(), host, ages(600, 1e6), 120));
}

// The runner stamps its trials with the host's identity and, when it opens a study, fails the
// RUNNING trials whose owner the host says is gone: both through the fake.
TEST(TrialOwner, RunnerRecoversTrialsOfADeadProcessOnOpen) {
  const auto dir = fs::temp_directory_path() / "tune-trial-owner";
  fs::remove_all(dir);
  fs::create_directories(dir);
  StudySpec spec;
  spec.file = (dir / "s.yaml").string();
  spec.name = "own";
  spec.output = dir.string();
  spec.command = {"true"};
  {
    auto storage = open_storage((dir / "study.db").string());
    ASSERT_TRUE(storage) << storage.error();
    bool created = false;
    auto study = (*storage)->get_or_create_study("own", spec.direction, &created);
    ASSERT_TRUE(study);
    for (const auto& o : {owner("node7", 42, 1234), owner("node7", 43, 1)}) {
      ASSERT_TRUE(
          (*storage)->create_trial(study->study_id, TrialState::running, {{k_attr_owner, o}}));
    }
  }
  FakeHost host("node7", 50);
  host.m_procs[42] = 1234;  // the first trial's tune is alive, the second's is gone
  RunOptions options;
  options.host = &host;
  auto runner = StudyRunner::open(spec, options);
  ASSERT_TRUE(runner) << runner.error();
  const auto& trials = (*runner)->cache().trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, TrialState::running);
  EXPECT_EQ(trials[1].state, TrialState::fail);
  EXPECT_NE(trials[1].system_attrs.value(k_attr_fail_reason, "").find("died"), std::string::npos);
  runner->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tune::tuner
