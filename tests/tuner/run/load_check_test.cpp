// Load that is not the job's (tuner/run/load_check.h, tuner/launch/machine_load.h): the
// arithmetic on fake figures (the machine's busy time less the trial's tree, the keeper and tune),
// the limit on machines of 2 to 128 CPUs, the resolution that keeps a short trial from being
// judged by one clock tick, the keeper's line, and the wait for a quiet machine driven by fake
// samples (no sleeping: the sampler is the seam).
#include <gtest/gtest.h>

#include <deque>
#include <sstream>

#include "tuner/base/trial_attrs.h"
#include "tuner/launch/machine_load.h"
#include "tuner/run/load_check.h"

namespace tune::tuner {
namespace {

// /proc/stat of a 4-CPU machine: user nice system idle iowait irq softirq steal guest guest_nice.
const char* k_proc_stat =
    "cpu  1000 10 200 9000 50 5 5 300 0 0\n"
    "cpu0 400 0 100 2000 10 1 1 100 0 0\n"
    "cpu1 300 10 50 2500 10 2 2 100 0 0\n"
    "cpu2 200 0 30 2200 20 1 1 50 0 0\n"
    "cpu3 100 0 20 2300 10 1 1 50 0 0\n"
    "intr 123 4 5\nctxt 999\n";

TEST(MachineLoad, BusyTimeIsUserNiceSystemIrqSoftirqOfTheAllowedCpus) {
  // Every CPU allowed: the aggregate line (idle, iowait and steal left out), one line's rounding.
  const auto all = parse_busy_cpu(k_proc_stat, nullptr, 1e7);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->ns, (1000u + 10 + 200 + 5 + 5) * 10'000'000ull);
  EXPECT_EQ(all->lines, 1);
  const std::vector<int> every = {0, 1, 2, 3};
  EXPECT_EQ(parse_busy_cpu(k_proc_stat, &every, 1e7)->lines, 1);
  // A cpuset of two CPUs: their own lines, each rounded to a tick.
  const std::vector<int> two = {1, 3};
  const auto some = parse_busy_cpu(k_proc_stat, &two, 1e7);
  ASSERT_TRUE(some);
  EXPECT_EQ(some->ns, ((300u + 10 + 50 + 2 + 2) + (100u + 20 + 1 + 1)) * 10'000'000ull);
  EXPECT_EQ(some->lines, 2);
  EXPECT_FALSE(parse_busy_cpu("intr 1\n", nullptr, 1e7));
}

TEST(MachineLoad, TheKeepersLineCarriesItsFigures) {
  const std::string line =
      keeper_cpu_line(2'000'000'000, BusyCpu{5'000'000'000, 2}, 2'500'000'000, 100'000'000);
  ASSERT_EQ(line.rfind("cpu ", 0), 0u) << line;
  const auto cpu = parse_keeper_cpu_line(line.substr(4));
  ASSERT_TRUE(cpu);
  EXPECT_DOUBLE_EQ(cpu->window_s, 2);
  EXPECT_DOUBLE_EQ(cpu->busy_s, 5);
  EXPECT_EQ(cpu->busy_lines, 2);
  EXPECT_DOUBLE_EQ(cpu->tree_s, 2.5);
  EXPECT_DOUBLE_EQ(cpu->keeper_s, 0.1);
  EXPECT_GT(cpu->tick_s, 0);
  EXPECT_FALSE(parse_keeper_cpu_line("1 2"));
  EXPECT_FALSE(parse_keeper_cpu_line("0 1 1 1 1 1"));  // no window
}

TEST(MachineLoad, TheKeepersLineCarriesEachCpusBusyTime) {
  const BusyCpu before{3'000'000'000, 1, {{0, 1'000'000'000}, {1, 2'000'000'000}}};
  const BusyCpu after{8'000'000'000, 1, {{0, 2'000'000'000}, {1, 6'000'000'000}}};
  const auto used = busy_since(before, after);
  ASSERT_TRUE(used);
  EXPECT_EQ(used->ns, 5'000'000'000u);
  const auto line = keeper_cpu_line(2'000'000'000, *used, 1'000'000'000, 0);
  const auto cpu = parse_keeper_cpu_line(line.substr(4));
  ASSERT_TRUE(cpu) << line;
  ASSERT_EQ(cpu->per_cpu_busy_s.size(), 2u) << line;
  EXPECT_EQ(cpu->per_cpu_busy_s[1].first, 1);
  EXPECT_DOUBLE_EQ(cpu->per_cpu_busy_s[1].second, 4);
  // A counter that went back is no reading.
  EXPECT_FALSE(busy_since(after, before));
}

TrialCpu figures(double window, double busy, double tree, double keeper, double tune) {
  TrialCpu c;
  c.window_s = window;
  c.busy_s = busy;
  c.tree_s = tree;
  c.keeper_s = keeper;
  c.tune_s = tune;
  c.tick_s = 0.01;
  c.busy_lines = 1;
  return c;
}

TEST(MachineLoad, ExternalIsBusyLessTheTreeTheKeeperAndTuneOverTheWindow) {
  // 2 s: the machine busy 5 CPU-s, the trial's tree 2.5, the keeper 0.1, tune's monitor 0.4:
  // other work used 2 CPU-s, one CPU's worth.
  const auto load = external_load(figures(2, 5, 2.5, 0.1, 0.4));
  ASSERT_TRUE(load);
  EXPECT_NEAR(load->cpus, 1.0, 1e-9);
  EXPECT_NEAR(load->uncertainty, 2 * 0.01 / 2, 1e-12);  // a tick at each end, over 2 s
  // A quiet machine reads a little under the tree (ticks against exact accounting): none.
  EXPECT_DOUBLE_EQ(external_load(figures(2, 2.49, 2.5, 0, 0))->cpus, 0);
  EXPECT_FALSE(external_load(figures(0, 1, 0, 0, 0)));
}

TEST(LoadCheck, TheLimitIsTheLargerOfTheFloorAndTheShareOfTheRanksCpus) {
  const LoadSpec spec;  // 0.25 CPUs, 10%
  EXPECT_DOUBLE_EQ(load_limit(spec, 2), 0.25);  // 2 cores: the floor (10% would be 0.2)
  EXPECT_DOUBLE_EQ(load_limit(spec, 4), 0.4);
  EXPECT_DOUBLE_EQ(load_limit(spec, 128), 12.8);
  // The probes' verdict says which CPUs the ranks may use: 4 of the machine's 128.
  const nlohmann::json verdict = {
      {"pus", 4}, {"ranks", {{{"mean_cpu_pct", 48.0}}, {{"mean_cpu_pct", 52.0}}}}};
  const auto j = judge_load(spec, figures(10, 10 + 4 * 10, 40, 0, 0), verdict, 128);
  EXPECT_DOUBLE_EQ(j.usable_cpus, 4);
  EXPECT_DOUBLE_EQ(j.limit, 0.4);
  ASSERT_TRUE(j.rank_cpu_share);
  EXPECT_DOUBLE_EQ(*j.rank_cpu_share, 0.5);
  ASSERT_TRUE(j.external_cpus);
  EXPECT_NEAR(*j.external_cpus, 1.0, 1e-9);
  EXPECT_TRUE(j.under_load);
  // Without a verdict: the CPUs tune may use; 1 CPU of other work is within 10% of 128.
  const auto big = judge_load(spec, figures(10, 50, 40, 0, 0), nullptr, 128);
  EXPECT_FALSE(big.under_load);
  EXPECT_FALSE(big.rank_cpu_share);
  const auto small = judge_load(spec, figures(10, 50, 40, 0, 0), nullptr, 2);
  EXPECT_TRUE(small.under_load);
}

// Issue 48: on a big node a job bound to a few cores is judged by those cores alone, against a
// limit from them: other work on the rest of the machine is not its load.
TEST(LoadCheck, TheRanksCpusetsAloneAreJudged) {
  const LoadSpec spec;
  // 8 CPUs over 10 s: the ranks on 0-1 used 20 CPU-s (their tree), a build on 4-7 used 40.
  TrialCpu c = figures(10, 60, 20, 0, 0);
  for (int i = 0; i < 8; ++i) c.per_cpu_busy_s.emplace_back(i, i < 2 ? 10.0 : i >= 4 ? 10.0 : 0.0);
  const nlohmann::json verdict = {
      {"pus", 2},
      {"ranks",
       {{{"allowed_pus", "0"}, {"mean_cpu_pct", 99.0}}, {{"allowed_pus", "1"}, {"mean_cpu_pct", 99.0}}}}};
  const auto quiet = judge_load(spec, c, verdict, 8);
  EXPECT_EQ(quiet.cpus, (std::vector<int>{0, 1}));
  ASSERT_TRUE(quiet.external_cpus);
  EXPECT_NEAR(*quiet.external_cpus, 0, 1e-9);
  EXPECT_FALSE(quiet.under_load);
  // The same build on CPU 1 instead: 1 CPU of other work on the ranks' 2, and the mark says where.
  TrialCpu on = figures(10, 30, 20, 0, 0);
  for (int i = 0; i < 8; ++i) on.per_cpu_busy_s.emplace_back(i, i == 0 ? 10.0 : i == 1 ? 20.0 : 0);
  const auto loaded = judge_load(spec, on, verdict, 8);
  ASSERT_TRUE(loaded.external_cpus);
  EXPECT_NEAR(*loaded.external_cpus, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(loaded.limit, load_limit(spec, 2));
  EXPECT_TRUE(loaded.under_load);
  nlohmann::json attrs = nlohmann::json::object();
  add_load_attrs(loaded, attrs);
  EXPECT_EQ(attrs[k_attr_measured_under_load]["cpus"], "0-1");
  // Without the ranks' cpusets (no probes): every CPU tune may use, as before.
  EXPECT_TRUE(judge_load(spec, c, nullptr, 8).cpus.empty());
}

TEST(LoadCheck, AShortTrialIsNotJudgedByOneClockTick) {
  const LoadSpec spec;
  // 20 ms: 3 ticks busy against 2 ticks of tree reads as 0.5 CPUs, within a tick at each end.
  const auto j = judge_load(spec, figures(0.02, 0.03, 0.02, 0, 0), nullptr, 2);
  ASSERT_TRUE(j.external_cpus);
  EXPECT_NEAR(*j.external_cpus, 0.5, 1e-9);
  EXPECT_NEAR(j.uncertainty, 1.0, 1e-9);
  EXPECT_FALSE(j.under_load);
  // The same share over 2 s is other work.
  EXPECT_TRUE(judge_load(spec, figures(2, 3, 2, 0, 0), nullptr, 2).under_load);
}

TEST(LoadCheck, OffRecordsTheLoadAndNeverJudgesIt) {
  LoadSpec spec;
  spec.check = false;
  const auto j = judge_load(spec, figures(2, 6, 2, 0, 0), nullptr, 2);
  ASSERT_TRUE(j.external_cpus);
  EXPECT_NEAR(*j.external_cpus, 2.0, 1e-9);
  EXPECT_FALSE(j.under_load);
  nlohmann::json attrs = nlohmann::json::object();
  add_load_attrs(j, attrs);
  EXPECT_EQ(attrs[k_attr_external_cpu], 2.0);
  EXPECT_FALSE(attrs.contains(k_attr_measured_under_load));
  EXPECT_EQ(load_note(j), "");
  // No keeper (no figures): nothing measured, nothing judged, nothing stored.
  const auto none = judge_load(LoadSpec{}, std::nullopt, nullptr, 2);
  EXPECT_FALSE(none.external_cpus);
  EXPECT_FALSE(none.under_load);
}

TEST(LoadCheck, ATrialUnderLoadIsMarkedWithItsFigures) {
  const auto j = judge_load(LoadSpec{}, figures(2, 5.8, 2, 0, 0), nullptr, 2);
  ASSERT_TRUE(j.under_load);
  nlohmann::json attrs = nlohmann::json::object();
  add_load_attrs(j, attrs);
  ASSERT_TRUE(attrs.contains(k_attr_measured_under_load));
  EXPECT_EQ(attrs[k_attr_measured_under_load]["external_cpus"], 1.9);
  EXPECT_EQ(attrs[k_attr_measured_under_load]["limit"], 0.25);
  EXPECT_EQ(load_note(j), "measured under load: 1.9 CPUs of other work (limit 0.25)");
}

// Samples handed out in order; the wait's stop never fires.
struct FakeSamples {
  std::deque<std::optional<double>> left;
  int taken = 0;
  LoadSample sampler() {
    return [this]() -> std::optional<double> {
      ++taken;
      if (left.empty()) return 0.0;
      auto v = left.front();
      left.pop_front();
      return v;
    };
  }
};
const auto never = [] { return false; };

TEST(QuietWait, SaysOnceWhyItWaitsAndEndsAfterTwoQuietSteps) {
  FakeSamples s{{1.9, 1.8, 0.1, 0.5, 0.1, 0.05}};
  std::ostringstream out;
  const auto w = wait_until_quiet(s.sampler(), 0.5, 0.25, 60, 3, out, never);
  EXPECT_TRUE(w.quiet);
  EXPECT_TRUE(w.said);
  EXPECT_EQ(s.taken, 6);  // one quiet step between two busy ones is no quiet machine
  EXPECT_DOUBLE_EQ(w.waited_s, 3.0);
  EXPECT_EQ(out.str(),
            "tune: waiting for the machine to be quiet: 1.9 CPUs busy outside the study (trial 3 "
            "was measured under that load)\n");
}

TEST(QuietWait, AQuietMachineIsNotWaitedForAloud) {
  FakeSamples s{{0.1, 0.0}};
  std::ostringstream out;
  const auto w = wait_until_quiet(s.sampler(), 0.5, 0.25, 60, 3, out, never);
  EXPECT_TRUE(w.quiet);
  EXPECT_FALSE(w.said);
  EXPECT_EQ(out.str(), "");
}

TEST(QuietWait, StopsWhenItsBudgetIsSpentOrWhenStopped) {
  FakeSamples busy{std::deque<std::optional<double>>(100, 2.0)};
  std::ostringstream out;
  const auto w = wait_until_quiet(busy.sampler(), 0.5, 0.25, 2, 7, out, never);
  EXPECT_FALSE(w.quiet);
  EXPECT_EQ(busy.taken, 4);
  EXPECT_DOUBLE_EQ(*w.last_cpus, 2.0);
  // No budget: no sample, not quiet (the trial stays marked).
  FakeSamples none{{2.0}};
  EXPECT_FALSE(wait_until_quiet(none.sampler(), 0.5, 0.25, 0, 7, out, never).quiet);
  EXPECT_EQ(none.taken, 0);
  // Interrupted: ends at once.
  FakeSamples stopped{{2.0}};
  EXPECT_FALSE(wait_until_quiet(stopped.sampler(), 0.5, 0.25, 60, 7, out, [] { return true; }).quiet);
  EXPECT_EQ(stopped.taken, 0);
  // The load cannot be read: nothing to wait for.
  FakeSamples unread{{std::nullopt}};
  EXPECT_TRUE(wait_until_quiet(unread.sampler(), 0.5, 0.25, 60, 7, out, never).quiet);
}

TEST(MachineLoad, TheLiveReadingsAreThereOnLinux) {
  // What the keeper and the wait read: /proc/stat and this process's accounting.
  const auto busy = read_busy_cpu();
  ASSERT_TRUE(busy);
  EXPECT_GE(busy->lines, 1);
  volatile double x = 0;
  for (int i = 0; i < 2'000'000; ++i) x = x + i;  // some CPU time of its own
  EXPECT_GT(self_cpu_ns(), 0u);
  EXPECT_GT(clock_tick_ns(), 0);
}

}  // namespace
}  // namespace tune::tuner
