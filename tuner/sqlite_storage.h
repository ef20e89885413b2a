// SQLite storage with Optuna 3.1's RDB schema (tables, columns, version rows), so that
// `optuna.load_study(storage="sqlite:///file.db")` reads studies written by tune and tune can
// continue studies written by Optuna.
//
// The database runs in write-ahead-log mode with a busy timeout; every write is one
// `BEGIN IMMEDIATE` transaction, which serialises concurrent tune processes on one file and keeps
// trial numbers unique. The connection runs synchronous=NORMAL; the commits that must survive a
// power loss (StorageOptions::synchronous_full) run with FULL, which flushes the whole log.
// Datetimes are written in UTC, as Optuna writes heartbeats on SQLite (CURRENT_TIMESTAMP).
//
// Read-only opening writes nothing and creates no file, so it works on a database (and folder)
// the user may only read: a rollback-journal database, or a WAL one whose -wal file exists (a
// writer has it open, or crashed), is opened with SQLITE_OPEN_READONLY and SQLite's locks. A WAL
// database without its -wal file has been checkpointed whole and has no writer; SQLite would
// need to create -wal and -shm to read it (failing in a read-only folder, and leaving files the
// owner may not be able to write in a shared one), so it is opened `immutable`, and reopened with
// locks as soon as a -wal file shows that a writer has appeared.
//
// An object owns one connection and is used by one thread at a time.
#pragma once

#include <string>
#include <variant>

#include "tuner/storage.h"

struct sqlite3;

namespace tune::tuner {

class SqliteStorage final : public Storage {
 public:
  // Read-write: opens (creating when absent) the database file and its schema. Read-only: the
  // file must exist and hold the schema.
  [[nodiscard]] static Result<std::unique_ptr<SqliteStorage>> open(
      const std::string& path, const StorageOptions& options = {});
  ~SqliteStorage() override;
  SqliteStorage(const SqliteStorage&) = delete;
  SqliteStorage& operator=(const SqliteStorage&) = delete;

  [[nodiscard]] Result<StudyInfo> get_or_create_study(const std::string& name,
                                                      search::Direction direction,
                                                      bool* created) override;
  [[nodiscard]] Result<StudyInfo> get_study(const std::string& name) override;
  [[nodiscard]] Result<std::vector<StudyInfo>> get_all_studies() override;
  [[nodiscard]] Result<void> set_study_user_attr(std::int64_t study_id, const std::string& key,
                                                 const nlohmann::json& value) override;
  [[nodiscard]] Result<nlohmann::json> get_study_user_attrs(std::int64_t study_id) override;
  [[nodiscard]] Result<NewTrial> create_trial(std::int64_t study_id, search::TrialState state,
                                              const nlohmann::json& system_attrs) override;
  [[nodiscard]] Result<std::optional<NewTrial>> pop_waiting_trial(std::int64_t study_id) override;
  [[nodiscard]] Result<void> set_trial_param(std::int64_t trial_id, const std::string& name,
                                             double internal,
                                             const search::Distribution& dist) override;
  [[nodiscard]] Result<bool> set_trial_state_values(std::int64_t trial_id, search::TrialState state,
                                                    std::optional<double> value) override;
  [[nodiscard]] Result<void> set_trial_intermediate_value(std::int64_t trial_id, std::int64_t step,
                                                          double value) override;
  [[nodiscard]] Result<void> set_trial_user_attr(std::int64_t trial_id, const std::string& key,
                                                 const nlohmann::json& value) override;
  [[nodiscard]] Result<void> set_trial_system_attr(std::int64_t trial_id, const std::string& key,
                                                   const nlohmann::json& value) override;
  [[nodiscard]] Result<void> record_heartbeat(std::int64_t trial_id) override;
  [[nodiscard]] Result<search::FrozenTrial> get_trial(std::int64_t trial_id) override;
  [[nodiscard]] Result<std::vector<search::FrozenTrial>> get_all_trials(
      std::int64_t study_id) override;
  [[nodiscard]] Result<std::vector<search::FrozenTrial>> get_trials_since(
      std::int64_t study_id, std::int64_t after_id,
      const std::vector<std::int64_t>& refresh) override;
  [[nodiscard]] Result<TrialLiveness> trial_liveness(std::int64_t trial_id) override;
  double grace_period_s() const override { return m_options.grace_period_s; }

  const std::string& path() const { return m_path; }
  // PRAGMA synchronous of the connection: 2 = FULL, 1 = NORMAL (for tests and diagnostics).
  [[nodiscard]] Result<int> synchronous_level();

 private:
  using Bind = std::variant<std::int64_t, std::string>;
  SqliteStorage(std::string path, const StorageOptions& options)
      : m_path(std::move(path)), m_options(options) {}
  [[nodiscard]] Result<void> connect();
  [[nodiscard]] Result<void> connect_read_only();
  [[nodiscard]] Result<void> reader_follows_writers();
  [[nodiscard]] Result<void> exec(const char* sql);
  [[nodiscard]] Result<void> create_schema();
  [[nodiscard]] Result<void> check_schema();
  [[nodiscard]] Result<std::vector<search::FrozenTrial>> load_trials(
      const std::string& where, const std::vector<Bind>& binds);
  // load_trials() without its read transaction.
  [[nodiscard]] Result<std::vector<search::FrozenTrial>> read_trials(
      const std::string& where, const std::vector<Bind>& binds);
  [[nodiscard]] Result<void> set_attr(const char* table, const char* owner_column,
                                      std::int64_t owner_id, const std::string& key,
                                      const nlohmann::json& value);

  sqlite3* m_db = nullptr;
  std::string m_path;
  StorageOptions m_options;
  bool m_immutable = false;  // read-only, opened without locks (no -wal file existed)
};

}  // namespace tune::tuner
