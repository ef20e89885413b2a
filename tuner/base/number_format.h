// How tune writes numbers and durations for a person: 4 significant digits in live lines and
// parameter lists, 6 in value columns, "3m07s" for durations. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tune::tuner {

// A number as live output and parameter lists print it: 4 significant digits ("0.8846", "1235",
// "1.235e+05"). `tune best` (exact), the report's value columns and export print more.
std::string format_short(double value);
std::string format_value(double value);                        // 6 significant digits
std::string format_values(const std::vector<double>& values);  // "0.5, 12.3"
// "45s", "3m07s", "2h05m".
std::string format_duration(double seconds);
// `text` cut to at most `width` bytes on a UTF-8 character boundary, "..." ending a cut text.
std::string fit_width(const std::string& text, std::size_t width);

}  // namespace tune::tuner
