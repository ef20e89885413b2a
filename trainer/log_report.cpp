#include "trainer/log_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tune::trainer {
namespace {

std::string error_text(int error) {
  return error != 0 ? std::strerror(error) : "cannot write the log";
}

}  // namespace

LogReport::LogReport(std::string dir) : m_dir(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(m_dir, ec);
  if (ec) throw std::runtime_error("--out " + m_dir + ": cannot create directory: " + ec.message());
}

void LogReport::append(nlohmann::json entry) {
  m_entries.push_back(std::move(entry));
  const std::string tmp = m_dir + "/log.tmp", dst = m_dir + "/log";
  {
    // Closed before the check: a full disk shows only when the buffer is written out, and a
    // log cut short must fail the trial with why ("writing DIR/log.tmp: No space left on
    // device"), not leave the objective reading a partial or stale log.
    errno = 0;
    std::ofstream f(tmp, std::ios::trunc);
    f << m_entries.dump(4) << '\n';
    f.close();
    if (!f) throw std::runtime_error("writing " + tmp + ": " + error_text(errno));
  }
  if (std::rename(tmp.c_str(), dst.c_str()) != 0)
    throw std::runtime_error("renaming " + tmp + " to " + dst + ": " + error_text(errno));
}

}  // namespace tune::trainer
