#include "tuner/storage/storage.h"

#include <fmt/format.h>
#include <algorithm>

#include "tuner/storage/postgres_storage.h"
#include "tuner/storage/sqlite_storage.h"
#include "tuner/base/text.h"

namespace tune::tuner {
namespace {

// "synchronous=normal&grace_period=5m" into `options`. Keys tune does not know are an error,
// or, given `others` (PostgreSQL's URL, whose other keys are libpq's), kept there.
Result<void> parse_url_options(const std::string& url, std::string_view query,
                               StorageOptions& options, std::string* others = nullptr) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string key(item.substr(0, eq));
    const std::string value(eq == std::string_view::npos ? "" : item.substr(eq + 1));
    if (key == "synchronous") {
      if (value != "full" && value != "normal") {
        return std::unexpected(fmt::format(
            "storage '{}': synchronous={}: expected full (survives power loss) or normal", url,
            value));
      }
      options.synchronous_full = value == "full";
    } else if (key == "grace_period" || (others && key == "retry_for")) {
      auto d = parse_duration(value);
      if (!d || *d <= 0) {
        return std::unexpected(fmt::format(
            "storage '{}': {}={}: expected a positive duration (e.g. 120s, 5m)", url, key, value));
      }
      (key == "grace_period" ? options.grace_period_s : options.retry_s) = *d;
    } else if (others) {
      *others += fmt::format("{}{}", others->empty() ? "" : "&", item);
    } else {
      return std::unexpected(fmt::format(
          "storage '{}': unknown option '{}' (known: synchronous, grace_period)", url, key));
    }
  }
  return {};
}

// A postgresql:// URL (SQLAlchemy's postgresql+psycopg2:// too) opened with libpq; tune's
// options are taken out of the query, the rest (sslmode=..., connect_timeout=...) stays.
Result<std::unique_ptr<Storage>> open_postgres(const std::string& url, StorageOptions options) {
  const auto scheme_end = url.find("://");
  std::string rest = url.substr(scheme_end + 3);
  std::string libpq_options;
  if (const auto q = rest.find('?'); q != std::string::npos) {
    auto r = parse_url_options(url, std::string_view(rest).substr(q + 1), options, &libpq_options);
    if (!r) return std::unexpected(r.error());
    rest.resize(q);
  }
  const std::string conninfo =
      "postgresql://" + rest + (libpq_options.empty() ? "" : "?" + libpq_options);
  // Messages name the server without the password.
  std::string shown = rest;
  if (const auto at = shown.find('@'); at != std::string::npos) {
    if (const auto colon = shown.find(':'); colon < at) shown.replace(colon, at - colon, ":***");
  }
  auto storage = PostgresStorage::open(conninfo, "postgresql://" + shown, options);
  if (!storage) return std::unexpected(storage.error());
  return std::unique_ptr<Storage>(std::move(*storage));
}

constexpr std::string_view k_sqlite = "sqlite:///";

}  // namespace

bool is_postgres_url(const std::string& url) {
  for (const char* scheme : {"postgresql://", "postgres://", "postgresql+"}) {
    if (url.starts_with(scheme)) return true;
  }
  return false;
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
  std::string path = url;
  if (url.starts_with(k_sqlite)) {
    path = url.substr(k_sqlite.size());
    if (const auto q = path.find('?'); q != std::string::npos) {
      if (auto r = parse_url_options(url, std::string_view(path).substr(q + 1), options); !r) {
        return std::unexpected(r.error());
      }
      path.resize(q);
    }
  } else if (is_postgres_url(url)) {
    return open_postgres(url, options);
  } else if (url.find("://") != std::string::npos) {
    return std::unexpected(fmt::format(
        "storage '{}': expected sqlite:///path.db, a file path or postgresql://user@host/db", url));
  }
  if (path.empty()) return std::unexpected(fmt::format("storage '{}': empty database path", url));
  auto storage = SqliteStorage::open(path, options);
  if (!storage) return std::unexpected(storage.error());
  return std::unique_ptr<Storage>(std::move(*storage));
}

Result<void> StudyCache::sync() {
  std::vector<std::int64_t> refresh = std::move(m_stale);
  m_stale.clear();
  for (const auto& t : m_trials) {
    if (!t.is_finished()) refresh.push_back(t.trial_id);
  }
  auto delta = m_storage.get_trials_since(m_study.study_id, m_max_trial_id, refresh);
  if (!delta) {
    m_stale = std::move(refresh);  // a later sync tries them again
    return std::unexpected(delta.error());
  }
  for (auto& t : *delta) {
    m_max_trial_id = std::max(m_max_trial_id, t.trial_id);
    auto it = std::lower_bound(m_trials.begin(), m_trials.end(), t.number,
                               [](const search::FrozenTrial& a, int n) { return a.number < n; });
    if (it != m_trials.end() && it->number == t.number) {
      *it = std::move(t);
    } else {
      m_trials.insert(it, std::move(t));
    }
  }
  return {};
}

std::optional<std::string> storage_url_problem(const std::string& url) {
  constexpr std::string_view k_sqlite = "sqlite:///";
  if (has_control_char(url)) return "holds a control character";
  if (url.contains("://") && !url.starts_with(k_sqlite) && !is_postgres_url(url))
    return "expected sqlite:///path.db, a file path or postgresql://user@host:port/db";
  if (url == k_sqlite) return "names no database file (sqlite:///path.db)";
  return std::nullopt;
}

}  // namespace tune::tuner
