// A study file against the study it names: what changed since the study stored its trials.
//
// A study lives on across runs of `tune` while its file may be edited between them. What the
// stored trials mean depends on the file they ran under: the directions (a value ranked the
// other way), each objective's measure (values of another quantity under one name), each
// parameter's domain (a categorical's stored value is the index of its choice). So before a run
// adds trials, the file is compared with what the study stored: its directions, the objectives
// it recorded (study user attr k_attr_study_objectives) and, per parameter, the distribution of
// the latest stored trial that has it (Optuna's distribution_json).
//
// Errors, each a study-file error "FILE:LINE: key 'K': what changed; the way forward": a changed
// direction or objective; a parameter whose type, `log` or categorical choices changed (Optuna's
// check_distribution_compatibility refuses them, and stored indexes would name other choices);
// a parameter the file no longer has (new trials would run without it beside stored ones that
// set it, and an export of a stored winner would drop it). Notes, one line each, and the run
// goes on: a numeric range widened, narrowed or moved (Optuna accepts it; stored trials outside
// stay in the study and its report), a changed `step`, a new parameter.
//
// Plain functions over values; thread-safe.
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
