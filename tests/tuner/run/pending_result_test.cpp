// The file that keeps a trial's end when the database cannot take it (run/pending_result.h):
// what is written is read back exactly, and a file that is not this trial's result, or not a
// finished trial's, is refused naming the file, so a resume never stores a made-up result.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/run/pending_result.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

class PendingResultTest : public test_support::TempDirTest {
 protected:
  PendingResultTest() : TempDirTest("tune-pending-") {
    m_trial.trial_id = 7;
    m_trial.number = 3;
  }
  fs::path path() const { return m_dir / k_pending_result_file; }
  search::FrozenTrial m_trial;
};

TEST_F(PendingResultTest, WhatIsKeptIsReadBackExactly) {
  FinalRecord record;
  record.state = TrialState::complete;
  record.values = {1.0384982461, 0.1};
  record.user_attrs = {{k_attr_wall_time, 1.0384982461}, {k_attr_exit_code, 0}};
  record.system_attrs = {{k_attr_containment, "keeper"}};
  record.intermediate_values = {{0, 0.5}, {10, 0.25}};
  ASSERT_TRUE(keep_pending_result(path(), m_trial, record));
  EXPECT_FALSE(fs::exists(path().string() + ".tmp"));  // renamed over, not left beside it
  auto read = read_pending_result(path(), m_trial);
  ASSERT_TRUE(read) << read.error();
  ASSERT_TRUE(*read);
  EXPECT_EQ((*read)->state, TrialState::complete);
  EXPECT_EQ((*read)->values, record.values);  // bit for bit: JSON round-trips doubles
  EXPECT_EQ((*read)->user_attrs, record.user_attrs);
  EXPECT_EQ((*read)->system_attrs, record.system_attrs);
  EXPECT_EQ((*read)->intermediate_values, record.intermediate_values);
}

TEST_F(PendingResultTest, NoFileIsNoResult) {
  auto read = read_pending_result(path(), m_trial);
  ASSERT_TRUE(read) << read.error();
  EXPECT_FALSE(*read);
}

TEST_F(PendingResultTest, AnotherTrialsOrAnUnfinishedOrABrokenFileIsRefused) {
  FinalRecord record;
  record.state = TrialState::fail;
  ASSERT_TRUE(keep_pending_result(path(), m_trial, record));
  search::FrozenTrial other = m_trial;
  other.trial_id = 8;
  auto read = read_pending_result(path(), other);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find(path().string()), std::string::npos) << read.error();
  EXPECT_NE(read.error().find("not trial 3 (id 8)"), std::string::npos) << read.error();

  const auto text = test_support::read_file(path());
  const auto running =
      std::string(text).replace(text.find("\"state_code\": 3"), 15, "\"state_code\": 0");
  test_support::write_file(path(), running);
  read = read_pending_result(path(), m_trial);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("no finished trial's state"), std::string::npos) << read.error();

  test_support::write_file(path(), text.substr(0, text.size() / 2));  // cut short
  read = read_pending_result(path(), m_trial);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("not a result file"), std::string::npos) << read.error();
}

}  // namespace
}  // namespace tune::tuner
