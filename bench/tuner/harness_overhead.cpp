// Harness overhead: what `tune` adds per trial (sample + launch + parse + store) over running
// the same command by hand. Runs the trivial trial N times directly (posix_spawn + waitpid, a
// fresh output folder each time, as a user's loop would), then `tune --trials N` on a study with
// the same command, R repetitions each, and prints medians and the per-trial difference.
//
//   harness_overhead [--trials N] [--reps R] [--sampler tpe|random] [--probes on|off]
//                    [--storage URL]   (e.g. postgresql://...; bench/cluster/scale.py runs both)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int spawn_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) return -1;
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 200, reps = 5;
  std::string sampler = "tpe", storage;  // storage: a URL, or "" for the default SQLite file
  std::string probes = "on";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--trials"))
      trials = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps"))
      reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--sampler"))
      sampler = argv[i + 1];
    else if (!std::strcmp(argv[i], "--probes"))
      probes = argv[i + 1];
    else if (!std::strcmp(argv[i], "--storage"))
      storage = argv[i + 1];
  }
  const fs::path work =
      fs::temp_directory_path() / ("tune-bench-overhead-" + std::to_string(getpid()));
  fs::create_directories(work);
  std::vector<double> direct, tuned;
  for (int r = 0; r < reps; ++r) {
    // By hand: a loop that makes a folder and runs the command, like a shell script would.
    const auto t0 = Clock::now();
    for (int i = 0; i < trials; ++i) {
      const auto dir = work / "direct" / std::to_string(i);
      fs::create_directories(dir);
      if (spawn_wait({TRIVIAL_TRIAL, "--out", dir.string(), "--value", std::to_string(i % 7)}) !=
          0) {
        std::fprintf(stderr, "harness_overhead: the trivial trial failed\n");
        return 1;
      }
    }
    direct.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    fs::remove_all(work / "direct");

    const auto study = work / "study.yaml";
    // On a database server the study outlives the run: each repetition gets its own.
    std::ofstream(study) << "name: overhead" << (storage.empty() ? "" : std::to_string(r))
                         << (storage.empty() ? "" : "\nstorage: " + storage)
                         << "\noutput: " << (work / "out").string()
                         << "\ncommand: ['" TRIVIAL_TRIAL
                            "', --out, '{trial_dir}', --value, '{x}']\n"
                         << "sampler: {type: " << sampler << ", seed: 1}\n"
                         << "probes: {enabled: " << (probes == "on" ? "true" : "false") << "}\n"
                         << "params:\n  x: {type: float, low: 0, high: 10}\n"
                            "  threads: {type: int, low: 1, high: 16}\n"
                            "  bind: [none, core, socket]\n";
    const auto t1 = Clock::now();
    if (spawn_wait({TUNE_BIN, "--quiet", "--trials", std::to_string(trials), study.string()}) !=
        0) {
      std::fprintf(stderr, "harness_overhead: tune failed\n");
      return 1;
    }
    tuned.push_back(std::chrono::duration<double>(Clock::now() - t1).count());
    fs::remove_all(work / "out");
  }
  fs::remove_all(work);
  const double d = median(direct) / trials * 1e3, t = median(tuned) / trials * 1e3;
  std::printf("harness overhead, %d trials x %d repetitions (medians), sampler %s, probes %s\n",
              trials, reps, sampler.c_str(), probes.c_str());
  std::printf("  %-34s %9.3f ms/trial\n", "command by hand (spawn + wait):", d);
  std::printf("  %-34s %9.3f ms/trial\n", "tune (sample+launch+parse+store):", t);
  std::printf("  %-34s %9.3f ms/trial  (target < 20 ms)\n", "added by tune:", t - d);
  std::printf("  %-34s %9.2fx\n", "ratio tune / by hand:", t / d);
  return 0;
}
