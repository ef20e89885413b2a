#include "tuner/storage/postgres_storage.h"

#include <poll.h>
#include <unistd.h>

#include <libpq-fe.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <random>
#include <thread>

#include "tuner/base/text.h"
#include "tuner/storage/optuna_schema.h"

namespace tune::tuner {
namespace {

// The fragments of RdbStorage's statements in PostgreSQL's words. now() is the server's clock
// (the transaction's start), written as a naive UTC timestamp as Optuna's columns are.
constexpr SqlDialect k_dialect{
    .now_utc = "(now() AT TIME ZONE 'UTC')",
    .heartbeat_utc = "date_trunc('second', now() AT TIME ZONE 'UTC')",
    .age_seconds = "EXTRACT(EPOCH FROM (now() AT TIME ZONE 'UTC') - {})",
    .datetime_text = "to_char({}, 'YYYY-MM-DD HH24:MI:SS.US')",
    .for_update = " FOR UPDATE",
    .skip_locked = " FOR UPDATE SKIP LOCKED",
    .in_id_list = "{} = ANY (CAST(? AS integer[]))",
    .list_open = '{',
    .list_close = '}',
    .serialize_study_creation = "SELECT pg_advisory_xact_lock(1953853029, 1)",
    .study_of_listed_trials = "study_id = ?",
};
// Serialises the schema's creation between workers starting together ('tune', 0).
constexpr const char* k_schema_lock = "SELECT pg_advisory_xact_lock(1953853029, 0)";

// `?` placeholders as PostgreSQL's $1, $2, ... (none of the shared statements has a `?` inside
// a quoted literal, but quotes are skipped anyway).
std::string numbered_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  bool quoted = false;
  for (const char c : sql) {
    if (c == '\'') quoted = !quoted;
    if (c == '?' && !quoted) {
      out += fmt::format("${}", ++n);
    } else {
      out += c;
    }
  }
  return out;
}

std::string text_param(const SqlValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);  // round-trips
  return std::get<std::string>(v);
}

// libpq's messages end in a newline and may run over several lines; errors here are one line.
// libpq's message, or a stand-in when it has none.
std::string_view error_text(const char* message) {
  return message ? std::string_view(message) : std::string_view("unknown error");
}

// Owns a PGresult.
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

}  // namespace

PostgresStorage::PostgresStorage(std::string conninfo, std::string password, std::string name,
                                 const StorageOptions& options)
    : RdbStorage(k_dialect, options, std::move(name)),
      m_conninfo(std::move(conninfo)),
      m_password(std::move(password)) {}

PostgresStorage::~PostgresStorage() { PQfinish(m_conn); }

Result<std::unique_ptr<PostgresStorage>> PostgresStorage::open(const std::string& conninfo,
                                                               const std::string& password,
                                                               const std::string& name,
                                                               const StorageOptions& options) {
  auto storage =
      std::unique_ptr<PostgresStorage>(new PostgresStorage(conninfo, password, name, options));
  if (auto r = storage->first_connect(); !r) return std::unexpected(r.error());
  if (auto r = storage->ensure_schema(); !r) {
    return std::unexpected(fmt::format("{}: {}", name, r.error().message));
  }
  return storage;
}

std::optional<std::string> PostgresStorage::conninfo_problem(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  std::optional<std::string> problem;
  if (!options) problem = error ? one_line(error) : "libpq cannot read it (out of memory?)";
  PQconninfoFree(options);
  PQfreemem(error);
  return problem;
}

void PostgresStorage::start_call_clock() {
  m_deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(m_options.retry_s));
}

namespace {

// Waits until `fd` is ready for `events` or `deadline` passes; whether it is ready.
bool wait_socket(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r > 0) return true;  // readable, writable, or an error that libpq will report
    if (r < 0 && errno != EINTR) return false;
  }
}

// Exponential backoff with jitter, 50 ms doubling to 2 s, never past `deadline`: hundreds of
// workers that lost their server do not come back at once.
class Backoff {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Backoff(Clock::time_point deadline)
      : m_deadline(deadline),
        m_jitter(static_cast<unsigned>(getpid()) ^
                 static_cast<unsigned>(Clock::now().time_since_epoch().count())) {}
  bool expired() const { return Clock::now() >= m_deadline; }
  void pause() {
    const Clock::duration wait =
        std::chrono::milliseconds(m_pause.count() / 2 + m_jitter() % (m_pause.count() + 1));
    std::this_thread::sleep_for(
        std::clamp<Clock::duration>(m_deadline - Clock::now(), Clock::duration::zero(), wait));
    m_pause = std::min(m_pause * 2, std::chrono::milliseconds(2000));
  }

 private:
  Clock::time_point m_deadline;
  std::mt19937 m_jitter;
  std::chrono::milliseconds m_pause{50};
};

// Whether a failed connection attempt may succeed if tried again soon: the server is starting,
// stopping or recovering (a restart), refuses connections on its port (not yet listening), or
// has no slot free; a pooler in front says it cannot reach the server. Anything else (a wrong
// host name, password, user or database) fails at once. libpq gives no SQLSTATE for a failed
// connection, so the server's messages are matched (in English, the default lc_messages).
bool transient_connect_error(std::string_view message) {
  for (const char* transient :
       {"Connection refused", "the database system is starting up",
        "the database system is shutting down", "the database system is in recovery mode",
        "the database system is not yet accepting connections",
        "the database system is not accepting connections", "too many clients already",
        "connection slots are reserved", "no more connections allowed",
        "pgbouncer cannot connect to server", "server login has been failing",
        "server closed the connection", "Connection reset by peer"}) {
    if (message.find(transient) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

Result<void> PostgresStorage::first_connect() {
  // A worker started while the server restarts (or before it is up) waits for it within
  // retry_for, with the backoff of a lost connection; a mistake in the URL fails at once.
  start_call_clock();
  Backoff backoff(m_deadline);
  for (int attempt = 1;; ++attempt) {
    auto r = connect();
    if (r || !transient_connect_error(r.error())) return r;
    if (backoff.expired()) {
      return std::unexpected(fmt::format("{} ({} attempts over {:.0f} s, retry_for)", r.error(),
                                         attempt, m_options.retry_s));
    }
    backoff.pause();
  }
}

Result<void> PostgresStorage::connect() {
  PQfinish(m_conn);
  m_conn = nullptr;
  // The URL is read as libpq's dbname (expand_dbname); a password given after it wins. TCP
  // keepalives notice a host that vanished on a connection left idle between calls; the
  // deadline (retry_for) bounds the call itself.
  const char* keys[] = {"dbname",
                        "keepalives",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        m_password.empty() ? nullptr : "password",
                        nullptr};
  const char* values[] = {m_conninfo.c_str(), "1", "10", "5", "3", m_password.c_str(), nullptr};
  m_conn = PQconnectStartParams(keys, values, /*expand_dbname=*/1);
  const auto failed = [&](std::string_view why) -> std::unexpected<std::string> {
    auto error = fmt::format("{}: cannot connect: {}", name(), why);
    PQfinish(m_conn);
    m_conn = nullptr;
    return std::unexpected(error);
  };
  if (!m_conn) return failed("out of memory");
  // libpq's non-blocking connection: poll the socket for what PQconnectPoll asks, until it says
  // done or the deadline passes (a server that accepts but never answers would hold a blocking
  // PQconnectdb for ever).
  for (PostgresPollingStatusType st = PGRES_POLLING_WRITING;;) {
    if (PQstatus(m_conn) == CONNECTION_BAD || st == PGRES_POLLING_FAILED) {
      return failed(one_line(error_text(PQerrorMessage(m_conn))));
    }
    if (st == PGRES_POLLING_OK) break;
    const short events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    if (!wait_socket(PQsocket(m_conn), events, m_deadline)) {
      return failed(fmt::format("no answer within {:.0f} s (retry_for)", m_options.retry_s));
    }
    st = PQconnectPoll(m_conn);
  }
  if (PQsetnonblocking(m_conn, 1) != 0) return failed("cannot make the connection non-blocking");
  // Nothing is set for the session: behind a pooler in transaction mode (PgBouncer) the next
  // transaction may run on another server connection. What a transaction needs it says itself
  // (run_transaction), and dates are read in a format named in the statement.
  return {};
}

pg_result* PostgresStorage::await_result() {
  const auto give_up = [&](std::string why) -> pg_result* {
    m_lost = true;
    m_wait_error = std::move(why);
    PQfinish(m_conn);  // the server rolls back what this connection had begun
    m_conn = nullptr;
    return nullptr;
  };
  const auto no_answer = [&] {
    return give_up(
        fmt::format("the server gave no answer within {:.0f} s (retry_for)", m_options.retry_s));
  };
  // Everything sent first (PQflush: 1 while some is left), then the answer read as it comes.
  for (int left = PQflush(m_conn); left != 0; left = PQflush(m_conn)) {
    if (left < 0) return give_up(std::string(one_line(error_text(PQerrorMessage(m_conn)))));
    if (!wait_socket(PQsocket(m_conn), POLLIN | POLLOUT, m_deadline)) return no_answer();
    if (!PQconsumeInput(m_conn))
      return give_up(std::string(one_line(error_text(PQerrorMessage(m_conn)))));
  }
  PGresult* kept = nullptr;  // the first error, else the last result
  while (true) {
    while (PQisBusy(m_conn)) {
      if (!wait_socket(PQsocket(m_conn), POLLIN, m_deadline)) {
        PQclear(kept);
        return no_answer();
      }
      if (!PQconsumeInput(m_conn)) {
        PQclear(kept);
        return give_up(std::string(one_line(error_text(PQerrorMessage(m_conn)))));
      }
    }
    PGresult* next = PQgetResult(m_conn);
    if (!next) break;
    const bool kept_error =
        kept && PQresultStatus(kept) != PGRES_COMMAND_OK && PQresultStatus(kept) != PGRES_TUPLES_OK;
    if (kept_error) {
      PQclear(next);
    } else {
      PQclear(kept);
      kept = next;
    }
  }
  if (!kept) return give_up(std::string(one_line(error_text(PQerrorMessage(m_conn)))));
  return kept;
}

StorageResult<void> PostgresStorage::exec_script(const std::string& sql) {
  if (!PQsendQuery(m_conn, sql.c_str())) return statement_failed(nullptr);
  PgResult res(await_result());
  if (!res) return statement_failed(nullptr);
  const auto status = PQresultStatus(res.get());
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return {};
  return statement_failed(res.get());
}

StorageResult<void> PostgresStorage::ensure_schema() {
  const bool write = m_options.mode == OpenMode::read_write;
  return transact(write ? TxnKind::write_flush : TxnKind::read, [&]() -> StorageResult<void> {
    if (write) {
      if (auto lock = query(k_schema_lock, {}); !lock) return std::unexpected(lock.error());
    }
    auto present = query(fmt::format("SELECT to_regclass('version_info') IS NOT NULL, "
                                     "to_regclass('{}') IS NOT NULL",
                                     k_tune_changes_table),
                         {});
    if (!present) return std::unexpected(present.error());
    if (present->at(0).text(0) != "t") {
      if (!write) return std::unexpected("no Optuna study schema in this database");
      if (auto r = exec_script(optuna_schema_sql(SqlFlavor::postgresql)); !r) return r;
    }
    auto version = query(k_version_query, {});
    if (!version) return std::unexpected(version.error());
    if (auto r = check_version_rows(*version); !r) return r;
    m_change_log = present->at(0).text(1) == "t";
    if (write && !m_change_log) {
      if (auto r = exec_script(tune_extras_sql()); !r) return r;
      m_change_log = true;
    }
    return {};
  });
}

// Notes whether a failed statement lost the connection or may simply be tried again.
std::unexpected<StorageError> PostgresStorage::statement_failed(const pg_result* res) {
  if (!m_conn) {  // await_result() gave up on it
    m_lost = true;
    m_retryable = false;
    return std::unexpected<StorageError>(fmt::format("postgresql: {}", m_wait_error));
  }
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  const std::string_view code = state ? state : "";
  // 08: connection exceptions; 57P01-3: the server shutting down; 40001/40P01: try again.
  m_lost = !res || PQstatus(m_conn) != CONNECTION_OK || code.starts_with("08") ||
           code.starts_with("57P0");
  m_retryable = code == "40001" || code == "40P01";
  return std::unexpected<StorageError>(
      fmt::format("postgresql: {}", one_line(error_text(PQerrorMessage(m_conn)))));
}

StorageResult<SqlRows> PostgresStorage::query(std::string_view sql,
                                              const std::vector<SqlValue>& params) {
  const std::string text = numbered_placeholders(sql);
  std::vector<std::string> values;
  std::vector<const char*> pointers;
  values.reserve(params.size());
  for (const auto& p : params) {
    const bool null = std::holds_alternative<std::monostate>(p);
    values.push_back(null ? std::string() : text_param(p));
    pointers.push_back(null ? nullptr : values.back().c_str());
  }
  // The unnamed statement: parsed, bound and run in one round trip. A named prepared statement
  // lives in its server connection, which a pooler in transaction mode (PgBouncer 1.18) swaps
  // between transactions: "prepared statement does not exist".
  if (!PQsendQueryParams(m_conn, text.c_str(), static_cast<int>(params.size()), nullptr,
                         pointers.data(), nullptr, nullptr, 0)) {
    return statement_failed(nullptr);
  }
  PgResult res(await_result());
  if (!res) return statement_failed(nullptr);
  const auto status = PQresultStatus(res.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return statement_failed(res.get());
  SqlRows rows;
  const int n = PQntuples(res.get());
  const int cols = PQnfields(res.get());
  rows.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::vector<SqlValue> cells;
    cells.reserve(static_cast<std::size_t>(cols));
    for (int c = 0; c < cols; ++c) {
      if (PQgetisnull(res.get(), i, c)) {
        cells.emplace_back();
      } else {
        cells.emplace_back(std::string(PQgetvalue(res.get(), i, c),
                                       static_cast<std::size_t>(PQgetlength(res.get(), i, c))));
      }
    }
    rows.emplace_back(std::move(cells));
  }
  return rows;
}

// One attempt: BEGIN, the body, COMMIT (ROLLBACK when the body failed and the link still works).
// A lone statement runs as it is (autocommit): one round trip instead of three.
StorageResult<void> PostgresStorage::run_transaction(
    TxnKind kind, const std::function<StorageResult<void>()>& body) {
  const bool read_only = m_options.mode == OpenMode::read_only;
  // A lone statement runs as it is (autocommit), except read-only, which needs its transaction.
  if (kind == TxnKind::statement && !read_only) return body();
  std::string begin = kind == TxnKind::read || kind == TxnKind::statement
                          ? "BEGIN ISOLATION LEVEL REPEATABLE READ"  // a snapshot
                          : "BEGIN";
  if (read_only)
    begin += kind == TxnKind::read || kind == TxnKind::statement ? ", READ ONLY" : " READ ONLY";
  // Every statement here finds its rows through an index on its keys (a delta by trial ids, a
  // trial by id, the oldest WAITING trial, the highest number). The planner, judging by
  // statistics that lag a fast-growing study, would read whole tables sequentially for a handful
  // of ids (measured: the attribute tables, once per sync), and the rows read per trial would grow
  // with the study.
  begin += "; SET LOCAL enable_seqscan = off";
  // Commits wait for the server's disk only when a transaction asks (TxnKind::write_synced,
  // write_flush: what a trial's run relies on); the rest (heartbeats, intermediate values) may
  // be lost with the server's last fraction of a second, which costs nothing that the next such
  // write does not restore. SET LOCAL: the setting ends with the transaction, as it must on a
  // pooled connection.
  const bool synced =
      (kind == TxnKind::write_synced || kind == TxnKind::write_flush) && m_options.synchronous_full;
  if (kind != TxnKind::read && kind != TxnKind::statement)
    begin += fmt::format("; SET LOCAL synchronous_commit = {}", synced ? "on" : "off");
  if (auto r = exec_script(begin); !r) return r;
  auto r = body();
  if (!r) {
    if (!m_lost) (void)exec_script("ROLLBACK");  // the body's error is the one to report
    return r;
  }
  return exec_script("COMMIT");
}

StorageResult<void> PostgresStorage::transact(TxnKind kind,
                                              const std::function<StorageResult<void>()>& body) {
  // Every statement of every attempt waits on the server until this deadline at the most, so
  // the call returns within retry_for even when the server stops answering without closing
  // the connection (await_result()).
  start_call_clock();
  Backoff backoff(m_deadline);
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    m_lost = m_retryable = false;
    StorageResult<void> r;
    if (!m_conn || PQstatus(m_conn) != CONNECTION_OK) {
      r = connect();
      if (!r) m_lost = true;
    }
    if (r) r = run_transaction(kind, body);
    if (r || (!m_lost && !m_retryable)) return r;
    last_error = r.error().message;
    if (backoff.expired()) {
      return std::unexpected(StorageError(
          StorageErrorKind::unreachable,
          fmt::format("{}: the database server stopped answering and {} attempts over {:.0f} s "
                      "(retry_for) did not get it back: {}",
                      name(), attempt, m_options.retry_s, last_error)));
    }
    backoff.pause();
  }
}

Result<int> PostgresStorage::backend_pid() {
  if (!m_conn) return std::unexpected(fmt::format("{}: not connected", name()));
  return PQbackendPID(m_conn);
}

}  // namespace tune::tuner
