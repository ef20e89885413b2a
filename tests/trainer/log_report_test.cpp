// LogReport: a JSON array that grows entry by entry and is replaced atomically (no .tmp left).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "trainer/log_report.h"

namespace tune::trainer {
namespace {

TEST(LogReport, AppendsWholeArraysAtomically) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("trainer_log_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    LogReport log((dir / "nested").string());
    log.append({{"iteration", 1}, {"main/loss", 2.5}});
    auto first = nlohmann::json::parse(std::ifstream(dir / "nested" / "log"));
    ASSERT_TRUE(first.is_array());
    EXPECT_EQ(first.size(), 1u);
    log.append({{"iteration", 2}, {"main/loss", 1.5}, {"elapsed_time", 0.5}});
    auto second = nlohmann::json::parse(std::ifstream(dir / "nested" / "log"));
    ASSERT_EQ(second.size(), 2u);
    EXPECT_EQ(second[1]["iteration"], 2);
    EXPECT_DOUBLE_EQ(second[1]["elapsed_time"].get<double>(), 0.5);
    EXPECT_FALSE(std::filesystem::exists(dir / "nested" / "log.tmp"));
  }
  std::filesystem::remove_all(dir);
}

TEST(LogReport, UnwritableDirectoryThrowsNamingIt) {
  try {
    LogReport log("/proc/definitely/not/here");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/definitely/not/here"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tune::trainer
