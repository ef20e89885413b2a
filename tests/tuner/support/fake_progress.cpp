// A stand-in for a long training job, for the window objective's tests: prints progress lines
// "step N loss X" whose counter N is the true rate times the time since its start, read off the
// clock when the line is printed, so the rate it shows is known exactly whatever the scheduler
// does to its sleeps.
//
//   fake_progress [--rate R] [--every-ms M] [--start-ms S] [--for SEC] [--mode MODE]
//                 [--out DIR] [--flush-ms F] [--child] [--pids FILE] [--time]
// MODE: run (forever, or --for SEC then exit 0), die (exit 3 after --for SEC), never (print
// nothing, sleep), garbage (progress lines among garbage: non-finite numbers, a counter that
// goes back, a 200 KB line, control bytes), log (a Chainer log DIR/log, rewritten whole and
// renamed, with iteration and elapsed_time), stderr (progress on stderr). --flush-ms holds the
// lines back and writes them in bursts (a block-buffered stdout). --child starts a child that
// sleeps forever (the tree must be stopped whole); --pids writes this pid and the child's.
// --time adds "time T" (seconds since start) to each line. --stdio writes with C stdio and
// never flushes (into a pipe: 4-KiB blocks, unless something makes stdout line-buffered);
// --width W prints the counter right-aligned in W columns ("step    9", then wider);
// --total T prints "step N/T"; --summary prints "steps per second: R" at the end (the
// program's own figure: the last count over the time it ran).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  double rate = 100, seconds = -1;
  int every_ms = 20, start_ms = 0, flush_ms = 0;
  bool child = false, with_time = false, stdio = false, summary = false;
  int width = 0;
  long total = 0;
  std::string mode = "run", out = ".", pids;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--rate") {
      rate = std::atof(next().c_str());
    } else if (k == "--every-ms") {
      every_ms = std::atoi(next().c_str());
    } else if (k == "--start-ms") {
      start_ms = std::atoi(next().c_str());
    } else if (k == "--for") {
      seconds = std::atof(next().c_str());
    } else if (k == "--mode") {
      mode = next();
    } else if (k == "--out") {
      out = next();
    } else if (k == "--flush-ms") {
      flush_ms = std::atoi(next().c_str());
    } else if (k == "--child") {
      child = true;
    } else if (k == "--time") {
      with_time = true;
    } else if (k == "--stdio") {
      stdio = true;
    } else if (k == "--summary") {
      summary = true;
    } else if (k == "--width") {
      width = std::atoi(next().c_str());
    } else if (k == "--total") {
      total = std::atol(next().c_str());
    } else if (k == "--pids") {
      pids = next();
    } else {
      std::fprintf(stderr, "fake_progress: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  pid_t kid = -1;
  if (child) {
    kid = fork();
    if (kid == 0) {
      for (;;) pause();
    }
  }
  if (!pids.empty()) std::ofstream(pids) << getpid() << ' ' << kid << '\n';
  std::this_thread::sleep_for(std::chrono::milliseconds(start_ms));
  if (mode == "never") {
    for (;;) pause();
  }
  const int fd = mode == "stderr" ? STDERR_FILENO : STDOUT_FILENO;
  const auto t0 = Clock::now();
  auto last_flush = t0;
  std::string held, log_entries;
  long last_count = 0;
  double last_t = 0;
  for (long line = 0;; ++line) {
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (seconds >= 0 && t >= seconds) break;
    const long n = static_cast<long>(std::floor(rate * t));
    char text[160];
    const std::string of = total > 0 ? "/" + std::to_string(total) : "";
    std::snprintf(text, sizeof text, "step %*ld%s loss %.4f%s", width, n, of.c_str(),
                  2.0 / (1.0 + t), with_time ? (" time " + std::to_string(t)).c_str() : "");
    last_count = n;
    last_t = t;
    std::string lines = std::string(text) + "\n";
    if (mode == "garbage") {
      static const char* k_garbage[] = {"step nan loss 1", "step inf loss 1", "step 1e999 loss 1",
                                        "step -5 loss 1",  "step 0 loss 1",   "step \x01\x02\xff",
                                        "epoch done",      "step loss",       "step 1.5.5 loss"};
      lines += std::string(k_garbage[line % 9]) + "\n";
      if (line % 25 == 3) lines += std::string(200000, 'x') + " step 99999999\n";
    }
    if (mode == "log") {
      char entry[160];
      std::snprintf(entry, sizeof entry, "%s{\"iteration\": %ld, \"elapsed_time\": %.6f}",
                    log_entries.empty() ? "" : ", ", n, t);
      log_entries += entry;
      {
        std::ofstream tmp(out + "/log.tmp");
        tmp << "[" << log_entries << "]";
      }
      std::rename((out + "/log.tmp").c_str(), (out + "/log").c_str());
    } else if (flush_ms > 0) {
      held += lines;
      if (Clock::now() - last_flush >= std::chrono::milliseconds(flush_ms)) {
        write_all(fd, held);
        held.clear();
        last_flush = Clock::now();
      }
    } else if (stdio) {
      std::fputs(lines.c_str(), fd == STDERR_FILENO ? stderr : stdout);
    } else {
      write_all(fd, lines);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
  }
  write_all(fd, held);
  if (summary) {
    char text[96];
    std::snprintf(text, sizeof text, "\nsteps per second: %.2f\n",
                  last_t > 0 ? static_cast<double>(last_count) / last_t : 0.0);
    if (stdio) {
      std::fputs(text, stdout);
    } else {
      write_all(STDOUT_FILENO, text);
    }
  }
  if (kid > 0) {
    kill(kid, SIGKILL);
    waitpid(kid, nullptr, 0);
  }
  if (mode == "die") {
    std::fprintf(stderr, "fake_progress: dying on purpose\n");
    return 3;
  }
  return 0;
}
