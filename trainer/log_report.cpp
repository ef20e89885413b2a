#include "trainer/log_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tune::trainer {

LogReport::LogReport(std::string dir) : m_dir(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(m_dir, ec);
  if (ec) throw std::runtime_error("--out " + m_dir + ": cannot create directory: " + ec.message());
}

void LogReport::append(nlohmann::json entry) {
  m_entries.push_back(std::move(entry));
  const std::string tmp = m_dir + "/log.tmp", dst = m_dir + "/log";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << m_entries.dump(4) << '\n';
    if (!f) throw std::runtime_error(tmp + ": cannot write the log");
  }
  if (std::rename(tmp.c_str(), dst.c_str()) != 0)
    throw std::runtime_error(dst + ": cannot rename the log into place");
}

}  // namespace tune::trainer
