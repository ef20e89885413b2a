// Splits writer output into lines, for line-by-line checks (google/benchmark's output tests).
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace tune::tuner::test_text {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace tune::tuner::test_text
