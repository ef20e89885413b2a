// Objective parsing: what a finished trial left behind (a log entry, a regex over a stream's tail,
// a file it wrote, its wall time, its window's value) turned into its values and constraints, or
// an error stored with the trial as its failure reason. Stateless functions.
// Design: docs/design-notes.md#tunermeasureobjectiveh
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/base/result.h"
#include "tuner/measure/file_watch.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

struct ObjectiveReading {
  double value = 0;                 // the first objective's
  std::vector<double> values;       // every objective's, when there are several (else empty)
  std::vector<double> constraints;  // one per ConstraintSpec, c <= 0 feasible
  nlohmann::json entry;             // the log entry the value came from (null for regex)
};

// How much of a stream's end the regex objective scans: the last match is what counts.
inline constexpr std::size_t k_regex_scan_bytes = 16u << 20;

// When `text[begin, end)`, a regex's match, holds only part of a number the job wrote (more
// digits, or a ',' or '.' and a digit, touch it: base/number_text.h's number_cut_by), why its
// value cannot be stored: "WHAT '12', only part of the number '12,345.6' in 'LINE': ...",
// quoting the match, the whole number and (up to 160 bytes of) its line; nullopt when the
// match holds the whole number. The regex objectives and the window's progress lines share it.
std::optional<std::string> partial_number_reason(std::string_view text, std::size_t begin,
                                                 std::size_t end, std::string_view what);

// A FileMetric's value from the file the trial wrote: `workdir` is the trial's working directory
// (a relative `file` is taken from it), `values` fill the file's placeholders. A missing file, no
// match, a missing key or column, or a non-finite value is an error naming the file and what was
// looked for. With `watch` (what was seen of the file while the trial ran), a file gone at the
// end that was there at launch or seen during the trial is said to be deleted during it.
Result<double> read_file_metric(const FileMetric& metric, const std::string& workdir,
                                const TemplateValues& values,
                                const TrialFileWatch* watch = nullptr);

// Reads a Chainer-style log: a JSON array of objects (at most 256 MiB).
Result<nlohmann::json> read_log(const std::string& path);

// `wall_s` is the trial's wall time as the runner measured it (launch to exit): the value of a
// `wall_time` objective, which then reads the log only for constraints. `workdir` and `values`
// are for objectives and constraints read from a file (read_file_metric); the log is read only
// when something needs it. `window_value` is a window objective's value, measured while the
// trial ran (tuner/measure/window_follower.h); without one such an objective is an error.
// `files` is what was seen of the files read while the trial ran (read_file_metric).
Result<ObjectiveReading> read_objective(
    const ObjectiveSpec& objective, const std::vector<ConstraintSpec>& constraints,
    const std::string& log_path, const std::string& stdout_path, const std::string& stderr_path,
    double wall_s = 0, const std::string& workdir = "", const TemplateValues& values = {},
    std::optional<double> window_value = std::nullopt, const TrialFileWatch* files = nullptr);

// Every objective of a study (StudySpec::objectives) from one trial: one objective is
// read_objective(); several give `values` in order, the constraints read with the first, and an
// error names the objective at fault (objective[1]: ...).
Result<ObjectiveReading> read_objectives(
    const std::vector<ObjectiveSpec>& objectives, const std::vector<ConstraintSpec>& constraints,
    const std::string& log_path, const std::string& stdout_path, const std::string& stderr_path,
    double wall_s = 0, const std::string& workdir = "", const TemplateValues& values = {},
    std::optional<double> window_value = std::nullopt, const TrialFileWatch* files = nullptr);

// (step, value) pairs for pruning from the entries of a log that is still being written.
std::vector<std::pair<std::int64_t, double>> intermediate_points(const ObjectiveSpec& objective,
                                                                 const nlohmann::json& entries);

}  // namespace tune::tuner
