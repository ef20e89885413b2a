// Sampler overhead: the CPU cost of one TrialMonitor::sample_once() on a trial-like process
// tree (a launcher with R ranks of T threads each), against the practitioner's peer, one
// `ps -L` listing of the same tree (what a watch-loop around ps/top would pay per look).
// Prints medians over several rounds, the ratio, and the sampler's share of one core at the
// default 200 ms interval (the budget: under 1%).
//
//   bench_sampler_overhead [--ranks R] [--threads T] [--samples N] [--rounds K]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "probes/monitor.h"

extern char** environ;

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double children_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A rank: `threads - 1` extra threads that sleep until the process is killed.
[[noreturn]] void rank_body(int threads) {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i)
    pool.emplace_back([&] {
      std::unique_lock lock(m);
      cv.wait(lock, [] { return false; });
    });
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, threads = 8, samples = 200, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int v = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ranks"))
      ranks = v;
    else if (!std::strcmp(argv[i], "--threads"))
      threads = v;
    else if (!std::strcmp(argv[i], "--samples"))
      samples = v;
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = v;
    else {
      std::fprintf(stderr, "bench_sampler_overhead: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  // The tree: a launcher child (stands in for mpirun) with `ranks` children.
  const pid_t launcher = fork();
  if (launcher == 0) {
    for (int r = 0; r < ranks; ++r)
      if (fork() == 0) rank_body(threads);
    for (;;) pause();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the tree start (setup only)

  auto source = tune::probes::make_live_source();
  const std::string pid_text = std::to_string(launcher);
  std::vector<double> ours, full, peer;
  int tree_threads = 0;
  for (int k = 0; k < rounds; ++k) {
    // Light samples (stat only) and full ones (status files too), as at 200 ms the monitor does
    // four light ones for each full one.
    tune::probes::TrialMonitor monitor(*source, launcher);
    monitor.sample_once(/*full=*/true);
    double c0 = thread_cpu_s();
    for (int s = 0; s < samples; ++s) monitor.sample_once();
    ours.push_back((thread_cpu_s() - c0) / samples);
    c0 = thread_cpu_s();
    for (int s = 0; s < samples; ++s) monitor.sample_once(/*full=*/true);
    full.push_back((thread_cpu_s() - c0) / samples);
    tree_threads = 0;
    for (const auto& r : monitor.verdict().ranks) tree_threads += r.max_threads;

    // Peer: `ps -L` over the same processes (ps needs the pids; it cannot walk a tree).
    std::string pids = pid_text;
    for (pid_t p : source->process_tree(launcher))
      if (p != launcher) pids.append(",").append(std::to_string(p));
    std::vector<std::string> args = {"ps", "-L", "-o", "pid,tid,psr,stat,time,nivcsw", "-p", pids};
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    const int peer_runs = std::max(5, samples / 20);
    const double p0 = children_cpu_s();
    for (int s = 0; s < peer_runs; ++s) {
      pid_t pid = 0;
      if (posix_spawnp(&pid, "ps", &fa, nullptr, cargs.data(), environ) != 0) {
        std::fprintf(stderr, "bench_sampler_overhead: cannot run ps\n");
        return 1;
      }
      waitpid(pid, nullptr, 0);
    }
    peer.push_back((children_cpu_s() - p0) / peer_runs);
    posix_spawn_file_actions_destroy(&fa);
  }
  // The ranks first (pids this program forked), then the launcher that reaps nothing more.
  for (pid_t p : source->process_tree(launcher))
    if (p != launcher) kill(p, SIGKILL);
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);

  const double light = median(ours), heavy = median(full), p = median(peer);
  const double o = (4 * light + heavy) / 5;  // the mix at a 200 ms interval, 1 s status period
  std::printf("tree: 1 launcher + %d ranks x %d threads (%d threads seen in the tree)\n", ranks,
              threads, tree_threads);
  std::printf(
      "sample_once: %.1f us CPU light, %.1f us full, %.1f us in the 200 ms mix (median of %d "
      "rounds x %d samples)\n",
      light * 1e6, heavy * 1e6, o * 1e6, rounds, samples);
  std::printf("peer ps -L : %.1f us CPU per listing (median of %d rounds)\n", p * 1e6, rounds);
  std::printf("ratio peer/ours: %.1fx\n", o > 0 ? p / o : 0.0);
  const double interval = std::max(0.2, 200 * o);  // start() stretches it past 200x the cost
  std::printf(
      "sampler share of one core: %.3f%% at 200 ms, %.3f%% at the %.0f ms start() uses "
      "(budget 1%%)\n",
      100.0 * o / 0.2, 100.0 * o / interval, interval * 1e3);
  return 0;
}
