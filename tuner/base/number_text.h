// A number as a job prints it: `12345.6`, with its thousands grouped (`12,345.6`, Python's
// `{:,}`), or with a decimal comma (`1,75`). The objectives read a match through one of these
// styles (the study file's `number:`), `tune init` picks the style its probe run's lines need,
// and a match that holds only part of a number (`12` out of `12,345.6`) is caught rather than
// stored. Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "tuner/base/result.h"

namespace tune::tuner {

enum class NumberStyle {
  plain,          // 12345.6, 1e-3: '.' the decimal point, no separators (strtod)
  grouped,        // 12,345.6: ',' between groups of three digits, '.' the decimal point
  decimal_comma,  // 1,75: ',' the decimal point, no groups, no exponent
};

// "plain", "grouped", "decimal_comma": the study file's spelling.
std::string_view number_style_name(NumberStyle style);
std::optional<NumberStyle> number_style_named(std::string_view name);

// `text`, which must be one number written in `style` and nothing else, as a finite double; the
// error says what is wrong with it (not quoted: the caller names where it came from).
Result<double> parse_number_text(std::string_view text, NumberStyle style);

// The number as written around `text[begin, end)` (a regex's match): the match widened over
// the digits, and the ',' or '.' between digits, that touch it on either side. nullopt when
// nothing touches it, i.e. the match holds the whole number; else the whole number's text, e.g.
// "12,345.6" for the match "12" of "throughput: 12,345.6 samples/s".
std::optional<std::string_view> number_cut_by(std::string_view text, std::size_t begin,
                                              std::size_t end);

// The number token that starts at `text[at]` (an optional '-', digits with ',' or '.' between
// digits, an optional exponent), as `tune init` sees one in a line; empty when none starts
// there.
std::string_view number_token_at(std::string_view text, std::size_t at);

}  // namespace tune::tuner
