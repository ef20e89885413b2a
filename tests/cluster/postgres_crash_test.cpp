// Acknowledged means durable (issue 25): two `tune` workers share a study on a throwaway
// PostgreSQL server that is crashed (an immediate shutdown: WAL not yet handed to the OS is
// lost, as in a server killed mid-work) at random moments and started again, many times. A
// trial number handed to a worker must survive every crash, and no number may run twice: at the
// end the stored numbers are 0..n-1, every trial row has its trials/<n> folder and every folder
// its row, every COMPLETE trial holds the value its run printed, and the runs' own log (each
// appends "number pid") names every number once at most.
//
// The delays between crashes are random (seeded) on purpose: they are when the fault strikes,
// not a wait for anything; every wait here polls its condition with a deadline.
#include <gtest/gtest.h>

#include <signal.h>

#include <fmt/format.h>
#include <boost/process.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "tests/cluster/postgres_fixture.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;
using Clock = std::chrono::steady_clock;

using test_support::read_file;

// Each run appends "NUMBER PID" to the shared log before it writes its value.
constexpr const char* k_trial_script =
    R"(echo "$1 $$" >> "$2" && exec "$3" --out "$4" --value "$5")";

class PostgresCrash : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto missing = tune::testing::postgres_missing()) GTEST_SKIP() << *missing;
    // A server of its own: crashing the one other tests share would fail them.
    m_server = std::make_unique<tune::testing::PostgresServer>();
    ASSERT_TRUE(m_server->started()) << m_server->error();
    ASSERT_EQ(m_server->create_database("crash"), "");
    m_dir = fs::temp_directory_path() / ("tune-pg-crash-" + std::to_string(getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    for (auto& w : m_workers) {
      if (w.running()) w.terminate();  // only when an assertion cut the test short
    }
    if (m_server) {  // stopped, then its folder (the data directory, tens of MB) removed
      const auto server_dir = m_server->dir();
      m_server.reset();
      std::error_code ec;
      fs::remove_all(server_dir, ec);
    }
    if (!HasFailure() && !m_dir.empty()) fs::remove_all(m_dir);
  }
  std::string url() const { return m_server->url("crash"); }

  std::unique_ptr<tune::testing::PostgresServer> m_server;
  fs::path m_dir;
  std::vector<bp::child> m_workers;
};

TEST_F(PostgresCrash, ServerCrashesLoseNoCreatedTrialAndRepeatNoNumber) {
  const auto log = m_dir / "runs.log";
  const auto out = m_dir / "out";
  const auto study = m_dir / "study.yaml";
  // retry_for well above a restart's few hundred milliseconds: the workers ride out each crash.
  std::ofstream(study) << "name: crash\noutput: " << out.string() << "\nstorage: " << url()
                       << "?retry_for=30s\ncommand: ['/bin/sh', '-c', '" << k_trial_script
                       << "', sh, '{trial_number}', '" << log.string()
                       << "', '" FAKE_TRIAL
                          "', '{trial_dir}', '{x}']\n"
                          "sampler: {type: random, seed: 1}\n"
                          "params:\n  x: {type: float, low: 1, high: 10}\n";
  constexpr auto k_crashing = std::chrono::seconds(36);  // then the workers finish in peace
  constexpr int k_max_crashes = 40;
  for (int w = 0; w < 2; ++w) {
    m_workers.emplace_back(
        TUNE_BIN,
        bp::args({"--trials", "100000", "--time-limit", "40s", "--quiet", study.string()}),
        bp::std_out > bp::null,
        bp::std_err > (m_dir / ("w" + std::to_string(w) + ".err")).string());
  }
  const auto begin = Clock::now();
  std::mt19937 rng(25);
  std::uniform_int_distribution<int> delay_ms(20, 700);
  int crashes = 0;
  while (crashes < k_max_crashes && Clock::now() - begin < k_crashing &&
         std::ranges::all_of(m_workers, [](bp::child& w) { return w.running(); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));  // when it strikes
    ASSERT_TRUE(m_server->crash()) << "pg_ctl stop -m immediate failed";
    ++crashes;
    ASSERT_TRUE(m_server->restart()) << "the server did not come back after crash " << crashes;
  }
  // Each worker stops starting trials at its --time-limit; a stuck one fails the test.
  const auto give_up = Clock::now() + std::chrono::seconds(90);
  for (auto& w : m_workers) {
    while (w.running() && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_FALSE(w.running()) << "a worker did not finish within 90 s of its time limit";
  }
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(m_workers[w].exit_code(), 0)
        << "worker " << w << ": " << read_file(m_dir / ("w" + std::to_string(w) + ".err"));
  }
  EXPECT_GE(crashes, 20) << "too few crashes to mean much";

  auto storage = open_storage(url());
  ASSERT_TRUE(storage) << storage.error();
  auto info = (*storage)->get_study("crash");
  ASSERT_TRUE(info) << info.error();
  auto trials = (*storage)->get_all_trials(info->study_id);
  ASSERT_TRUE(trials) << trials.error();
  ASSERT_FALSE(trials->empty());

  // What the runs themselves say: which numbers ran, how often.
  std::map<int, int> runs;
  {
    std::ifstream in(log);
    int number = -1;
    long pid = 0;
    while (in >> number >> pid) ++runs[number];
  }
  for (const auto& [number, count] : runs) {
    EXPECT_EQ(count, 1) << "trial number " << number << " ran " << count << " times";
  }

  std::set<int> numbers;
  int complete = 0, failed = 0;
  for (const auto& t : *trials) {
    EXPECT_TRUE(numbers.insert(t.number).second) << "number " << t.number << " stored twice";
    EXPECT_TRUE(fs::is_directory(out / "trials" / std::to_string(t.number)))
        << "trial " << t.number << " has no folder";
    EXPECT_TRUE(t.state == TrialState::complete || t.state == TrialState::fail)
        << "trial " << t.number << " ended " << search::to_string(t.state);
    if (t.state == TrialState::complete) {
      ++complete;
      ASSERT_TRUE(t.value.has_value()) << "COMPLETE trial " << t.number << " has no value";
      ASSERT_TRUE(t.params.contains("x")) << "COMPLETE trial " << t.number << " has no param x";
      EXPECT_NEAR(*t.value, t.params.at("x"), 1e-5) << "trial " << t.number;
      EXPECT_EQ(runs[t.number], 1) << "COMPLETE trial " << t.number << " is not in the runs' log";
    } else if (t.state == TrialState::fail) {  // the last ones, cut by --time-limit
      ++failed;
      std::cout << "trial " << t.number
                << " FAIL: " << t.system_attrs.value(k_attr_fail_reason, std::string()) << '\n';
    }
  }
  EXPECT_EQ(*numbers.begin(), 0);
  EXPECT_EQ(*numbers.rbegin(), static_cast<int>(numbers.size()) - 1) << "numbers have gaps";
  for (const auto& e : fs::directory_iterator(out / "trials")) {
    const auto name = e.path().filename().string();
    const bool number = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    EXPECT_TRUE(number && numbers.contains(std::stoi(name)))
        << "folder trials/" << name << " has no trial row (a number handed out twice?)";
  }
  for (const auto& [number, count] : runs) {
    EXPECT_TRUE(numbers.contains(number)) << "trial number " << number << " ran but has no row";
  }
  std::cout << fmt::format("{} crashes in {:.0f} s; {} trials: {} COMPLETE, {} FAIL\n", crashes,
                           std::chrono::duration<double>(Clock::now() - begin).count(),
                           trials->size(), complete, failed);
}

}  // namespace
}  // namespace tune::tuner
