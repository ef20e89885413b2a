#include "tuner/storage/storage_url.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>
#include <vector>

#include "tuner/base/text.h"
#include "tuner/storage/postgres_storage.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

constexpr std::string_view k_sqlite = "sqlite:///";

// A URL in the pieces that hold a password: "scheme://" [user [":" password] "@"] location
// ["?" query]. Each piece as written (percent-encoded); join_url() puts them back as they were.
struct UrlPieces {
  std::string scheme;                   // "postgresql://"; empty for a plain path
  bool has_user_info = false;           // an '@' before the location
  std::string user;                     // the user info before its ':'
  std::optional<std::string> password;  // after that ':', when there is one
  std::string location;                 // host, port and database; or a file path
  bool has_query = false;
  std::vector<std::string> query;  // its items, "key=value", empty ones kept
};

// A plain path is never cut: a file name may hold '@' or '?'. Neither is an SQLite URL's path
// (sqlite:////abs/path: no user info); its query is cut, as open_storage() reads one.
UrlPieces split_url(std::string_view url) {
  UrlPieces u;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    u.location = url;
    return u;
  }
  u.scheme = url.substr(0, scheme_end + 3);
  std::string_view rest = url.substr(scheme_end + 3);
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    u.has_query = true;
    std::string_view query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    while (true) {
      const auto amp = query.find('&');
      u.query.emplace_back(query.substr(0, amp));
      if (amp == std::string_view::npos) break;
      query = query.substr(amp + 1);
    }
  }
  if (!rest.starts_with('/')) {
    // The last '@': a password with an unencoded '@' (a common slip) stays in the user info.
    if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
      u.has_user_info = true;
      const std::string_view info = rest.substr(0, at);
      const auto colon = info.find(':');
      u.user = info.substr(0, colon);
      if (colon != std::string_view::npos) u.password = std::string(info.substr(colon + 1));
      rest = rest.substr(at + 1);
    }
  }
  u.location = rest;
  return u;
}

std::string join_url(const UrlPieces& u) {
  std::string url = u.scheme;
  if (u.has_user_info) url += u.user + (u.password ? ":" + *u.password : "") + "@";
  url += u.location;
  if (u.has_query) {
    url += '?';
    for (std::size_t i = 0; i < u.query.size(); ++i) url += (i ? "&" : "") + u.query[i];
  }
  return url;
}

// "%41b" -> "Ab"; nullopt for a '%' not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    int byte = 0;
    if (i + 2 >= text.size()) return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, byte, 16);
    if (ec != std::errc() || end != text.data() + i + 3) return std::nullopt;
    out += static_cast<char>(byte);
    i += 2;
  }
  return out;
}

// Whether a query item ("password=x", "pass%77ord=x") sets libpq's password.
bool is_password_item(std::string_view item) {
  return percent_decode(item.substr(0, item.find('='))) == "password";
}

// The value of a query item, after its '='.
std::string_view item_value(std::string_view item) {
  const auto eq = item.find('=');
  return eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
}

// "synchronous=normal&grace_period=5m" (the URL's query items) into `options`. Keys tune does
// not know are an error, or, given `others` (PostgreSQL's URL, whose other keys are libpq's),
// kept there. Errors name the item, never the URL (whose password they could show).
Result<void> parse_url_options(const std::vector<std::string>& items, StorageOptions& options,
                               std::string* others = nullptr) {
  for (const std::string& item : items) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value(item_value(item));
    if (key == "synchronous") {
      if (value != "full" && value != "normal") {
        return std::unexpected(
            fmt::format("synchronous={}: expected full (survives power loss) or normal", value));
      }
      options.synchronous_full = value == "full";
    } else if (key == "grace_period" || key == "retry_for") {
      auto d = parse_duration(value);
      if (!d || *d <= 0) {
        return std::unexpected(
            fmt::format("{}={}: expected a positive duration (e.g. 120s, 5m)", key, value));
      }
      (key == "grace_period" ? options.grace_period_s : options.retry_s) = *d;
    } else if (others) {
      *others += fmt::format("{}{}", others->empty() ? "" : "&", item);
    } else {
      return std::unexpected(
          fmt::format("unknown option '{}' (known: synchronous, grace_period, retry_for)", key));
    }
  }
  return {};
}

// A postgresql:// URL read into what libpq connects with: the URL without tune's options and
// without the password, which goes to libpq on its own (so that no message of libpq's, which may
// quote the URL, can hold it); "" leaves it to PGPASSWORD or ~/.pgpass.
struct PostgresTarget {
  std::string conninfo;
  std::string password;
  std::string shown;  // the server in messages: postgresql://user:***@host:port/db
};

Result<PostgresTarget> postgres_target(const std::string& url, StorageOptions& options) {
  UrlPieces u = split_url(url);
  PostgresTarget target;
  const auto decoded = [](std::string_view text) -> Result<std::string> {
    auto d = percent_decode(text);
    if (!d) return std::unexpected("the password holds a '%' that is not %XX (percent-encode it)");
    return *d;
  };
  if (u.password) {
    auto p = decoded(*u.password);
    if (!p) return std::unexpected(p.error());
    target.password = std::move(*p);
  }
  std::vector<std::string> items;
  for (const auto& item : u.query) {
    if (!is_password_item(item)) {
      items.push_back(item);
      continue;
    }
    auto p = decoded(item_value(item));  // libpq reads the query after the user info
    if (!p) return std::unexpected(p.error());
    target.password = std::move(*p);
  }
  std::string libpq_options;
  if (auto r = parse_url_options(items, options, &libpq_options); !r)
    return std::unexpected(r.error());
  if (u.password) u.password = std::string(k_redacted);
  u.query.clear();
  u.has_query = false;
  u.scheme = "postgresql://";  // SQLAlchemy's postgresql+psycopg2:// is libpq's postgresql://
  target.shown = join_url(u);
  u.password.reset();
  target.conninfo = join_url(u) + (libpq_options.empty() ? "" : "?" + libpq_options);
  if (auto why = PostgresStorage::conninfo_problem(target.conninfo)) return std::unexpected(*why);
  return target;
}

// A postgresql:// URL (SQLAlchemy's postgresql+psycopg2:// too) opened with libpq; tune's
// options are taken out of the query, the rest (sslmode=..., connect_timeout=...) stays.
Result<std::unique_ptr<Storage>> open_postgres(const std::string& url, StorageOptions options) {
  auto target = postgres_target(url, options);
  if (!target)
    return std::unexpected(
        fmt::format("storage '{}': {}", redact_storage_url(url), target.error()));
  auto storage = PostgresStorage::open(target->conninfo, target->password, target->shown, options);
  if (!storage) return std::unexpected(storage.error());
  return std::unique_ptr<Storage>(std::move(*storage));
}

}  // namespace

bool is_postgres_url(const std::string& url) {
  for (const char* scheme : {"postgresql://", "postgres://", "postgresql+"}) {
    if (url.starts_with(scheme)) return true;
  }
  return false;
}

std::string redact_storage_url(const std::string& url) {
  UrlPieces u = split_url(url);
  bool changed = false;
  if (u.password && !u.password->empty()) {
    u.password = std::string(k_redacted);
    changed = true;
  }
  for (auto& item : u.query) {
    if (is_password_item(item)) {
      item = item.substr(0, item.find('=')) + "=" + std::string(k_redacted);
      changed = true;
    }
  }
  return changed ? join_url(u) : url;
}

std::string storage_url_without_password(const std::string& url) {
  UrlPieces u = split_url(url);
  const auto before = u.query.size();
  std::erase_if(u.query, [](const std::string& item) { return is_password_item(item); });
  if (!u.password && u.query.size() == before) return url;
  u.password.reset();
  if (u.query.empty()) u.has_query = false;
  return join_url(u);
}

bool word_holds_password(std::string_view word, std::string* redacted) {
  constexpr std::string_view flag = "--storage=";
  const std::string_view prefix = word.starts_with(flag) ? flag : std::string_view{};
  const std::string url(word.substr(prefix.size()));
  if (!url.contains("://")) return false;
  std::string shown = redact_storage_url(url);
  if (shown == url) return false;
  if (redacted != nullptr) *redacted = std::string(prefix) + shown;
  return true;
}

std::optional<std::string> sqlite_file_of(const std::string& url) {
  if (!url.starts_with(k_sqlite)) {
    if (url.contains("://")) return std::nullopt;
    return url;
  }
  std::string path = url.substr(k_sqlite.size());
  if (const auto q = path.find('?'); q != std::string::npos) path.resize(q);
  return path;
}

Result<std::unique_ptr<Storage>> open_storage(const std::string& url, OpenMode mode) {
  StorageOptions options;
  options.mode = mode;
  if (is_postgres_url(url)) return open_postgres(url, options);
  if (url.contains("://") && !url.starts_with(k_sqlite)) {
    return std::unexpected(fmt::format(
        "storage '{}': expected sqlite:///path.db, a file path or postgresql://user@host/db",
        redact_storage_url(url)));
  }
  std::string path = url;
  if (url.starts_with(k_sqlite)) {
    const UrlPieces u = split_url(url);
    if (auto r = parse_url_options(u.query, options); !r) {
      return std::unexpected(fmt::format("storage '{}': {}", redact_storage_url(url), r.error()));
    }
    path = u.location.substr(1);  // "sqlite:///x.db": the location is "/x.db"
  }
  if (path.empty()) return std::unexpected(fmt::format("storage '{}': empty database path", url));
  auto storage = SqliteStorage::open(path, options);
  if (!storage) return std::unexpected(storage.error());
  return std::unique_ptr<Storage>(std::move(*storage));
}

std::optional<std::string> storage_url_problem(const std::string& url) {
  if (has_control_char(url)) return "holds a control character";
  if (url.contains("://") && !url.starts_with(k_sqlite) && !is_postgres_url(url))
    return "expected sqlite:///path.db, a file path or postgresql://user@host:port/db";
  if (url == k_sqlite) return "names no database file (sqlite:///path.db)";
  StorageOptions options;
  if (is_postgres_url(url)) {
    if (auto target = postgres_target(url, options); !target) return target.error();
  } else if (url.starts_with(k_sqlite)) {
    if (auto r = parse_url_options(split_url(url).query, options); !r) return r.error();
  }
  return std::nullopt;
}

}  // namespace tune::tuner
