// The patterns a study file names, checked where the file is read so that what loads is what
// runs: regular expressions (RE2 syntax, linear time, never recursive) and JSON key paths
// (`results.runs[0].gflops`). Reading a trial's output with them is tuner/measure/objective.h.
// Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <re2/re2.h>

#include "tuner/base/result.h"

namespace tune::tuner {

// RE2's options for every pattern of a study: errors are returned, never logged.
RE2::Options regex_options();

// Why `pattern` is not a valid objective regex (RE2 syntax), or nullopt when it is.
std::optional<std::string> regex_error(const std::string& pattern);

// The first match of `pattern` (RE2) in `text`: its first group's text, or the whole match
// without a group; nullopt for no match or an invalid pattern. For checking a pattern built
// from text against that text (tune init's progress lines).
std::optional<std::string> regex_first_group(const std::string& pattern, std::string_view text);

// Why `path` is not a JSON key path (names joined by '.', [N] for an array element, e.g.
// results.runs[0].gflops), or nullopt when it is.
std::optional<std::string> json_path_error(const std::string& path);

// One step of a JSON key path: a member name or an array index.
struct PathStep {
  std::string name;
  std::optional<std::size_t> index;
};

// `path` as steps, or why it is not a key path (the error names it and shows the syntax).
Result<std::vector<PathStep>> parse_json_path(const std::string& path);

}  // namespace tune::tuner
