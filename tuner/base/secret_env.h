// The environment variables that hold secrets: the one list tune masks, leaves out of exports,
// and keeps from a trial's processes. Stateless; thread-safe.
#pragma once

#include <string_view>

namespace tune::tuner {

// What stands for a secret wherever one would be shown.
inline constexpr std::string_view k_redacted = "***";

// Whether an environment variable holds a database secret (PGPASSWORD): a trial's stored and
// shown environment holds k_redacted for its value, and exported
// scripts leave it out.
bool is_secret_env_var(std::string_view name);

// Whether an environment variable is one through which libpq finds tune's database credentials
// (PGPASSWORD, PGPASSFILE, PGSERVICEFILE, PGSSLKEY): tune's own, so a trial's processes start
// without them (trial_environment, tuner/launch/launcher.h) unless the study file's env names
// them.
bool is_database_credential_env_var(std::string_view name);

}  // namespace tune::tuner
