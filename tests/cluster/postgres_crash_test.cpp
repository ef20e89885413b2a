// Acknowledged means durable (issue 25): two `tune` workers share a study on a throwaway
// PostgreSQL server that is crashed (an immediate shutdown: WAL not yet handed to the OS is
// lost, as in a server killed mid-work) at random moments and started again, many times. A
// trial number handed to a worker must survive every crash, and no number may run twice: at the
// end the stored numbers are 0..n-1, every trial row has its trials/<n> folder and every folder
// its row, every COMPLETE trial holds the value its run printed, and the runs' own log (each
// appends "number pid") names every number once at most. The same holds with PgBouncer in
// transaction pooling mode between the workers and the crashing server (issue 27), and a
// worker started while the server is down waits for it (its first connection retried within
// retry_for) instead of failing.
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

#include "tests/cluster/pgbouncer_fixture.h"
#include "tests/cluster/postgres_fixture.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/storage_url.h"

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

// A study file for the fake trial on `storage`, each run appending "NUMBER PID" to `log`.
void write_study(const fs::path& study, const std::string& name, const std::string& storage,
                 const fs::path& out, const fs::path& log) {
  std::ofstream(study) << "name: " << name << "\noutput: " << out.string()
                       << "\nstorage: " << storage << "\ncommand: ['/bin/sh', '-c', '"
                       << k_trial_script << "', sh, '{trial_number}', '" << log.string()
                       << "', '" FAKE_TRIAL
                          "', '{trial_dir}', '{x}']\n"
                          "sampler: {type: random, seed: 1}\n"
                          "params:\n  x: {type: float, low: 1, high: 10}\n";
}

// What the study holds after its workers ended, against what its runs say: numbers 0..n-1 once
// each, each with its folder and each folder with its row, every run's number stored once,
// every COMPLETE trial with the value its run printed, none left RUNNING or WAITING.
struct StudyCounts {
  std::size_t trials = 0;
  int complete = 0, failed = 0;
};
StudyCounts check_study(const std::string& url, const std::string& name, const fs::path& out,
                        const fs::path& log) {
  StudyCounts counts;
  auto storage = open_storage(url);
  EXPECT_TRUE(storage) << storage.error();
  if (!storage) return counts;
  auto info = (*storage)->get_study(name);
  EXPECT_TRUE(info) << info.error();
  if (!info) return counts;
  auto trials = (*storage)->get_all_trials(info->study_id);
  EXPECT_TRUE(trials) << trials.error();
  if (!trials || trials->empty()) {
    ADD_FAILURE() << "no trial stored";
    return counts;
  }
  counts.trials = trials->size();

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
  for (const auto& t : *trials) {
    EXPECT_TRUE(numbers.insert(t.number).second) << "number " << t.number << " stored twice";
    EXPECT_TRUE(fs::is_directory(out / "trials" / std::to_string(t.number)))
        << "trial " << t.number << " has no folder";
    EXPECT_TRUE(t.state == TrialState::complete || t.state == TrialState::fail)
        << "trial " << t.number << " ended " << search::to_string(t.state);
    if (t.state == TrialState::complete) {
      ++counts.complete;
      EXPECT_TRUE(t.value.has_value()) << "COMPLETE trial " << t.number << " has no value";
      EXPECT_TRUE(t.params.contains("x")) << "COMPLETE trial " << t.number << " has no param x";
      if (t.value && t.params.contains("x")) {
        EXPECT_NEAR(*t.value, t.params.at("x"), 1e-5) << "trial " << t.number;
      }
      EXPECT_EQ(runs[t.number], 1) << "COMPLETE trial " << t.number << " is not in the runs' log";
    } else if (t.state == TrialState::fail) {  // the last ones, cut by --time-limit
      ++counts.failed;
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
  return counts;
}

// Crashes the server at random moments (seeded) and starts it again, until `max_crashes`,
// `crashing` has passed or a worker ended; the number of crashes.
int crash_repeatedly(tune::testing::PostgresServer& server, std::vector<bp::child>& workers,
                     Clock::duration crashing, int max_crashes, unsigned seed) {
  const auto begin = Clock::now();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(20, 700);
  int crashes = 0;
  while (crashes < max_crashes && Clock::now() - begin < crashing &&
         std::ranges::all_of(workers, [](bp::child& w) { return w.running(); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));  // when it strikes
    EXPECT_TRUE(server.crash()) << "pg_ctl stop -m immediate failed";
    ++crashes;
    if (!server.restart()) {
      ADD_FAILURE() << "the server did not come back after crash " << crashes;
      break;
    }
  }
  return crashes;
}

// Each worker stops starting trials at its --time-limit; a stuck one fails the test.
void expect_workers_end(std::vector<bp::child>& workers, const fs::path& dir) {
  const auto give_up = Clock::now() + std::chrono::seconds(90);
  for (auto& w : workers) {
    while (w.running() && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_FALSE(w.running()) << "a worker did not finish within 90 s of its time limit";
  }
  for (std::size_t w = 0; w < workers.size(); ++w) {
    EXPECT_EQ(workers[w].exit_code(), 0)
        << "worker " << w << ": " << read_file(dir / ("w" + std::to_string(w) + ".err"));
  }
}

TEST_F(PostgresCrash, ServerCrashesLoseNoCreatedTrialAndRepeatNoNumber) {
  const auto log = m_dir / "runs.log";
  const auto out = m_dir / "out";
  const auto study = m_dir / "study.yaml";
  // retry_for well above a restart's few hundred milliseconds: the workers ride out each crash.
  write_study(study, "crash", url() + "?retry_for=30s", out, log);
  for (int w = 0; w < 2; ++w) {
    m_workers.emplace_back(
        TUNE_BIN,
        bp::args({"--trials", "100000", "--time-limit", "40s", "--quiet", study.string()}),
        bp::std_out > bp::null,
        bp::std_err > (m_dir / ("w" + std::to_string(w) + ".err")).string());
  }
  const auto begin = Clock::now();
  // Then the workers finish in peace.
  const int crashes = crash_repeatedly(*m_server, m_workers, std::chrono::seconds(36), 40, 25);
  expect_workers_end(m_workers, m_dir);
  EXPECT_GE(crashes, 20) << "too few crashes to mean much";
  const auto counts = check_study(url(), "crash", out, log);
  std::cout << fmt::format("{} crashes in {:.0f} s; {} trials: {} COMPLETE, {} FAIL\n", crashes,
                           std::chrono::duration<double>(Clock::now() - begin).count(),
                           counts.trials, counts.complete, counts.failed);
}

// The same behind PgBouncer in transaction pooling mode (issue 27): four workers share two server
// connections, which the pooler loses at each crash and opens again once the server is back.
TEST_F(PostgresCrash, ServerCrashesBehindPgBouncerLoseNoTrialAndRepeatNoNumber) {
  if (auto missing = tune::testing::pgbouncer_missing()) GTEST_SKIP() << *missing;
  tune::testing::PgBouncer bouncer(*m_server, 2);
  ASSERT_TRUE(bouncer.started()) << bouncer.error();
  const auto log = m_dir / "runs.log";
  const auto out = m_dir / "out";
  const auto study = m_dir / "study.yaml";
  write_study(study, "pooled", bouncer.url("crash") + "?retry_for=30s", out, log);
  for (int w = 0; w < 4; ++w) {
    m_workers.emplace_back(
        TUNE_BIN,
        bp::args({"--trials", "100000", "--time-limit", "20s", "--quiet", study.string()}),
        bp::std_out > bp::null,
        bp::std_err > (m_dir / ("w" + std::to_string(w) + ".err")).string());
  }
  const int crashes = crash_repeatedly(*m_server, m_workers, std::chrono::seconds(16), 12, 27);
  expect_workers_end(m_workers, m_dir);
  EXPECT_GE(crashes, 6) << "too few crashes to mean much";
  const auto counts = check_study(url(), "pooled", out, log);
  std::cout << fmt::format("behind PgBouncer: {} crashes; {} trials: {} COMPLETE, {} FAIL\n",
                           crashes, counts.trials, counts.complete, counts.failed);
}

// A worker started while the server is down (a restart under way, or not yet up) waits for it
// within retry_for instead of failing at its first connection; directly and through PgBouncer,
// which accepts the worker at once and cannot reach the server either.
TEST_F(PostgresCrash, AWorkerStartedWhileTheServerIsDownWaitsForIt) {
  for (const bool pooled : {false, true}) {
    SCOPED_TRACE(pooled ? "through PgBouncer" : "directly");
    if (pooled && tune::testing::pgbouncer_missing()) continue;
    std::unique_ptr<tune::testing::PgBouncer> bouncer;
    if (pooled) {
      bouncer = std::make_unique<tune::testing::PgBouncer>(*m_server, 2);
      ASSERT_TRUE(bouncer->started()) << bouncer->error();
    }
    const std::string name = pooled ? "late_pooled" : "late";
    const auto dir = m_dir / name;
    fs::create_directories(dir);
    const auto log = dir / "runs.log";
    const auto study = dir / "study.yaml";
    write_study(study, name, (pooled ? bouncer->url("crash") : url()) + "?retry_for=30s",
                dir / "out", log);
    ASSERT_TRUE(m_server->crash());
    std::vector<bp::child> workers;
    workers.emplace_back(TUNE_BIN, bp::args({"--trials", "3", "--quiet", study.string()}),
                         bp::std_out > bp::null, bp::std_err > (dir / "w0.err").string());
    // The outage the worker starts in: a second and a half, then the server is back.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_TRUE(workers[0].running())
        << "the worker gave up at once: " << read_file(dir / "w0.err");
    ASSERT_TRUE(m_server->restart());
    expect_workers_end(workers, dir);
    const auto counts = check_study(url(), name, dir / "out", log);
    EXPECT_EQ(counts.complete, 3);
  }
}

}  // namespace
}  // namespace tune::tuner
