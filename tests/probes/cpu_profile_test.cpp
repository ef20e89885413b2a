// The CPU profile: the attribution of instruction pointers to libraries on invented maps (pure),
// the verdict's reader against its writer, and one live run that really samples a program
// spinning in OpenBLAS (skipped, with the reason, where perf_event_open is not permitted).
#include "probes/cpu_profile.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "probes/monitor.h"
#include "tests/common/fake_source.h"

extern char** environ;

namespace tune::probes {
namespace {

TEST(CpuProfileNames, LibrariesAreNamedByFileWithoutVersion) {
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"), "libgomp");
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so"),
            "libopenblas");
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/libopenblas.so.0"), "libopenblas");
  EXPECT_EQ(library_name("/usr/bin/python3.11"), "python3.11");
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"), "libpython3.11");
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.5"), "libmpi");
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"), "libstdc++");
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), "ld-linux-x86-64");
  EXPECT_EQ(library_name("/site-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu"
                         ".so"),
            "_multiarray_umath");
  EXPECT_EQ(library_name("/opt/torch/lib/libtorch_cpu.so"), "libtorch_cpu");
  EXPECT_EQ(library_name("/home/u/train (deleted)"), "train");
  EXPECT_EQ(library_name(""), "[anon]");
  EXPECT_EQ(library_name("[heap]"), "[anon]");
  EXPECT_EQ(library_name("/memfd:jit (deleted)"), "[anon]");
  EXPECT_EQ(library_name("[vdso]"), "[vdso]");
}

constexpr const char* k_maps =
    "55d000000000-55d000001000 r--p 00000000 08:01 11 /usr/bin/python3.11\n"
    "55d000001000-55d000300000 r-xp 00001000 08:01 11 /usr/bin/python3.11\n"
    "7f0000000000-7f0000100000 r-xp 00000000 00:00 0 \n"
    "7f2000000000-7f2000200000 r-xp 00000000 08:01 12 /usr/lib/libopenblasp-r0.3.21.so\n"
    "7f2000200000-7f2000400000 rw-p 00200000 08:01 12 /usr/lib/libopenblasp-r0.3.21.so\n"
    "7f1000000000-7f1000050000 r-xp 00000000 08:01 13 /usr/lib/libgomp.so.1.0.0\n"
    "garbage line\n"
    "7ffc00000000-7ffc00001000 r-xp 00000000 00:00 0 [vdso]";

TEST(CpuProfileMaps, OnlyExecutableMappingsSortedByAddress) {
  const auto maps = parse_code_mappings(k_maps);
  ASSERT_EQ(maps.size(), 5u);
  EXPECT_EQ(maps[0].library, "python3.11");
  EXPECT_EQ(maps[1].library, "[anon]");
  EXPECT_EQ(maps[2].library, "libgomp");
  EXPECT_EQ(maps[3].library, "libopenblas");
  EXPECT_EQ(maps[4].library, "[vdso]");
  EXPECT_EQ(maps[3].start, 0x7f2000000000u);
  EXPECT_EQ(maps[3].end, 0x7f2000200000u);
}

TEST(CpuProfileMaps, AnAddressFallsInTheMappingThatHoldsItOrNone) {
  const auto maps = parse_code_mappings(k_maps);
  EXPECT_EQ(mapping_of(maps, 0x7f2000000000)->library, "libopenblas");  // first byte
  EXPECT_EQ(mapping_of(maps, 0x7f20001fffff)->library, "libopenblas");  // last byte
  EXPECT_EQ(mapping_of(maps, 0x7f2000200000), nullptr);                 // data, not code
  EXPECT_EQ(mapping_of(maps, 0x1000), nullptr);                         // below every mapping
  EXPECT_EQ(mapping_of(maps, 0x7f1000010000)->library, "libgomp");
  EXPECT_EQ(mapping_of({}, 0x1000), nullptr);
}

TEST(CpuProfileAttribution, SamplesCountForTheirProcesssLibraries) {
  const std::map<pid_t, std::vector<CodeMapping>> maps = {{10, parse_code_mappings(k_maps)}};
  const std::vector<IpSample> samples = {{10, 10, 0x7f2000000100}, {10, 11, 0x7f2000000200},
                                         {10, 12, 0x7f2000100000}, {10, 10, 0x55d000002000},
                                         {10, 10, 0x7f0000000010}, {10, 10, 0x7f2000300000},
                                         {99, 99, 0x7f2000000100}};
  const auto counts = attribute_samples(samples, maps);
  EXPECT_EQ(counts, (std::map<std::string, long>{
                        {"libopenblas", 3}, {"python3.11", 1}, {"[anon]", 1}, {"[unknown]", 2}}));
}

TEST(CpuProfileAttribution, TopLibrariesThenTheRestAsOther) {
  const std::map<std::string, long> counts = {{"libopenblas", 71}, {"libgomp", 12},
                                              {"python3.11", 9},   {"libmpi", 5},
                                              {"libc", 2},         {"[anon]", 1}};
  const auto shares = top_shares(counts, 4);
  ASSERT_EQ(shares.size(), 5u);
  EXPECT_EQ(shares[0].library, "libopenblas");
  EXPECT_DOUBLE_EQ(shares[0].share, 0.71);
  EXPECT_EQ(shares[4].library, "other");
  EXPECT_EQ(shares[4].samples, 3);
  EXPECT_EQ(shares_text(shares),
            "71% libopenblas, 12% libgomp, 9% python3.11, 5% libmpi, 3% other");
  // One left over is named, not called "other".
  const auto five = top_shares({{"a", 5}, {"b", 4}, {"c", 3}, {"d", 2}, {"e", 1}}, 4);
  ASSERT_EQ(five.size(), 5u);
  EXPECT_EQ(five[4].library, "e");
  EXPECT_TRUE(top_shares({}, 4).empty());
}

Verdict profiled_verdict() {
  Verdict v;
  v.cpu_profiled = true;
  v.cpu_time_hz = 99;
  RankVerdict r0;
  r0.rank = 0;
  r0.cpu_libraries = top_shares({{"libopenblas", 80}, {"libgomp", 20}}, 4);
  r0.cpu_samples = 100;
  RankVerdict r1;
  r1.rank = 1;
  r1.cpu_libraries = top_shares({{"python3.11", 3}, {"libc", 1}}, 4);
  r1.cpu_samples = 4;
  v.ranks = {r0, r1};
  return v;
}

TEST(CpuProfileVerdict, TheReaderReadsWhatTheVerdictWrote) {
  const auto j = profiled_verdict().to_json();
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["cpu_time"]["samples"], 104);
  EXPECT_EQ(j["ranks"][0]["cpu_libraries"][0]["library"], "libopenblas");
  const CpuTimeRead read = read_cpu_time(j);
  ASSERT_TRUE(read.present);
  ASSERT_EQ(read.ranks.size(), 2u);
  EXPECT_EQ(read.ranks[1].samples, 4);
  EXPECT_EQ(read.line(),
            "CPU time per library: rank 0: 80% libopenblas, 20% libgomp; rank 1: 75% python3.11, "
            "25% libc");
  EXPECT_EQ(profiled_verdict().ranks[0].cpu_time_text(), "rank 0: 80% libopenblas, 20% libgomp");
}

TEST(CpuProfileVerdict, NotSampledSaysWhyAndOlderVerdictsSayNothing) {
  Verdict v;
  v.cpu_profiled = true;
  v.cpu_time_note =
      "not sampled (perf_event_open: Permission denied; /proc/sys/kernel/perf_event_paranoid is 3)";
  v.ranks.push_back(RankVerdict{});
  EXPECT_EQ(read_cpu_time(v.to_json()).line(),
            "CPU time per library: not sampled (perf_event_open: Permission denied; "
            "/proc/sys/kernel/perf_event_paranoid is 3)");
  v.cpu_profiled = false;
  EXPECT_FALSE(v.to_json().contains("cpu_time"));
  EXPECT_EQ(read_cpu_time(v.to_json()).line(), "");
  EXPECT_EQ(read_cpu_time(nlohmann::json::parse(R"({"schema_version": 2, "ranks": []})")).line(),
            "");
}

// An invented tree's pids name no real process (or another one): nothing is sampled, and the
// verdict says it had no samples.
TEST(CpuProfileVerdict, AFakeSourcesProcessesAreNotSampled) {
  FakeSource src{*read_synthetic_topology("pack:1 core:2 pu:1")};
  src.add_process(1, 0, "not-init", {0, 1});
  src.run_thread(1, 0, 'R', 0);
  TrialMonitor monitor(src, 1);
  for (int i = 0; i < 5; ++i) {
    src.advance(0.2);
    src.run_thread(1, 0.2, 'R', 0);
    monitor.sample_once();
  }
  const Verdict v = monitor.verdict();
  EXPECT_TRUE(v.cpu_profiled);
  EXPECT_EQ(v.cpu_time, "CPU time per library: no samples");
  MonitorOptions off;
  off.cpu_profile = false;
  TrialMonitor quiet(src, 1, off);
  quiet.sample_once();
  EXPECT_EQ(quiet.verdict().cpu_time, "");
}

// The live runs: a program spending its time in cblas_dgemm.
class CpuProfileLive : public ::testing::Test {
 protected:
  void SetUp() override {
    CpuProfile probe;
    if (!probe.add_thread(::getpid(), ::getpid()) && probe.refused())
      GTEST_SKIP() << "perf events not permitted here: " << probe.note();
  }
  void TearDown() override {
    if (m_child > 0) {
      ::kill(m_child, SIGKILL);
      ::waitpid(m_child, nullptr, 0);
    }
  }
  pid_t spawn(int threads, double seconds) {
    const std::string t = std::to_string(threads), s = std::to_string(seconds);
    const char* argv[] = {PROBES_DGEMM, "--threads", t.c_str(), "--seconds", s.c_str(), nullptr};
    EXPECT_EQ(::posix_spawn(&m_child, PROBES_DGEMM, nullptr, nullptr,
                            const_cast<char* const*>(argv), environ),
              0);
    return m_child;
  }
  pid_t m_child = -1;
};

TEST_F(CpuProfileLive, ASpinningProgramsTimeIsInItsLibrary) {
  const pid_t child = spawn(2, 20);
  CpuProfile profile;
  std::map<std::string, long> counts;
  long total = 0;
  // Threads are added as they appear; bounded: 200 samples, or 10 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (total < 200 && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(child) + "/task", ec))
      profile.add_thread(child, std::stoi(task.path().filename()));
    for (const auto& [owner, libs] : profile.drain()) {
      EXPECT_EQ(owner, child);
      for (const auto& [lib, n] : libs) {
        counts[lib] += n;
        total += n;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the polling period
  }
  ASSERT_GE(total, 200) << "samples within 10 s; " << profile.note();
  const auto shares = top_shares(counts, 4);
  EXPECT_EQ(shares.front().library, "libopenblas") << shares_text(shares);
  EXPECT_GT(shares.front().share, 0.5) << shares_text(shares);
  EXPECT_GE(profile.open_events(), 1u);  // one event per online CPU
  EXPECT_GE(profile.threads(), 2u);      // the two working threads, and OpenBLAS's idle pool
  profile.close();
  EXPECT_EQ(profile.open_events(), 0u);
}

TEST_F(CpuProfileLive, TheBoundOnEventsIsKeptAndSaid) {
  const auto cpus = static_cast<std::size_t>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (cpus < 2) GTEST_SKIP() << "one CPU: no bound below it to keep";
  const pid_t child = spawn(2, 20);
  CpuProfile::Options options;
  options.max_events = 1;
  CpuProfile profile(options);
  ASSERT_TRUE(profile.add_thread(child, child));
  EXPECT_EQ(profile.open_events(), 1u);
  EXPECT_TRUE(profile.limit_hit());
  EXPECT_EQ(profile.note(), "sampled 1 of " + std::to_string(cpus) + " CPUs, the rest not");
  // A thread gone from the tree is forgotten; the CPUs' events stay.
  profile.retain({});
  EXPECT_EQ(profile.threads(), 0u);
  EXPECT_EQ(profile.open_events(), 1u);
}

// Another process on the same CPUs is not counted: only the threads added (and their process's).
TEST_F(CpuProfileLive, OnlyTheProcessesAddedCount) {
  const pid_t child = spawn(2, 20);
  CpuProfile profile;
  ASSERT_TRUE(profile.add_thread(::getpid(), ::getpid()));  // this test's process, mostly asleep
  long theirs = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& [owner, libs] : profile.drain()) {
      EXPECT_EQ(owner, ::getpid());
      for (const auto& [lib, n] : libs) theirs += lib == "libopenblas" ? n : 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the polling period
  }
  EXPECT_EQ(theirs, 0) << "the spinning child's samples were counted for this process";
  ASSERT_GT(child, 0);
}

// The monitor itself, on the live source: the rank's CPU time over the measured window, by
// library, in the verdict.
TEST_F(CpuProfileLive, TheMonitorsVerdictNamesWhereTheTimeWent) {
  const pid_t child = spawn(1, 1.5);
  auto source = make_live_source();
  TrialMonitor monitor(*source, child);
  monitor.start();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  m_child = -1;
  monitor.stop();
  const Verdict v = monitor.verdict();
  ASSERT_EQ(v.ranks.size(), 1u);
  ASSERT_FALSE(v.ranks[0].cpu_libraries.empty()) << v.cpu_time;
  EXPECT_EQ(v.ranks[0].cpu_libraries.front().library, "libopenblas") << v.cpu_time;
  EXPECT_GT(v.ranks[0].cpu_samples, 30) << v.cpu_time;  // about 1 s of window at 99 Hz
  EXPECT_TRUE(v.cpu_time.starts_with("CPU time per library: rank 0: ")) << v.cpu_time;
  EXPECT_EQ(read_cpu_time(v.to_json()).line(), v.cpu_time);
}

}  // namespace
}  // namespace tune::probes
