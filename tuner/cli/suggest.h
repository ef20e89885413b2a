// "Did you mean ...?" for a mistyped command name: the optimal-string-alignment distance
// (Levenshtein plus the swap of two neighbouring characters, the commonest typo: reprot) and the
// nearest of a list of names within a threshold that grows with the word. Plain functions over
// strings; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tune::tuner {

// Edits (insert, delete, substitute one character, or swap two neighbouring ones) that turn `a`
// into `b`, each substring edited once (optimal string alignment). Case-sensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name of `names` nearest to `word` (compared case-insensitively) when it is near enough to be
// the one meant: at most 1 edit when both are up to 4 characters long, else 2; or `word`, 3
// characters or more, being how the name starts ("conf"). Ties go to the earlier name. nullopt
// when none is that near.
std::optional<std::string> nearest_name(std::string_view word,
                                        const std::vector<std::string>& names);

}  // namespace tune::tuner
