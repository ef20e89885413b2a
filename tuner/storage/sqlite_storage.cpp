#include "tuner/storage/sqlite_storage.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <sqlite3.h>

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "tuner/storage/optuna_schema.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// One use of a cached prepared statement (SqliteStorage::m_statements): reset, with its
// bindings cleared, when the use ends, however it ends, so the next use starts afresh.
class Stmt {
 public:
  explicit Stmt(sqlite3_stmt* stmt) : m_stmt(stmt) {}
  ~Stmt() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(m_stmt, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(m_stmt, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, std::monostate) {
    sqlite3_bind_null(m_stmt, i);
    return *this;
  }
  Stmt& bind(int i, const SqlValue& v) {
    std::visit([&](const auto& x) { bind(i, x); }, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(m_stmt); }
  // The current row, each cell as SQLite typed it.
  SqlRow row() const {
    std::vector<SqlValue> cells;
    const int n = sqlite3_column_count(m_stmt);
    for (int col = 0; col < n; ++col) {
      switch (sqlite3_column_type(m_stmt, col)) {
        case SQLITE_NULL:
          cells.emplace_back();
          break;
        case SQLITE_INTEGER:
          cells.emplace_back(sqlite3_column_int64(m_stmt, col));
          break;
        case SQLITE_FLOAT:
          cells.emplace_back(sqlite3_column_double(m_stmt, col));
          break;
        default: {
          const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, col));
          cells.emplace_back(std::string(p ? p : "", sqlite3_column_bytes(m_stmt, col)));
        }
      }
    }
    return SqlRow(std::move(cells));
  }

 private:
  sqlite3_stmt* m_stmt = nullptr;
};

// BEGIN (IMMEDIATE for writes) ... COMMIT; rolls back unless committed. A write_flush
// transaction commits with synchronous=FULL, so it is on disk when commit() returns, and with it
// every commit before it: the write-ahead log is one file, appended in order, and FULL fsyncs
// all of it. BEGIN IMMEDIATE takes the write lock at once, so writers of one file run one at a
// time (trial numbers stay unique) and a reader's snapshot never needs upgrading.
class Transaction {
 public:
  Transaction(sqlite3* db, TxnKind kind) : m_db(db), m_flush(kind == TxnKind::write_flush) {
    if (m_flush) sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
    const char* begin = kind == TxnKind::read ? "BEGIN" : "BEGIN IMMEDIATE";
    m_ok = sqlite3_exec(db, begin, nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~Transaction() {
    if (m_ok && !m_done) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    if (m_flush) sqlite3_exec(m_db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  bool ok() const { return m_ok; }
  Result<void> commit() {
    if (sqlite3_exec(m_db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return std::unexpected(std::string("commit failed: ") + sqlite3_errmsg(m_db));
    }
    m_done = true;
    return {};
  }

 private:
  sqlite3* m_db;
  bool m_flush;
  bool m_ok = false;
  bool m_done = false;
};

std::unexpected<std::string> db_error(sqlite3* db, const char* what) {
  return std::unexpected(fmt::format("sqlite: {}: {}", what, sqlite3_errmsg(db)));
}

// The fragments of RdbStorage's statements in SQLite's words. Writers are serialised by BEGIN
// IMMEDIATE, so no row locks. Times are SQLite's clock ('now' is UTC), with microseconds.
constexpr SqlDialect k_dialect{
    .now_utc = "strftime('%Y-%m-%d %H:%M:%f000', 'now')",
    .heartbeat_utc = "CURRENT_TIMESTAMP",
    .age_seconds = "(julianday('now') - julianday({})) * 86400.0",
    .datetime_text = "{}",
    .for_update = "",
    .skip_locked = "",
    .in_id_list = "{} IN (SELECT value FROM json_each(?))",
    .list_open = '[',
    .list_close = ']',
    .serialize_study_creation = "",
    .study_of_listed_trials = "+study_id = ?",
};

// A file: URI for sqlite3_open_v2 with SQLITE_OPEN_URI (the path percent-encoded).
std::string file_uri(const std::string& path, const char* query) {
  std::string uri = "file://";
  for (unsigned char c : fs::absolute(path).string()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?" + query;
}

// The database header says WAL when its read and write format versions (bytes 18, 19) are 2.
bool header_says_wal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[20] = {};
  if (!in.read(header, sizeof header)) return false;
  return std::string_view(header, 16) == std::string_view("SQLite format 3\0", 16) &&
         header[18] == 2 && header[19] == 2;
}

Result<sqlite3*> open_connection(const std::string& path, const std::string& name, int flags,
                                 double retry_s) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(name.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return std::unexpected(fmt::format("{}: cannot open database: {}", path, msg));
  }
  // Several tune processes may share the file: wait for each other's write transactions, and
  // for a lock another program holds, as long as retry_for allows: a call then fails ("database
  // is locked") rather than hold tune for as long as the lock is held.
  sqlite3_busy_timeout(db, static_cast<int>(std::clamp(retry_s * 1000.0, 1.0, 2.0e9)));
  return db;
}

}  // namespace

SqliteStorage::SqliteStorage(std::string path, const StorageOptions& options)
    : RdbStorage(k_dialect, options, path), m_path(std::move(path)) {}

Result<std::unique_ptr<SqliteStorage>> SqliteStorage::open(const std::string& path,
                                                           const StorageOptions& options) {
  auto storage = std::unique_ptr<SqliteStorage>(new SqliteStorage(path, options));
  if (auto r = storage->connect(); !r) return std::unexpected(r.error());
  return storage;
}

Result<void> SqliteStorage::connect() {
  if (m_options.mode == OpenMode::read_only) return connect_read_only();
  std::error_code ec;
  if (const auto parent = fs::path(m_path).parent_path(); !parent.empty()) {
    fs::create_directories(parent, ec);  // a sqlite:/// URL's folder, like a plain path's
  }
  auto db = open_connection(m_path, m_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            m_options.retry_s);
  if (!db) return std::unexpected(db.error());
  m_db = *db;
  if (struct stat st{}; ::stat(m_path.c_str(), &st) == 0)
    m_file_id = std::pair<std::uint64_t, std::uint64_t>(st.st_dev, st.st_ino);
  if (sqlite3_db_readonly(m_db, "main") == 1) {
    struct statvfs fs_info {};
    const bool read_only_fs =
        statvfs(m_path.c_str(), &fs_info) == 0 && (fs_info.f_flag & ST_RDONLY);
    return std::unexpected(fmt::format("{}: {} (tune best, trials, report and export only read it)",
                                       m_path,
                                       read_only_fs ? "the database is on a read-only file system"
                                                    : "this user may not write the database"));
  }
  // Workers that open a new database at the same moment both hold a read lock and both want
  // the write lock to switch it to WAL; SQLite answers one of them SQLITE_BUSY at once (the busy
  // handler cannot help: waiting would deadlock). That one retries after a short random pause,
  // bounded like the busy timeout, and then finds the database in WAL mode already.
  std::mt19937 jitter(static_cast<unsigned>(getpid()));
  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(m_options.retry_s));
  while (true) {
    // NORMAL flushes the write-ahead log only at checkpoints; every commit is in the log, which
    // the OS holds, so a crash of any process loses none. With synchronous_full a trial's
    // creation (its number: on disk before it starts) and its end commit with FULL (a flushing
    // Transaction), which flushes them and all before them, so a power loss cannot take a
    // number back after a worker started that trial, nor a finished trial.
    auto r = exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    if (r) r = create_schema();
    if (r) return {};
    const bool busy = (sqlite3_extended_errcode(m_db) & 0xff) == SQLITE_BUSY;
    if (!busy || std::chrono::steady_clock::now() >= give_up) {
      return std::unexpected(fmt::format("{}: {}", m_path, r.error()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + jitter() % 45));
  }
}

Result<void> SqliteStorage::connect_read_only() {
  std::error_code ec;
  if (!fs::is_regular_file(m_path, ec)) {
    return std::unexpected(fmt::format("{}: no such database", m_path));
  }
  Result<void> checked;
  // A writer that closes between the look at -wal and the open takes the -wal file with it:
  // look again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    close();
    m_immutable = header_says_wal(m_path) && !fs::exists(m_path + "-wal", ec);
    auto db = open_connection(m_path, file_uri(m_path, m_immutable ? "immutable=1" : "mode=ro"),
                              SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, m_options.retry_s);
    if (!db) return std::unexpected(db.error());
    m_db = *db;
    checked = check_schema();
    if (checked || m_immutable || fs::exists(m_path + "-wal", ec)) break;
  }
  if (!checked) return std::unexpected(fmt::format("{}: {}", m_path, checked.error()));
  return {};
}

// An immutable reader sees the file as last checkpointed; once a writer has the database open
// (its -wal file exists), newer commits are in the log, so read through SQLite's locks again.
Result<void> SqliteStorage::reader_follows_writers() {
  std::error_code ec;
  if (!m_immutable || !fs::exists(m_path + "-wal", ec)) return {};
  return connect_read_only();
}

SqliteStorage::~SqliteStorage() { close(); }

void SqliteStorage::drop_statements() {
  for (auto& [text, stmt] : m_statements) sqlite3_finalize(stmt);
  m_statements.clear();
}

void SqliteStorage::close() {
  drop_statements();
  sqlite3_close(m_db);
  m_db = nullptr;
}

Result<int> SqliteStorage::synchronous_level() {
  auto rows = query("PRAGMA synchronous", {});
  if (!rows || rows->empty()) return db_error(m_db, "PRAGMA synchronous");
  return static_cast<int>(rows->front().int64(0));
}

Result<void> SqliteStorage::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(m_db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return std::unexpected("sqlite: " + msg);
  }
  return {};
}

Result<void> SqliteStorage::create_schema() {
  Transaction txn(m_db, m_options.synchronous_full ? TxnKind::write_flush : TxnKind::write);
  if (!txn.ok()) return db_error(m_db, "begin");
  if (auto r = exec(optuna_schema_sql(SqlFlavor::sqlite).c_str()); !r) return r;
  if (auto r = check_schema(); !r) return r;
  if (auto r = exec(tune_extras_sql().c_str()); !r) return r;
  m_change_log = true;
  return txn.commit();
}

Result<void> SqliteStorage::check_schema() {
  auto failed = [this]() -> std::unexpected<std::string> {
    if (sqlite3_extended_errcode(m_db) == SQLITE_READONLY_DIRECTORY ||
        sqlite3_errcode(m_db) == SQLITE_CANTOPEN) {
      // A -wal file without its -shm, in a folder this user may not write.
      return std::unexpected(fmt::format(
          "cannot read the write-ahead log without creating {}-shm ({}); run tune as a user "
          "who may write the folder, or read a copy",
          m_path, sqlite3_errmsg(m_db)));
    }
    if (sqlite3_errcode(m_db) == SQLITE_ERROR) {
      return std::unexpected(
          fmt::format("not a study database of tune or Optuna ({})", sqlite3_errmsg(m_db)));
    }
    return db_error(m_db, "read schema version");
  };
  auto rows = query(k_version_query, {});
  if (!rows) return failed();
  if (auto r = check_version_rows(*rows); !r) return r;
  // A database an older tune (or Optuna alone) wrote has no change count until tune opens it
  // for writing.
  auto changes = query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                       {std::string(k_tune_changes_table)});
  if (!changes) return failed();
  m_change_log = !changes->empty();
  return {};
}

StorageResult<SqlRows> SqliteStorage::query(std::string_view sql,
                                            const std::vector<SqlValue>& params) {
  constexpr std::size_t k_max_statements = 256;  // tune's statements are a few dozen texts
  auto it = m_statements.find(sql);
  if (it == m_statements.end()) {
    if (m_statements.size() >= k_max_statements) drop_statements();
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(m_db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
        SQLITE_OK) {
      sqlite3_finalize(stmt);
      return db_error(m_db, "prepare");
    }
    it = m_statements.emplace(std::string(sql), stmt).first;
  }
  Stmt st(it->second);
  for (std::size_t i = 0; i < params.size(); ++i) st.bind(static_cast<int>(i + 1), params[i]);
  SqlRows rows;
  while (true) {
    const int rc = st.step();
    if (rc == SQLITE_DONE) return rows;
    if (rc != SQLITE_ROW) return std::unexpected(fmt::format("sqlite: {}", sqlite3_errmsg(m_db)));
    rows.push_back(st.row());
  }
}

std::string SqliteStorage::file_gone() const {
  if (!m_file_id) return {};
  struct stat st {};
  if (::stat(m_path.c_str(), &st) != 0)
    return errno == ENOENT
               ? "the database file was removed while tune ran"
               : fmt::format("the database file cannot be looked at ({})", std::strerror(errno));
  if (std::pair<std::uint64_t, std::uint64_t>(st.st_dev, st.st_ino) != *m_file_id)
    return "the database file was replaced by another while tune ran";
  return {};
}

StorageResult<void> SqliteStorage::transact(TxnKind kind,
                                            const std::function<StorageResult<void>()>& body) {
  if (kind == TxnKind::read || kind == TxnKind::statement) {
    if (auto r = reader_follows_writers(); !r) return r;
  }
  // Nothing is written where nobody will find it: a write to a removed or replaced file fails,
  // and its trial's result waits in its folder as for a database that does not answer.
  if (kind != TxnKind::read) {
    if (auto gone = file_gone(); !gone.empty())
      return std::unexpected(
          StorageError(StorageErrorKind::other,
                       fmt::format("{}: {}; nothing more is stored in it", m_path, gone)));
  }
  // A statement alone commits by itself (SQLite's autocommit), waiting on the busy timeout.
  if (kind == TxnKind::statement) return body();
  Transaction txn(m_db, kind);
  if (!txn.ok()) return db_error(m_db, "begin");
  // When the body failed, its error is the one to report (the destructor rolls back).
  if (auto r = body(); !r) return r;
  return txn.commit();
}

}  // namespace tune::tuner
