#include "tuner/base/secret_env.h"

namespace tune::tuner {

bool is_secret_env_var(std::string_view name) { return name == "PGPASSWORD"; }

bool is_database_credential_env_var(std::string_view name) {
  return name == "PGPASSWORD" || name == "PGPASSFILE" || name == "PGSERVICEFILE" ||
         name == "PGSSLKEY";
}

}  // namespace tune::tuner
