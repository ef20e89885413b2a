// The first pass over a study file, on yaml-cpp's parse events, before any node tree exists.
//
// yaml-cpp keeps both of two equal keys without a word (lookups see the first, iteration both),
// and it shares an aliased node, so a walk over the tree (to_json, a parameter's choices)
// copies that node once per reference: a 1 KB file of nested aliases becomes gigabytes. On the
// event stream an alias is one event whose expanded size is known from its anchor, so duplicate
// keys, alias bombs, deep nesting and a second document are all caught at the key and line that
// cause them, before anything is copied. Stateless function; thread-safe.
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
