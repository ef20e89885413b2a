// PostgreSQL storage: the same Optuna 3.1 schema and statements as SQLite (RdbStorage), on a
// server that hundreds of `tune` workers on many hosts share, and that python3-optuna (with
// psycopg2) reads and writes too: `postgresql://user@host:port/db`.
//
// Across hosts: trial numbers come from the count of earlier trials taken while holding the
// study's row (SELECT ... FOR UPDATE, the lock Optuna's create_trial takes), a WAITING trial is
// popped with FOR UPDATE SKIP LOCKED so two workers never take the same one, a state change
// holds the trial's row, and study and schema creation are serialised by advisory locks. Every
// timestamp (start, end, heartbeat) and every age is the server's clock in UTC, so the workers'
// clocks do not matter. Each call is one short transaction on one connection per worker (a lone
// statement runs without BEGIN/COMMIT).
//
// Behind a pooler in transaction mode (PgBouncer, Debian 12's 1.18 included): the connection
// keeps no session state. Statements are unnamed (parsed, bound and run in one round trip), not
// prepared by name; each transaction sets what it needs with SET LOCAL (synchronous_commit;
// READ ONLY for a storage opened read-only); dates are read through to_char, whatever the
// server's DateStyle; locks are row locks and transaction-scoped advisory locks, released at
// COMMIT. So any server connection of the pool may run any transaction.
//
// Acknowledged means durable: a call returns once the server has written what a trial's run
// relies on (synchronous_commit for TxnKind::write_synced and write_flush: the trial's creation
// and number, params, attributes, end), so a crash of the server at any moment takes none of
// it; only heartbeats and intermediate values commit asynchronously (rdb_storage.h). With
// synchronous=normal every commit is asynchronous, and a crash may take the last ones.
//
// A lost connection (server restart, network cut) is retried with exponential backoff, and the
// whole transaction run again, for StorageOptions::retry_s; then the call fails with an error
// naming the server. retry_for bounds the call in time, also against a server that stops
// answering without closing its sockets (a stopped or hung host): every statement and every
// connection attempt runs on libpq's asynchronous API, waiting on the socket with poll() until
// the call's deadline, so no call outlives retry_for by more than a poll's slack. A transaction
// whose COMMIT was cut off may have committed: RdbStorage's bodies are safe to run again (a
// creation finds its own trial by its claim token first).
//
// An object owns one connection and is used by one thread at a time.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "tuner/storage/rdb_storage.h"

struct pg_conn;
struct pg_result;

namespace tune::tuner {

class PostgresStorage final : public RdbStorage {
 public:
  // `conninfo` is what libpq takes (a postgresql:// URL without tune's options and without a
  // password); `password` is given to libpq apart from it, so that no message of libpq's (which
  // may quote the URL) holds it ("" leaves it to PGPASSWORD or ~/.pgpass); `name` names the
  // database in errors (the URL, its password masked). The first connection is retried with
  // backoff within retry_for while the server is restarting or not yet up (refused, starting,
  // shutting down, recovering, out of slots); any other failure (a wrong host, user, password or
  // database) fails at once. Read-write creates the schema when absent.
  [[nodiscard]] static Result<std::unique_ptr<PostgresStorage>> open(
      const std::string& conninfo, const std::string& password, const std::string& name,
      const StorageOptions& options = {});
  // Why libpq cannot read `conninfo` (a malformed URL: "sslmode" without '=', an unclosed
  // "[::1"), found without connecting; nullopt when it can.
  static std::optional<std::string> conninfo_problem(const std::string& conninfo);
  ~PostgresStorage() override;
  PostgresStorage(const PostgresStorage&) = delete;
  PostgresStorage& operator=(const PostgresStorage&) = delete;

  // The server's process id for this connection (tests cut it with pg_terminate_backend).
  [[nodiscard]] Result<int> backend_pid();

 protected:
  [[nodiscard]] StorageResult<SqlRows> query(std::string_view sql,
                                             const std::vector<SqlValue>& params) override;
  [[nodiscard]] StorageResult<void> transact(
      TxnKind kind, const std::function<StorageResult<void>()>& body) override;

 private:
  PostgresStorage(std::string conninfo, std::string password, std::string name,
                  const StorageOptions& options);
  [[nodiscard]] Result<void> connect();
  [[nodiscard]] Result<void> first_connect();
  [[nodiscard]] StorageResult<void> run_transaction(
      TxnKind kind, const std::function<StorageResult<void>()>& body);
  [[nodiscard]] StorageResult<void> exec_script(const std::string& sql);
  [[nodiscard]] StorageResult<void> ensure_schema();
  std::unexpected<StorageError> statement_failed(const pg_result* res);
  // The result of the statement just sent (the last one's, or the first error, of a script),
  // waited for until m_deadline; null when the connection broke or the server gave no answer in
  // time (m_lost set, the connection dropped, m_wait_error says which).
  [[nodiscard]] pg_result* await_result();
  // The time the call under way must return by: its start plus retry_for.
  void start_call_clock();

  pg_conn* m_conn = nullptr;
  std::chrono::steady_clock::time_point m_deadline{};
  std::string m_wait_error;  // why await_result() returned null
  std::string m_conninfo;
  std::string m_password;    // never in a message
  bool m_lost = false;       // the last statement failed because the connection is gone
  bool m_retryable = false;  // ... or because the server asked for a retry (deadlock)
};

}  // namespace tune::tuner
