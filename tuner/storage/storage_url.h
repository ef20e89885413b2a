// Storage URLs: the one parser of what names a database (a SQLite file, sqlite:///path or a
// plain path, or a PostgreSQL server, postgresql://user@host/db), its options
// (?synchronous=...&grace_period=...&retry_for=..., StorageOptions), the rules that keep its
// password out of what tune shows and writes, and open_storage(), which opens the backend a URL
// names. Plain functions over strings; thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tuner/base/result.h"
#include "tuner/base/secret_env.h"  // used with these
#include "tuner/storage/storage.h"

namespace tune::tuner {

// Opens the storage named by a URL or path: "sqlite:///rel/path.db", "sqlite:////abs/path.db"
// (SQLAlchemy's spelling, as Optuna takes it) or a plain file path (SQLite), or
// "postgresql://user[:password]@host[:port]/db" (also postgres://, postgresql+psycopg2://). A
// URL may end in options, "?synchronous=full|normal&grace_period=120s" (StorageOptions; plain
// paths take none), retry_for=60s (StorageOptions::retry_s), for PostgreSQL also any option of
// libpq's (sslmode=...).
[[nodiscard]] Result<std::unique_ptr<Storage>> open_storage(const std::string& url,
                                                            OpenMode mode = OpenMode::read_write);

// Whether `url` names a PostgreSQL server (postgresql://, postgres://, postgresql+driver://).
bool is_postgres_url(const std::string& url);

// `url` as it may be shown (banners, reports, errors, exported comments): its password, in the
// user info (scheme://user:PASSWORD@host) or the query (?password=...), replaced by k_redacted;
// user, host, port, database and other options kept. A URL or path without one comes back
// unchanged. The user info ends at the query's last '@', so a password holding an unencoded
// '@', ':' or '/' is hidden whole.
std::string redact_storage_url(const std::string& url);

// `url` without its password (neither in the user info nor as ?password=), for what tune writes
// for a later run to use (an exported job script): libpq then reads the password from the
// PGPASSWORD variable or ~/.pgpass where that run happens.
std::string storage_url_without_password(const std::string& url);

// k_redacted, is_secret_env_var, is_database_credential_env_var: tuner/base/secret_env.h.

// Whether a word of tune's command line is (or, as --storage=URL, holds) a storage URL with a
// password in it; `redacted` gets the word as it may be shown.
bool word_holds_password(std::string_view word, std::string* redacted = nullptr);

// The database file a SQLite URL ("sqlite:///x.db?synchronous=full": its options dropped) or a
// plain path names; nullopt for any other URL (a server).
std::optional<std::string> sqlite_file_of(const std::string& url);

// Why `url` names no storage this build can open (an SQLite path or sqlite:///path, or a
// PostgreSQL URL; its options, ?grace_period=abc, read as open_storage() reads them), if it does
// not; the text shows no password. For the study file's `storage:` and the --storage flag, so
// both fail as bad input before anything is opened.
std::optional<std::string> storage_url_problem(const std::string& url);

}  // namespace tune::tuner
