// A stand-in for a training run, for the tuner's tests: writes a Chainer-style log with the
// value it is given, or misbehaves on purpose (crash, hang, no log, bad JSON, NaN).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  std::string out = ".", mode = "ok", hang_if = "", started = "";
  double value = 1.0;
  int steps = 1;
  int step_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--out")
      out = v;
    else if (k == "--value")
      value = std::atof(v.c_str());
    else if (k == "--mode")
      mode = v;
    else if (k == "--steps")
      steps = std::atoi(v.c_str());
    else if (k == "--step-ms")
      step_ms = std::atoi(v.c_str());
    else if (k == "--hang-if-exists")
      hang_if = v;
    else if (k == "--started")
      started = v;
    else {
      std::fprintf(stderr, "fake_trial: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (!started.empty()) std::ofstream(started) << getpid() << '\n';
  if (mode == "hang" || (!hang_if.empty() && access(hang_if.c_str(), F_OK) == 0)) {
    // Ignore SIGTERM so the launcher has to escalate to SIGKILL.
    if (mode == "hang") signal(SIGTERM, SIG_IGN);
    for (;;) pause();
  }
  std::printf("fake_trial: value %g\n", value);
  std::fprintf(stderr, "fake_trial stderr line\n");
  if (mode == "crash") {
    std::fprintf(stderr, "fake_trial: crashing on purpose\n");
    return 3;
  }
  if (mode == "segv") raise(SIGSEGV);
  if (mode == "nolog") return 0;
  const std::string path = out + "/log";
  if (mode == "badjson") {
    std::ofstream(path) << "[{\"elapsed_time\": ";
    return 0;
  }
  // One entry per step, the log rewritten atomically after each (as the trainer does), so a
  // watcher can follow progress; --step-ms simulates the work of a step.
  std::string entries;
  for (int s = 1; s <= steps; ++s) {
    if (step_ms > 0) usleep(static_cast<useconds_t>(step_ms) * 1000);
    if (s > 1) entries += ", ";
    const bool last = s == steps;
    entries += "{\"iteration\": " + std::to_string(s) + ", \"elapsed_time\": " +
               (mode == "nan" && last ? std::string("NaN") : std::to_string(value * s / steps)) +
               ", \"validation/main/accuracy\": 0.9}";
    {
      std::ofstream tmp(path + ".tmp");
      tmp << "[" << entries << "]";
    }
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  return 0;
}
