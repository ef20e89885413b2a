// The first pass over a study file, on yaml-cpp's parse events: catches duplicate keys, alias
// bombs, deep nesting and a second document before any node tree exists. Stateless; thread-safe.
// Design: docs/design-notes.md#tunerstudyyaml_document_checkh
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <yaml-cpp/exceptions.h>

#include "tuner/base/result.h"

namespace tune::tuner {

// Bounds on the document before it becomes a node tree. A real study file has a few hundred
// nodes; the bounds are far above that and far below what would hurt.
inline constexpr std::uint64_t k_max_yaml_nodes = 100'000;  // counting every copy an alias makes
inline constexpr std::size_t k_max_yaml_depth = 64;         // nesting of mappings and sequences

// The first problem of `yaml_text` as "FILE:LINE: key 'a.b': ..." (or "FILE:LINE: invalid
// YAML: ..." where yaml-cpp cannot read it); `file` names it in messages.
Result<void> check_yaml_document(const std::string& yaml_text, const std::string& file);

// "FILE:LINE: invalid YAML: what": yaml-cpp's error in one line; nesting past the parser's depth
// limit (yaml-cpp's DeepRecursion, whose own text is "bad file") is called what it is, and so is
// a line of `yaml_text` indented with a tab, at or before the error's.
std::string yaml_error_message(const YAML::Exception& e, const std::string& file,
                               std::string_view yaml_text);

}  // namespace tune::tuner
