#include "tuner/measure/file_watch.h"

#include <fmt/format.h>
#include <filesystem>

namespace tune::tuner {

namespace fs = std::filesystem;

Result<std::string> file_metric_path(const FileMetric& metric, const std::string& workdir,
                                     const TemplateValues& values) {
  auto expanded = expand_template(metric.file, values);
  if (!expanded)
    return std::unexpected(fmt::format("file '{}': {}", metric.file, expanded.error()));
  if (!*expanded) return std::unexpected(fmt::format("file '{}' names a null value", metric.file));
  fs::path path(**expanded);
  if (path.is_relative() && !workdir.empty()) path = fs::path(workdir) / path;
  return path.string();
}

TrialFileWatch::TrialFileWatch(const std::vector<ObjectiveSpec>& objectives,
                               const std::vector<ConstraintSpec>& constraints,
                               const std::string& workdir, const TemplateValues& values) {
  std::vector<const FileMetric*> metrics;
  for (const auto& o : objectives)
    if (o.file) metrics.push_back(&*o.file);
  for (const auto& c : constraints)
    if (c.file) metrics.push_back(&*c.file);
  for (const auto* m : metrics) {
    auto path = file_metric_path(*m, workdir, values);
    if (!path) continue;  // the reading after the trial names the template's fault
    FileSighting& s = m_files[*path];
    std::error_code ec;
    if (fs::is_regular_file(*path, ec)) {
      s.at_launch = true;
      s.bytes = fs::file_size(*path, ec);
    }
  }
}

void TrialFileWatch::look(double since_launch_s) {
  if (m_files.empty()) return;
  ++m_looks;
  for (auto& [path, s] : m_files) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    s.last_seen_s = since_launch_s;
    s.bytes = fs::file_size(path, ec);
  }
}

const FileSighting* TrialFileWatch::sighting(const std::string& path) const {
  const auto it = m_files.find(path);
  return it == m_files.end() ? nullptr : &it->second;
}

}  // namespace tune::tuner
