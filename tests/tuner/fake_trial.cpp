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
  std::ofstream log(path);
  if (mode == "badjson") {
    log << "[{\"elapsed_time\": ";
    return 0;
  }
  log << "[";
  for (int s = 1; s <= steps; ++s) {
    if (s > 1) log << ", ";
    const double v = mode == "nan" && s == steps ? 0.0 : value * s / steps;
    log << "{\"iteration\": " << s << ", \"elapsed_time\": "
        << (mode == "nan" && s == steps ? std::string("NaN") : std::to_string(v))
        << ", \"validation/main/accuracy\": 0.9}";
  }
  log << "]";
  return 0;
}
