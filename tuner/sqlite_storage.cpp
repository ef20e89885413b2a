#include "tuner/sqlite_storage.h"

#include <unistd.h>

#include <sqlite3.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::FrozenTrial;
using search::TrialState;

// Optuna 3.1's schema as `.schema` prints it for a database created by python3-optuna.
constexpr const char* k_schema = R"sql(
CREATE TABLE IF NOT EXISTS studies (
	study_id INTEGER NOT NULL, 
	study_name VARCHAR(512) NOT NULL, 
	PRIMARY KEY (study_id)
);
CREATE UNIQUE INDEX IF NOT EXISTS ix_studies_study_name ON studies (study_name);
CREATE TABLE IF NOT EXISTS version_info (
	version_info_id INTEGER NOT NULL, 
	schema_version INTEGER, 
	library_version VARCHAR(256), 
	PRIMARY KEY (version_info_id), 
	CHECK (version_info_id=1)
);
CREATE TABLE IF NOT EXISTS study_directions (
	study_direction_id INTEGER NOT NULL, 
	direction VARCHAR(8) NOT NULL, 
	study_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	PRIMARY KEY (study_direction_id), 
	UNIQUE (study_id, objective), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS study_user_attributes (
	study_user_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_user_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS study_system_attributes (
	study_system_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_system_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS trials (
	trial_id INTEGER NOT NULL, 
	number INTEGER, 
	study_id INTEGER, 
	state VARCHAR(8) NOT NULL, 
	datetime_start DATETIME, 
	datetime_complete DATETIME, 
	PRIMARY KEY (trial_id), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS trial_user_attributes (
	trial_user_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_user_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_system_attributes (
	trial_system_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_system_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_params (
	param_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	param_name VARCHAR(512), 
	param_value FLOAT, 
	distribution_json TEXT, 
	PRIMARY KEY (param_id), 
	UNIQUE (trial_id, param_name), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_values (
	trial_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	value FLOAT, 
	value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_value_id), 
	UNIQUE (trial_id, objective), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_intermediate_values (
	trial_intermediate_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	step INTEGER NOT NULL, 
	intermediate_value FLOAT, 
	intermediate_value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_intermediate_value_id), 
	UNIQUE (trial_id, step), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_heartbeats (
	trial_heartbeat_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	heartbeat DATETIME NOT NULL, 
	PRIMARY KEY (trial_heartbeat_id), 
	UNIQUE (trial_id), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
INSERT OR IGNORE INTO version_info (version_info_id, schema_version, library_version)
  VALUES (1, 12, '3.1.0');
INSERT INTO alembic_version (version_num)
  SELECT 'v3.0.0.d' WHERE NOT EXISTS (SELECT 1 FROM alembic_version);
)sql";

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : m_db(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr) != SQLITE_OK) m_stmt = nullptr;
  }
  ~Stmt() { sqlite3_finalize(m_stmt); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return m_stmt != nullptr; }
  std::string error() const { return sqlite3_errmsg(m_db); }
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
  template <typename... Ts>
  Stmt& bind(int i, const std::variant<Ts...>& v) {
    std::visit([&](const auto& x) { bind(i, x); }, v);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(m_stmt, i);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(m_stmt); }
  bool is_null(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
  std::int64_t int64(int col) const { return sqlite3_column_int64(m_stmt, col); }
  double real(int col) const { return sqlite3_column_double(m_stmt, col); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(m_stmt, col);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  }

 private:
  sqlite3* m_db;
  sqlite3_stmt* m_stmt = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back unless committed. A `flush` transaction commits with
// synchronous=FULL, so it is on disk when commit() returns, and with it every commit before it:
// the write-ahead log is one file, appended in order, and FULL fsyncs all of it.
class Transaction {
 public:
  Transaction(sqlite3* db, bool flush) : m_db(db), m_flush(flush) {
    if (m_flush) sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
    m_ok = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
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

// Optuna's DATETIME columns hold naive datetimes, "YYYY-MM-DD HH:MM:SS.ffffff". tune writes
// them in UTC: Optuna's own heartbeats on SQLite are UTC (CURRENT_TIMESTAMP), and only UTC lets
// hosts in different time zones compare a trial's age (Optuna writes datetime_start in local
// time; a study continued from Optuna's local times is shifted by the zone's offset in reports).
std::string format_datetime(std::chrono::system_clock::time_point tp) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(us.count() / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:06}", buf, us.count() % 1000000);
}

std::optional<std::chrono::system_clock::time_point> parse_datetime(const std::string& s) {
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%d %H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  const std::time_t secs = timegm(&tm);
  long micros = 0;
  if (*rest == '.') {
    std::string frac = std::string(rest + 1).substr(0, 6);
    frac.resize(6, '0');
    micros = std::strtol(frac.c_str(), nullptr, 10);
  }
  return std::chrono::system_clock::from_time_t(secs) + std::chrono::microseconds(micros);
}

std::string now_text() { return format_datetime(std::chrono::system_clock::now()); }

std::optional<TrialState> parse_state(const std::string& s) {
  for (auto st : {TrialState::running, TrialState::complete, TrialState::pruned, TrialState::fail,
                  TrialState::waiting}) {
    if (s == search::to_string(st)) return st;
  }
  return std::nullopt;
}

bool is_finished(TrialState s) {
  return s == TrialState::complete || s == TrialState::pruned || s == TrialState::fail;
}

// Optuna's value_type column: FINITE, INF_POS, INF_NEG (and NAN for intermediate values).
const char* value_type(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INF_POS" : "INF_NEG";
  return "FINITE";
}

double value_from_row(const Stmt& st, int value_col, int type_col) {
  const std::string type = st.text(type_col);
  if (type == "INF_POS") return HUGE_VAL;
  if (type == "INF_NEG") return -HUGE_VAL;
  if (type == "NAN" || st.is_null(value_col)) return std::nan("");
  return st.real(value_col);
}

// A heartbeat exactly as Optuna writes one on SQLite: CURRENT_TIMESTAMP, UTC in whole seconds.
// Optuna's fail_stale_trials() takes `(CURRENT_TIMESTAMP - heartbeat).seconds`, which for a
// heartbeat with microseconds, a fraction of a second "ahead", wraps to a day and fails a live
// trial.
Result<void> insert_heartbeat(sqlite3* db, std::int64_t trial_id) {
  Stmt st(db,
          "INSERT INTO trial_heartbeats (trial_id, heartbeat) VALUES (?, CURRENT_TIMESTAMP) "
          "ON CONFLICT(trial_id) DO UPDATE SET heartbeat = excluded.heartbeat");
  if (!st.ok()) return db_error(db, "record_heartbeat");
  st.bind(1, trial_id);
  if (st.step() != SQLITE_DONE) return db_error(db, "record_heartbeat");
  return {};
}

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

Result<sqlite3*> open_connection(const std::string& path, const std::string& name, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(name.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return std::unexpected(fmt::format("{}: cannot open database: {}", path, msg));
  }
  // Several tune processes may share the file: wait for each other's write transactions.
  sqlite3_busy_timeout(db, 60000);
  return db;
}

}  // namespace

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
  auto db = open_connection(m_path, m_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return std::unexpected(db.error());
  m_db = *db;
  if (sqlite3_db_readonly(m_db, "main") == 1) {
    return std::unexpected(fmt::format(
        "{}: this user may not write the database (tune best, trials, report and export only "
        "read it)",
        m_path));
  }
  // Workers that open a new database at the same moment both hold a read lock and both want
  // the write lock to switch it to WAL; SQLite answers one of them SQLITE_BUSY at once (the busy
  // handler cannot help: waiting would deadlock). That one retries after a short random pause,
  // bounded like the busy timeout, and then finds the database in WAL mode already.
  std::mt19937 jitter(static_cast<unsigned>(getpid()));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    // NORMAL flushes the write-ahead log only at checkpoints; with synchronous_full a trial's
    // end commits with FULL (a flushing Transaction), which flushes it and all before it.
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
    sqlite3_close(m_db);
    m_db = nullptr;
    m_immutable = header_says_wal(m_path) && !fs::exists(m_path + "-wal", ec);
    auto db = open_connection(m_path, file_uri(m_path, m_immutable ? "immutable=1" : "mode=ro"),
                              SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
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

SqliteStorage::~SqliteStorage() { sqlite3_close(m_db); }

Result<int> SqliteStorage::synchronous_level() {
  Stmt st(m_db, "PRAGMA synchronous");
  if (!st.ok() || st.step() != SQLITE_ROW) return db_error(m_db, "PRAGMA synchronous");
  return static_cast<int>(st.int64(0));
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
  Transaction txn(m_db, m_options.synchronous_full);
  if (!txn.ok()) return db_error(m_db, "begin");
  if (auto r = exec(k_schema); !r) return r;
  if (auto r = check_schema(); !r) return r;
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
  Stmt st(m_db, "SELECT schema_version, library_version FROM version_info WHERE version_info_id=1");
  if (!st.ok()) return failed();
  const int rc = st.step();
  if (rc == SQLITE_ROW && st.int64(0) != 12) {
    return std::unexpected(fmt::format(
        "database schema version {} (library {}) is not Optuna 3.1's schema 12; upgrade or use "
        "another file",
        st.int64(0), st.text(1)));
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return failed();
  return {};
}

Result<StudyInfo> SqliteStorage::get_study(const std::string& name) {
  if (auto r = reader_follows_writers(); !r) return std::unexpected(r.error());
  Stmt st(m_db,
          "SELECT s.study_id, d.direction FROM studies s LEFT JOIN study_directions d "
          "ON d.study_id = s.study_id AND d.objective = 0 WHERE s.study_name = ?");
  if (!st.ok()) return db_error(m_db, "get_study");
  st.bind(1, name);
  if (st.step() != SQLITE_ROW) {
    return std::unexpected(fmt::format("no study named '{}' in {}", name, m_path));
  }
  StudyInfo info{
      st.int64(0), name,
      st.text(1) == "MAXIMIZE" ? search::Direction::maximize : search::Direction::minimize};
  return info;
}

Result<std::vector<StudyInfo>> SqliteStorage::get_all_studies() {
  if (auto r = reader_follows_writers(); !r) return std::unexpected(r.error());
  Stmt st(m_db,
          "SELECT s.study_id, s.study_name, d.direction FROM studies s LEFT JOIN study_directions "
          "d ON d.study_id = s.study_id AND d.objective = 0 ORDER BY s.study_id");
  if (!st.ok()) return db_error(m_db, "get_all_studies");
  std::vector<StudyInfo> out;
  while (st.step() == SQLITE_ROW) {
    out.push_back(
        {st.int64(0), st.text(1),
         st.text(2) == "MAXIMIZE" ? search::Direction::maximize : search::Direction::minimize});
  }
  return out;
}

Result<StudyInfo> SqliteStorage::get_or_create_study(const std::string& name,
                                                     search::Direction direction, bool* created) {
  Transaction txn(m_db, m_options.synchronous_full);
  if (!txn.ok()) return db_error(m_db, "begin");
  if (auto existing = get_study(name)) {
    if (created) *created = false;
    if (existing->direction != direction) {
      return std::unexpected(fmt::format(
          "study '{}' in {} was created with direction {}; the study file says {}", name, m_path,
          search::to_string(existing->direction), search::to_string(direction)));
    }
    return existing;
  }
  Stmt ins(m_db, "INSERT INTO studies (study_name) VALUES (?)");
  ins.bind(1, name);
  if (ins.step() != SQLITE_DONE) return db_error(m_db, "create study");
  const std::int64_t id = sqlite3_last_insert_rowid(m_db);
  Stmt dir(m_db, "INSERT INTO study_directions (direction, study_id, objective) VALUES (?, ?, 0)");
  dir.bind(1, std::string(search::to_string(direction))).bind(2, id);
  if (dir.step() != SQLITE_DONE) return db_error(m_db, "create study direction");
  if (auto r = txn.commit(); !r) return std::unexpected(r.error());
  if (created) *created = true;
  return StudyInfo{id, name, direction};
}

Result<void> SqliteStorage::set_attr(const char* table, const char* owner_column,
                                     std::int64_t owner_id, const std::string& key,
                                     const nlohmann::json& value) {
  const std::string sql = fmt::format(
      "INSERT INTO {0} ({1}, \"key\", value_json) VALUES (?, ?, ?) "
      "ON CONFLICT({1}, \"key\") DO UPDATE SET value_json = excluded.value_json",
      table, owner_column);
  Stmt st(m_db, sql.c_str());
  if (!st.ok()) return db_error(m_db, table);
  // Attributes may carry a trial's bytes: never throw on invalid UTF-8, store U+FFFD instead.
  st.bind(1, owner_id)
      .bind(2, key)
      .bind(3, value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (st.step() != SQLITE_DONE) return db_error(m_db, table);
  return {};
}

Result<void> SqliteStorage::set_study_user_attr(std::int64_t study_id, const std::string& key,
                                                const nlohmann::json& value) {
  return set_attr("study_user_attributes", "study_id", study_id, key, value);
}

Result<nlohmann::json> SqliteStorage::get_study_user_attrs(std::int64_t study_id) {
  if (auto r = reader_follows_writers(); !r) return std::unexpected(r.error());
  Stmt st(m_db, "SELECT \"key\", value_json FROM study_user_attributes WHERE study_id = ?");
  if (!st.ok()) return db_error(m_db, "get_study_user_attrs");
  st.bind(1, study_id);
  nlohmann::json out = nlohmann::json::object();
  while (st.step() == SQLITE_ROW) {
    out[st.text(0)] = nlohmann::json::parse(st.text(1), nullptr, false);
  }
  return out;
}

Result<NewTrial> SqliteStorage::create_trial(std::int64_t study_id, search::TrialState state,
                                             const nlohmann::json& system_attrs) {
  Transaction txn(m_db, /*flush=*/false);  // flushed with the trial's end
  if (!txn.ok()) return db_error(m_db, "begin");
  Stmt ins(m_db,
           "INSERT INTO trials (number, study_id, state, datetime_start) VALUES (NULL, ?, ?, ?)");
  ins.bind(1, study_id).bind(2, std::string(search::to_string(state)));
  if (state == TrialState::running) {
    ins.bind(3, now_text());
  } else {
    ins.bind_null(3);
  }
  if (ins.step() != SQLITE_DONE) return db_error(m_db, "create trial");
  const std::int64_t trial_id = sqlite3_last_insert_rowid(m_db);
  if (state == TrialState::running) {
    // The first heartbeat comes with the start, so that a trial whose tune dies before
    // launching it still ages (another host then recovers it).
    if (auto r = insert_heartbeat(m_db, trial_id); !r) return std::unexpected(r.error());
  }
  // Optuna numbers a trial by the count of the study's trials created before it; inside the
  // write transaction no other process can interleave.
  Stmt count(m_db, "SELECT COUNT(*) FROM trials WHERE study_id = ? AND trial_id < ?");
  count.bind(1, study_id).bind(2, trial_id);
  if (count.step() != SQLITE_ROW) return db_error(m_db, "number trial");
  const int number = static_cast<int>(count.int64(0));
  Stmt upd(m_db, "UPDATE trials SET number = ? WHERE trial_id = ?");
  upd.bind(1, static_cast<std::int64_t>(number)).bind(2, trial_id);
  if (upd.step() != SQLITE_DONE) return db_error(m_db, "number trial");
  for (const auto& [key, value] : system_attrs.items()) {
    if (auto r = set_attr("trial_system_attributes", "trial_id", trial_id, key, value); !r) {
      return std::unexpected(r.error());
    }
  }
  if (auto r = txn.commit(); !r) return std::unexpected(r.error());
  return NewTrial{trial_id, number};
}

Result<std::optional<NewTrial>> SqliteStorage::pop_waiting_trial(std::int64_t study_id) {
  Transaction txn(m_db, /*flush=*/false);  // flushed with the trial's end
  if (!txn.ok()) return db_error(m_db, "begin");
  Stmt sel(m_db,
           "SELECT trial_id, number FROM trials WHERE study_id = ? AND state = 'WAITING' "
           "ORDER BY trial_id LIMIT 1");
  sel.bind(1, study_id);
  if (sel.step() != SQLITE_ROW) return std::optional<NewTrial>();
  NewTrial t{sel.int64(0), static_cast<int>(sel.int64(1))};
  Stmt upd(m_db, "UPDATE trials SET state = 'RUNNING', datetime_start = ? WHERE trial_id = ?");
  upd.bind(1, now_text()).bind(2, t.trial_id);
  if (upd.step() != SQLITE_DONE) return db_error(m_db, "pop waiting trial");
  if (auto r = insert_heartbeat(m_db, t.trial_id); !r) return std::unexpected(r.error());
  if (auto r = txn.commit(); !r) return std::unexpected(r.error());
  return std::optional<NewTrial>(t);
}

Result<void> SqliteStorage::set_trial_param(std::int64_t trial_id, const std::string& name,
                                            double internal, const search::Distribution& dist) {
  Stmt st(m_db,
          "INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) "
          "VALUES (?, ?, ?, ?) ON CONFLICT(trial_id, param_name) DO UPDATE SET "
          "param_value = excluded.param_value, distribution_json = excluded.distribution_json");
  if (!st.ok()) return db_error(m_db, "set_trial_param");
  st.bind(1, trial_id).bind(2, name).bind(3, internal).bind(4, search::to_json(dist).dump());
  if (st.step() != SQLITE_DONE) return db_error(m_db, "set_trial_param");
  return {};
}

Result<bool> SqliteStorage::set_trial_state_values(std::int64_t trial_id, TrialState state,
                                                   std::optional<double> value) {
  // A finished trial is what a power loss must not take; the writes before it go along.
  Transaction txn(m_db, m_options.synchronous_full && is_finished(state));
  if (!txn.ok()) return db_error(m_db, "begin");
  Stmt sel(m_db, "SELECT state FROM trials WHERE trial_id = ?");
  sel.bind(1, trial_id);
  if (sel.step() != SQLITE_ROW) {
    return std::unexpected(fmt::format("trial id {} does not exist", trial_id));
  }
  const auto old_state = parse_state(sel.text(0));
  if (old_state && is_finished(*old_state)) return false;
  if (value) {
    Stmt val(
        m_db,
        "INSERT INTO trial_values (trial_id, objective, value, value_type) VALUES (?, 0, ?, ?) "
        "ON CONFLICT(trial_id, objective) DO UPDATE SET value = excluded.value, "
        "value_type = excluded.value_type");
    val.bind(1, trial_id);
    if (std::isfinite(*value)) {
      val.bind(2, *value);
    } else {
      val.bind_null(2);
    }
    val.bind(3, std::string(value_type(*value)));
    if (val.step() != SQLITE_DONE) return db_error(m_db, "set trial value");
  }
  const std::string sql =
      is_finished(state)
          ? "UPDATE trials SET state = ?, datetime_complete = ? WHERE trial_id = ?"
          : "UPDATE trials SET state = ?, datetime_start = COALESCE(datetime_start, ?) WHERE "
            "trial_id = ?";
  Stmt upd(m_db, sql.c_str());
  upd.bind(1, std::string(search::to_string(state))).bind(2, now_text()).bind(3, trial_id);
  if (upd.step() != SQLITE_DONE) return db_error(m_db, "set trial state");
  if (auto r = txn.commit(); !r) return std::unexpected(r.error());
  return true;
}

Result<void> SqliteStorage::set_trial_intermediate_value(std::int64_t trial_id, std::int64_t step,
                                                         double value) {
  Stmt st(m_db,
          "INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value, "
          "intermediate_value_type) VALUES (?, ?, ?, ?) ON CONFLICT(trial_id, step) DO UPDATE "
          "SET intermediate_value = excluded.intermediate_value, "
          "intermediate_value_type = excluded.intermediate_value_type");
  if (!st.ok()) return db_error(m_db, "set_trial_intermediate_value");
  st.bind(1, trial_id).bind(2, step);
  if (std::isfinite(value)) {
    st.bind(3, value);
  } else {
    st.bind_null(3);
  }
  st.bind(4, std::string(value_type(value)));
  if (st.step() != SQLITE_DONE) return db_error(m_db, "set_trial_intermediate_value");
  return {};
}

Result<void> SqliteStorage::set_trial_user_attr(std::int64_t trial_id, const std::string& key,
                                                const nlohmann::json& value) {
  return set_attr("trial_user_attributes", "trial_id", trial_id, key, value);
}

Result<void> SqliteStorage::set_trial_system_attr(std::int64_t trial_id, const std::string& key,
                                                  const nlohmann::json& value) {
  return set_attr("trial_system_attributes", "trial_id", trial_id, key, value);
}

Result<void> SqliteStorage::record_heartbeat(std::int64_t trial_id) {
  return insert_heartbeat(m_db, trial_id);
}

Result<TrialLiveness> SqliteStorage::trial_liveness(std::int64_t trial_id) {
  if (auto r = reader_follows_writers(); !r) return std::unexpected(r.error());
  // julianday('now') is UTC, as the stored timestamps are: the time zone of neither the writer
  // nor this process matters. A timestamp julianday() cannot read gives NULL.
  Stmt st(m_db,
          "SELECT (julianday('now') - julianday(h.heartbeat)) * 86400.0, "
          "(julianday('now') - julianday(t.datetime_start)) * 86400.0 "
          "FROM trials t LEFT JOIN trial_heartbeats h ON h.trial_id = t.trial_id "
          "WHERE t.trial_id = ?");
  if (!st.ok()) return db_error(m_db, "trial_liveness");
  st.bind(1, trial_id);
  const int rc = st.step();
  if (rc == SQLITE_DONE)
    return std::unexpected(fmt::format("trial id {} does not exist", trial_id));
  if (rc != SQLITE_ROW) return db_error(m_db, "trial_liveness");
  TrialLiveness out;
  if (!st.is_null(0)) out.since_heartbeat_s = st.real(0);
  if (!st.is_null(1)) out.since_start_s = st.real(1);
  return out;
}

Result<std::vector<FrozenTrial>> SqliteStorage::load_trials(const std::string& where,
                                                            const std::vector<Bind>& binds) {
  if (auto r = reader_follows_writers(); !r) return std::unexpected(r.error());
  // One read transaction so that the five reads see one snapshot of the database.
  if (auto r = exec("BEGIN"); !r) return std::unexpected(r.error());
  auto trials = read_trials(where, binds);
  // Ending a read transaction changes nothing, but one left open would make the next BEGIN fail;
  // when the reads failed, theirs is the error to report.
  auto ended = exec(trials ? "COMMIT" : "ROLLBACK");
  if (trials && !ended) return std::unexpected(ended.error());
  return trials;
}

Result<std::vector<FrozenTrial>> SqliteStorage::read_trials(const std::string& where,
                                                            const std::vector<Bind>& binds) {
  std::vector<FrozenTrial> trials;
  std::map<std::int64_t, std::size_t> index;
  {
    const std::string sql =
        "SELECT trial_id, number, state, datetime_start, datetime_complete "
        "FROM trials WHERE " +
        where + " ORDER BY number, trial_id";
    Stmt st(m_db, sql.c_str());
    if (!st.ok()) return db_error(m_db, "load trials");
    for (std::size_t i = 0; i < binds.size(); ++i) st.bind(static_cast<int>(i + 1), binds[i]);
    while (st.step() == SQLITE_ROW) {
      FrozenTrial t;
      t.trial_id = st.int64(0);
      t.number = static_cast<int>(st.int64(1));
      t.state = parse_state(st.text(2)).value_or(TrialState::fail);
      if (!st.is_null(3)) t.datetime_start = parse_datetime(st.text(3));
      if (!st.is_null(4)) t.datetime_complete = parse_datetime(st.text(4));
      index[t.trial_id] = trials.size();
      trials.push_back(std::move(t));
    }
  }
  if (trials.empty()) return trials;
  const std::string sub = "SELECT trial_id FROM trials WHERE " + where;
  auto each_row = [&](const std::string& sql, auto&& fn) -> Result<void> {
    Stmt st(m_db, sql.c_str());
    if (!st.ok()) return db_error(m_db, "load trials");
    for (std::size_t i = 0; i < binds.size(); ++i) st.bind(static_cast<int>(i + 1), binds[i]);
    while (st.step() == SQLITE_ROW) {
      auto it = index.find(st.int64(0));
      if (it != index.end()) fn(trials[it->second], st);
    }
    return {};
  };
  Result<void> r = each_row(
      "SELECT trial_id, param_name, param_value, distribution_json FROM trial_params WHERE "
      "trial_id IN (" +
          sub + ")",
      [](FrozenTrial& t, const Stmt& st) {
        auto dist =
            search::distribution_from_json(nlohmann::json::parse(st.text(3), nullptr, false));
        if (!dist) return;
        t.params[st.text(1)] = st.real(2);
        t.distributions.emplace(st.text(1), std::move(*dist));
      });
  if (!r) return std::unexpected(r.error());
  r = each_row(
      "SELECT trial_id, value, value_type FROM trial_values WHERE objective = 0 AND "
      "trial_id IN (" +
          sub + ")",
      [](FrozenTrial& t, const Stmt& st) { t.value = value_from_row(st, 1, 2); });
  if (!r) return std::unexpected(r.error());
  r = each_row(
      "SELECT trial_id, step, intermediate_value, intermediate_value_type FROM "
      "trial_intermediate_values WHERE trial_id IN (" +
          sub + ")",
      [](FrozenTrial& t, const Stmt& st) {
        t.intermediate_values[st.int64(1)] = value_from_row(st, 2, 3);
      });
  if (!r) return std::unexpected(r.error());
  for (const char* table : {"trial_user_attributes", "trial_system_attributes"}) {
    const bool user = table[6] == 'u';
    r = each_row(fmt::format("SELECT trial_id, \"key\", value_json FROM {} WHERE trial_id IN ({})",
                             table, sub),
                 [user](FrozenTrial& t, const Stmt& st) {
                   auto v = nlohmann::json::parse(st.text(2), nullptr, false);
                   (user ? t.user_attrs : t.system_attrs)[st.text(1)] = std::move(v);
                 });
    if (!r) return std::unexpected(r.error());
  }
  for (auto& t : trials) {
    // Optuna keeps constraints as the system attribute "constraints".
    if (auto it = t.system_attrs.find("constraints");
        it != t.system_attrs.end() && it->is_array()) {
      for (const auto& c : *it) {
        if (c.is_number()) t.constraints.push_back(c.get<double>());
      }
    }
  }
  return trials;
}

Result<FrozenTrial> SqliteStorage::get_trial(std::int64_t trial_id) {
  auto trials = load_trials("trial_id = ?", {Bind(trial_id)});
  if (!trials) return std::unexpected(trials.error());
  if (trials->empty()) return std::unexpected(fmt::format("trial id {} does not exist", trial_id));
  return std::move(trials->front());
}

Result<std::vector<FrozenTrial>> SqliteStorage::get_all_trials(std::int64_t study_id) {
  return load_trials("study_id = ?", {Bind(study_id)});
}

Result<std::vector<FrozenTrial>> SqliteStorage::get_trials_since(
    std::int64_t study_id, std::int64_t after_id, const std::vector<std::int64_t>& refresh) {
  // The ids travel as one JSON array bound to one parameter: the statement stays the same size
  // however many trials are unfinished (one `OR trial_id = ?` each hit SQLite's expression
  // depth limit at 1,000 waiting trials). A trial still WAITING is as the caller saw it (see
  // storage.h), so only its state is looked at: a thousand queued re-runs cost a lookup each,
  // not a reload of their attributes, per sync.
  return load_trials(
      "study_id = ? AND (trial_id > ? OR (state != 'WAITING' AND "
      "trial_id IN (SELECT value FROM json_each(?))))",
      {study_id, after_id, fmt::format("[{}]", fmt::join(refresh, ","))});
}

}  // namespace tune::tuner
