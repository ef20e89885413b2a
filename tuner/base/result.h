// Result<T>: the tuner's one error type, the value or a one-line message saying what failed
// (naming the file, key or line at fault). Every tuner/ function that can fail returns one, and
// every caller reads it: passes the error up, prints it, or turns it into an exit status (the
// CLI's unwrap() in subcommands.h). search/ and probes/ cannot include tuner/ headers and spell the
// same type std::expected<T, std::string>. Header only.
#pragma once

#include <expected>
#include <string>

namespace tune::tuner {

template <typename T>
using Result = std::expected<T, std::string>;

}  // namespace tune::tuner
