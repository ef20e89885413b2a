// CPU-profile overhead: what sampling each thread's instruction pointer (probes/cpu_profile.h,
// the software CPU clock at the monitor's rate) costs the job it watches. A fixed amount of work
// runs on W threads of this process, with the profile on and off in interleaved rounds, and the
// median wall time of each is compared (the peer: the same work unwatched). Two workloads:
//   compute: each thread runs a fixed count of 96x96 DGEMMs (OpenBLAS, one thread each);
//   switch:  pairs of threads hand a token back and forth through pipes (a context switch per
//            hand-off, what a data loader and a rank's main thread do), a little arithmetic each.
// The budget: at most 1% at the default rate.
//
//   bench_cpu_profile_overhead [--threads W] [--rounds K] [--hz F]
#include <cblas.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "probes/cpu_profile.h"

namespace {

using Clock = std::chrono::steady_clock;

void compute_work() {
  constexpr int n = 96;
  std::vector<double> a(n * n, 1.0), b(n * n, 0.5), c(n * n, 0.0);
  for (int i = 0; i < 6000; ++i)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n,
                0.0, c.data(), n);
}

// One side of a ping-pong: read the token, spin a little, pass it on.
void pong(int in, int out, int hops, bool first) {
  char token = 't';
  volatile double x = 1;
  if (first && ::write(out, &token, 1) != 1) std::abort();
  for (int i = 0; i < hops; ++i) {
    if (::read(in, &token, 1) != 1) std::abort();
    for (int k = 0; k < 2000; ++k) x = x * 1.0000001 + 1e-9;
    if ((i + 1 < hops || !first) && ::write(out, &token, 1) != 1) std::abort();
  }
}

// Runs `threads` threads of `kind` work to the end; the profile (when given) samples each of
// them from their start. Returns the wall seconds.
double run_round(const std::string& kind, int threads, tune::probes::CpuProfile* profile) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<pid_t> tids(static_cast<std::size_t>(threads));
  std::vector<std::array<int, 2>> pipes;
  if (kind == "switch")
    for (int i = 0; i < threads; ++i) {
      std::array<int, 2> p{};
      if (::pipe(p.data()) != 0) std::abort();
      pipes.push_back(p);
    }
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      tids[static_cast<std::size_t>(i)] = static_cast<pid_t>(::syscall(SYS_gettid));
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      if (kind == "compute") {
        compute_work();
      } else {
        // Threads 2j and 2j+1 form a pair: j's pipe carries to 2j+1, (j+1)'s back.
        const int pair = i / 2, side = i % 2;
        const int to_b = 2 * pair, to_a = 2 * pair + 1;
        if (side == 0)
          pong(pipes[static_cast<std::size_t>(to_a)][0], pipes[static_cast<std::size_t>(to_b)][1],
               20000, true);
        else
          pong(pipes[static_cast<std::size_t>(to_b)][0], pipes[static_cast<std::size_t>(to_a)][1],
               20000, false);
      }
    });
  while (ready.load() < threads) std::this_thread::yield();
  if (profile)
    for (pid_t tid : tids) profile->add_thread(::getpid(), tid);
  const auto start = Clock::now();
  go.store(true);
  for (auto& t : pool) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  if (profile) {
    profile->drain();
    profile->retain({});
  }
  for (auto& p : pipes) {
    ::close(p[0]);
    ::close(p[1]);
  }
  return wall;
}

double median(std::vector<double> v) {
  std::ranges::sort(v);
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 4, rounds = 9;
  double hz = 99;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (flag == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (flag == "--hz")
      hz = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_cpu_profile_overhead: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 2 || threads % 2 != 0 || rounds < 3 || hz <= 0) {
    std::fprintf(stderr, "bench_cpu_profile_overhead: --threads an even W >= 2, --rounds >= 3\n");
    return 2;
  }
  openblas_set_num_threads(1);
  tune::probes::CpuProfile::Options options;
  options.frequency_hz = hz;
  {
    tune::probes::CpuProfile probe(options);
    probe.add_thread(::getpid(), static_cast<pid_t>(::syscall(SYS_gettid)));
    if (probe.refused()) {
      std::printf("perf events refused here (%s): nothing to measure\n", probe.note().c_str());
      return 0;
    }
  }
  std::printf("%d threads, %d interleaved rounds, profile at %.0f Hz per CPU\n", threads, rounds,
              hz);
  for (const std::string kind : {"compute", "switch"}) {
    std::vector<double> off, on;
    run_round(kind, threads, nullptr);  // warm-up
    for (int r = 0; r < rounds; ++r) {
      off.push_back(run_round(kind, threads, nullptr));
      tune::probes::CpuProfile profile(options);
      on.push_back(run_round(kind, threads, &profile));
    }
    const double a = median(off), b = median(on);
    std::printf("%-8s unwatched %.3f s, profiled %.3f s (medians): overhead %+.1f%%\n",
                kind.c_str(), a, b, 100 * (b / a - 1));
  }
  return 0;
}
