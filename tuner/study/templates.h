// Placeholder templates: the `{name}` syntax of the study file, checked when it loads
// (template_names) and filled in for each trial (expand_template, expand_list); a null value
// drops the whole element. Stateless functions and constants; thread-safe.
// Design: docs/design-notes.md#tunerstudytemplatesh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/distribution.h"
#include "tuner/base/result.h"

namespace tune::tuner {

// Values for template expansion: parameter values (external form) plus built-ins as strings.
using TemplateValues = std::map<std::string, search::ParamValue>;

// The placeholders every trial has besides its parameters (filled by trial_template_values in
// tuner/launch/rendered_launch.h); a parameter may not take one of these names.
inline constexpr std::string_view k_builtin_placeholders[] = {
    "trial_dir", "trial_number", "study", "study_dir", "output_dir", "tune_trainer", "nproc"};

bool is_builtin_placeholder(std::string_view name);

// Expands one template. nullopt when it refers to a value that is null (the element is then
// left out); an error for a name with no value.
Result<std::optional<std::string>> expand_template(const std::string& text,
                                                   const TemplateValues& values);

// Expands each template of a list, leaving out those whose value is null. An error is prefixed
// with `where` ("FILE: command").
Result<std::vector<std::string>> expand_list(const std::vector<std::string>& texts,
                                             const TemplateValues& values,
                                             const std::string& where);

// A whole file's text (a staged `files: {template: ...}`) expanded line by line: a line that
// refers to a null value is left out, as an argv element would be. Errors name the line.
Result<std::string> expand_text(const std::string& text, const TemplateValues& values);

// A path template (`workdir:`) expanded, made absolute from `dir` and lexically normal; nullopt
// when it refers to a null value. An error when a parameter's value moves it out of the folder
// the template itself writes before its first parameter placeholder ("runs/{x}" stays in
// DIR/runs, "{x}" in DIR, "/scratch/{x}" in /scratch): a value may name a folder inside, never
// climb out with '..' or replace it with an absolute path. Only the study file may write those.
Result<std::optional<std::string>> expand_path_template(const std::string& text,
                                                        const TemplateValues& values,
                                                        const std::string& dir);

// Why a parameter's value could move a path template's result out of its folder: it begins with
// '/' or holds a '..' part ("../x", "a/../../b"); nullopt when it cannot by itself.
std::optional<std::string> path_value_problem(const search::ParamValue& value);

// Names a template refers to, in order (for validation).
Result<std::vector<std::string>> template_names(const std::string& text);

}  // namespace tune::tuner
