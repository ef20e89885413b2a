// The files a trial's objectives and constraints read once it has ended (`file:`), looked at
// while it runs, so that one gone at its end is told apart: deleted during the trial (there at
// launch, or seen by a look while it ran) or never written. A look is one stat() per file on
// each tick of the trial's watcher (0.5 s; a window's 0.05 s): a file written and removed
// between two looks is not seen. One trial's, used by the thread that runs it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/base/result.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// Where a FileMetric's file is: its template expanded with `values`, a relative one taken from
// `workdir` (the trial's working directory).
Result<std::string> file_metric_path(const FileMetric& metric, const std::string& workdir,
                                     const TemplateValues& values);

// What the looks saw of one file.
struct FileSighting {
  bool at_launch = false;             // a regular file when the trial was launched
  std::optional<double> last_seen_s;  // the last look during the trial that saw it (s after launch)
  std::uintmax_t bytes = 0;           // its size then (or at launch)
};

class TrialFileWatch {
 public:
  // The files of `objectives` and `constraints`; the first look is now, before the launch.
  TrialFileWatch(const std::vector<ObjectiveSpec>& objectives,
                 const std::vector<ConstraintSpec>& constraints, const std::string& workdir,
                 const TemplateValues& values);

  // One look at each file, `since_launch_s` after the launch.
  void look(double since_launch_s);

  // What was seen of `path` (as file_metric_path gives it); null for a file not watched.
  const FileSighting* sighting(const std::string& path) const;
  int looks() const { return m_looks; }

 private:
  std::map<std::string, FileSighting> m_files;
  int m_looks = 0;  // during the trial
};

}  // namespace tune::tuner
