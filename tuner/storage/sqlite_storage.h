// SQLite storage with Optuna 3.1's RDB schema, so Optuna and tune read each other's studies:
// WAL mode, one BEGIN IMMEDIATE transaction per write, a read-only opening that writes nothing.
// An object owns one connection and is used by one thread at a time.
// Design: docs/design-notes.md#tunerstoragesqlite_storageh
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tuner/storage/rdb_storage.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tune::tuner {

class SqliteStorage final : public RdbStorage {
 public:
  // Read-write: opens (creating when absent) the database file and its schema. Read-only: the
  // file must exist and hold the schema.
  [[nodiscard]] static Result<std::unique_ptr<SqliteStorage>> open(
      const std::string& path, const StorageOptions& options = {});
  ~SqliteStorage() override;
  SqliteStorage(const SqliteStorage&) = delete;
  SqliteStorage& operator=(const SqliteStorage&) = delete;

  const std::string& path() const { return m_path; }
  // PRAGMA synchronous of the connection: 2 = FULL, 1 = NORMAL (for tests and diagnostics).
  [[nodiscard]] Result<int> synchronous_level();

 protected:
  [[nodiscard]] StorageResult<SqlRows> query(std::string_view sql,
                                             const std::vector<SqlValue>& params) override;
  [[nodiscard]] StorageResult<void> transact(
      TxnKind kind, const std::function<StorageResult<void>()>& body) override;

 private:
  SqliteStorage(std::string path, const StorageOptions& options);
  [[nodiscard]] Result<void> connect();
  [[nodiscard]] Result<void> connect_read_only();
  [[nodiscard]] Result<void> reader_follows_writers();
  [[nodiscard]] Result<void> exec(const char* sql);
  [[nodiscard]] Result<void> create_schema();
  [[nodiscard]] Result<void> check_schema();
  // Why the file at m_path is no longer the one this connection writes (removed, or another file
  // in its place), or "": SQLite goes on writing to the unlinked file, and every write from then
  // on would be lost without an error.
  [[nodiscard]] std::string file_gone() const;

  // Finalizes the cached statements (m_statements).
  void drop_statements();
  // Finalizes the cached statements and closes the connection.
  void close();

  sqlite3* m_db = nullptr;
  std::string m_path;
  bool m_immutable = false;  // read-only, opened without locks (no -wal file existed)
  // The file this connection opened (read-write), by device and inode; unset when stat failed.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> m_file_id;
  // Prepared statements by their text, kept for the connection's life: a trial runs the same
  // dozen statements, and preparing each again (SQLite parses and plans it) was a tenth of a
  // trivial trial's time in tune. Bounded; cleared with the connection.
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };
  std::unordered_map<std::string, sqlite3_stmt*, TextHash, std::equal_to<>> m_statements;
};

}  // namespace tune::tuner
