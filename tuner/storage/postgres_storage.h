// PostgreSQL storage: Optuna 3.1's schema and RdbStorage's statements on a server that many
// `tune` workers and python3-optuna share (`postgresql://user@host:port/db`); works behind a
// transaction-mode pooler and retries a lost connection for retry_s. An object owns one
// connection and is used by one thread at a time.
// Design: docs/design-notes.md#tunerstoragepostgres_storageh
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
