// A fresh private folder under the temporary folder (TMPDIR, else /tmp), as mkdtemp(3) makes
// one. Where it cannot be made, the error names the folder, the variable that chose it and the
// cause: a bad TMPDIR otherwise reads as an error about nothing the user set. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "tuner/base/result.h"

namespace tune::tuner {

// `prefix` + six random characters; the caller removes it.
Result<std::string> make_temp_dir(std::string_view prefix);

// The temporary folder as the C++ library picks it, "" when the variable naming it is bad.
std::string temp_dir_or_empty();

}  // namespace tune::tuner
