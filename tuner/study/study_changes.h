// A study file against the study it names: what changed since the study stored its trials (an
// error where the stored trials would mean something else, a note otherwise).
// Plain functions over values; thread-safe.
// Design: docs/design-notes.md#tunerstudystudy_changesh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/trial.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {

// What a study stored that its file must still agree with.
struct StoredStudy {
  std::vector<search::Direction> directions;
  struct Param {
    search::Distribution dist;   // the latest stored trial's (by number) that has the parameter
    int trials = 0;              // stored trials that have it
    std::vector<double> values;  // their internal values drawn under dist's type
  };
  std::map<std::string, Param> params;
  // What each objective measured (objectives_identity), when the study recorded it.
  std::optional<nlohmann::json> objectives;
};

// From the study's directions, its trials (any state) and its user attrs.
StoredStudy stored_study_of(const std::vector<search::Direction>& directions,
                            const std::vector<search::FrozenTrial>& trials,
                            const nlohmann::json& study_user_attrs);

// What each objective measures, as stored in k_attr_study_objectives: one object per objective
// with its source and what is read from it (the log key, the regex, the json path...), not
// where (paths may move) nor how long (a window's limits).
nlohmann::json objectives_identity(const StudySpec& spec);

struct StudyChanges {
  std::vector<std::string> errors;  // "FILE:LINE: key 'K': ..."; any one refuses the run
  std::vector<std::string> notes;   // "FILE:LINE: key 'K': ..."; the run goes on
};

StudyChanges compare_with_stored(const StudySpec& spec, const StoredStudy& stored);

}  // namespace tune::tuner
