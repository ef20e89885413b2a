// Chainer LogReport-compatible log: a JSON array of entries (epoch, iteration, main/loss,
// main/accuracy, [validation/main/loss, validation/main/accuracy], elapsed_time, samples_per_sec)
// rewritten whole on every append through DIR/log.tmp + rename, so a reader never sees a partial
// file. Only rank 0 owns a LogReport. Not thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tune::trainer {

class LogReport {
 public:
  explicit LogReport(std::string dir);  // creates dir
  void append(nlohmann::json entry);    // throws std::runtime_error when the file cannot be written
  const nlohmann::json& entries() const { return m_entries; }

 private:
  std::string m_dir;
  nlohmann::json m_entries = nlohmann::json::array();
};

}  // namespace tune::trainer
