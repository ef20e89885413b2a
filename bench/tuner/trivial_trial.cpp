// The cheapest possible trial: writes a one-entry Chainer log with the value it is given.
// Used to measure what tune itself adds per trial.
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  std::string out = ".";
  std::string value = "1";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--out") == 0) out = argv[i + 1];
    if (std::strcmp(argv[i], "--value") == 0) value = argv[i + 1];
  }
  std::FILE* f = std::fopen((out + "/log").c_str(), "w");
  if (!f) return 1;
  std::fprintf(f, "[{\"iteration\": 1, \"elapsed_time\": %s}]\n", value.c_str());
  return std::fclose(f) == 0 ? 0 : 1;
}
