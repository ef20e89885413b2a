// Typed reads of a study file's YAML nodes, each failing with "FILE:LINE: key 'a.b': what is
// wrong" (a SpecError the parser turns into its Result). The nodes must have passed
// check_yaml_document first. Holds only the file name; thread-compatible.
// Design: docs/design-notes.md#tunerstudyyaml_readerh
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "search/distribution.h"

namespace tune::tuner {

// Thrown by YamlReader; caught where the parse began and returned as its error.
struct SpecError {
  std::string message;
};

class YamlReader {
 public:
  explicit YamlReader(std::string file) : m_file(std::move(file)) {}

  // Throws SpecError "FILE:LINE: key 'KEY': WHAT" at `node`'s line (0 when it has none).
  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& what) const;

  // `map` is a mapping whose keys are all in `allowed`; `where` is its own key ("" at the top).
  void check_keys(const YAML::Node& map, const std::string& where,
                  const std::set<std::string>& allowed) const;

  // An error from search/ ("sampler.seed: must be ...") at the line of the key it names, or of
  // the deepest part of it the file has, else of `section`.
  [[noreturn]] void fail_in(const YAML::Node& root, const std::string& section,
                            const std::string& error) const;

  // "a.b" from "a" and "b"; just "b" when `a` is empty (the top level).
  static std::string join(const std::string& a, const std::string& b);

  std::string string(const YAML::Node& n, const std::string& key) const;
  bool boolean(const YAML::Node& n, const std::string& key) const;
  double number(const YAML::Node& n, const std::string& key) const;  // finite
  std::int64_t integer(const YAML::Node& n, const std::string& key) const;
  // A template-able scalar (string, number or bool written as text).
  std::string scalar_text(const YAML::Node& n, const std::string& key) const;
  // YAML scalar -> parameter value with YAML's own typing (null, bool, int, float, string).
  search::ParamValue value(const YAML::Node& n, const std::string& key) const;
  // A parameter's domain: {type: int|float|categorical, ...} or a list of choices.
  search::Distribution param(const YAML::Node& n, const std::string& key) const;
  // YAML subtree -> JSON (for sampler/pruner sections handed to search/).
  nlohmann::json to_json(const YAML::Node& n, const std::string& key) const;

 protected:
  const std::string& file() const { return m_file; }

 private:
  search::Distribution checked(search::Distribution d, const YAML::Node& n,
                               const std::string& key) const;

  std::string m_file;
};

}  // namespace tune::tuner
