// RdbStorage: the Storage methods written once in SQL over Optuna 3.1's schema, shared by the
// SQLite and PostgreSQL backends, which supply the connection and a SqlDialect.
// An object owns one connection (its backend's) and is used by one thread at a time.
// Design: docs/design-notes.md#tunerstoragerdb_storageh
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tuner/storage/storage.h"

namespace tune::tuner {

// A statement's parameter or result cell. SQLite hands back typed cells, PostgreSQL text; the
// accessors convert, so the mapping code reads either the same way.
using SqlValue = std::variant<std::monostate, std::int64_t, double, std::string>;

class SqlRow {
 public:
  explicit SqlRow(std::vector<SqlValue> cells) : m_cells(std::move(cells)) {}
  bool is_null(std::size_t col) const;
  std::int64_t int64(std::size_t col) const;  // 0 for NULL
  double real(std::size_t col) const;         // NaN for NULL
  std::string text(std::size_t col) const;    // "" for NULL

 private:
  std::vector<SqlValue> m_cells;
};
using SqlRows = std::vector<SqlRow>;

// Optuna's value columns: the value column holds only finite numbers, its value_type column
// FINITE, INF_POS, INF_NEG (or NAN, intermediate values only). sql_row.cpp.
SqlValue finite_or_null(double v);
std::string value_type(double v);
double value_from_row(const SqlRow& row, std::size_t value_col, std::size_t type_col);
// Optuna's DATETIME columns hold naive datetimes, "YYYY-MM-DD HH:MM:SS[.ffffff]"; tune's are UTC
// (storage.h), so the text is read as UTC.
std::optional<std::chrono::system_clock::time_point> parse_datetime(const std::string& s);

// How far a committed transaction must have gone when the call returns. Every write survives a
// crash of the tune process that made it. As below with StorageOptions::synchronous_full (the
// default); with synchronous=normal RdbStorage runs every write as `write` (durable()).
// A backend may run a write's body again after a lost connection, even when its COMMIT went
// through unanswered: the bodies here are safe to run twice (upserts; creations and pops find
// their own trial by its claim token first).
enum class TxnKind {
  statement,  // one statement, atomic by itself: no BEGIN/COMMIT around it (one round trip)
  read,       // one snapshot for several reads
  // Serialised with other writers of the study where it matters (row locks). On PostgreSQL it
  // commits asynchronously: a crash of the database server may take the writes of its last
  // fraction of a second (wal_writer_delay), so only what the next such write replaces or what
  // nothing relies on goes this way (heartbeats, intermediate values).
  write,
  // A write a trial's run relies on (its params and attributes, a value): on PostgreSQL the
  // commit waits until the server has written it (synchronous_commit), so a crash of the server
  // does not take it; SQLite has no server, and every commit survives a crash of any process.
  write_synced,
  // A write that must survive a power loss: it is flushed to disk, and with it every commit
  // before it (a trial's creation, which hands out its number, and its end; a study's creation).
  write_flush,
};

// The SQL that differs between the backends, as fragments of the shared statements.
struct SqlDialect {
  const char* now_utc;  // the current UTC time as a naive DATETIME, sub-second
  const char*
      heartbeat_utc;        // the same in whole seconds, as Optuna's heartbeats (insert_heartbeat)
  const char* age_seconds;  // fmt pattern: seconds from the naive UTC DATETIME {} until now
  // fmt pattern: the DATETIME column {} as parse_datetime() reads it, whatever the session's
  // settings (a pooled connection keeps none: postgres_storage.h)
  const char* datetime_text;
  const char* for_update;      // suffix locking the selected rows ("" where writers are serial)
  const char* skip_locked;     // suffix taking only rows no other transaction holds
  const char* in_id_list;      // fmt pattern: {} is in the list bound as one parameter
  char list_open, list_close;  // how that list is written: [1,2] (JSON) or {1,2} (an array)
  const char* serialize_study_creation;  // a statement run first, or "" (writers are serial)
  // How a statement that picks trials by id says which study they must be of. SQLite's planner
  // would take study_id = ? to the index on (study_id, number) and walk every trial of the study
  // instead of looking the ids up by primary key (measured: 0.85 ms against 0.05 ms a statement
  // at 11,000 trials, growing with the study); a unary + keeps it off that index.
  const char* study_of_listed_trials;
};

class RdbStorage : public Storage {
 public:
  using Storage::get_or_create_study;
  using Storage::set_complete_trial_value;
  [[nodiscard]] StorageResult<StudyInfo> get_or_create_study(
      const std::string& name, const std::vector<search::Direction>& directions, bool* created,
      const StudySeed& seed) final;
  [[nodiscard]] StorageResult<StudyInfo> get_study(const std::string& name) final;
  [[nodiscard]] StorageResult<std::vector<StudyInfo>> get_all_studies() final;
  [[nodiscard]] StorageResult<void> set_study_user_attr(std::int64_t study_id,
                                                        const std::string& key,
                                                        const nlohmann::json& value) final;
  [[nodiscard]] StorageResult<nlohmann::json> get_study_user_attrs(std::int64_t study_id) final;
  [[nodiscard]] StorageResult<NewTrial> create_trial(std::int64_t study_id,
                                                     search::TrialState state,
                                                     const nlohmann::json& system_attrs) final;
  [[nodiscard]] StorageResult<std::optional<NewTrial>> create_trial_unless(
      std::int64_t study_id, search::TrialState state, const nlohmann::json& system_attrs,
      const std::string& unique_key) final;
  [[nodiscard]] StorageResult<std::optional<NewTrial>> pop_waiting_trial(
      std::int64_t study_id) final;
  [[nodiscard]] StorageResult<void> set_trial_param(std::int64_t trial_id, const std::string& name,
                                                    double internal,
                                                    const search::Distribution& dist) final;
  [[nodiscard]] StorageResult<bool> set_trial_state_values(std::int64_t trial_id,
                                                           search::TrialState state,
                                                           const TrialValues& values) final;
  [[nodiscard]] StorageResult<bool> set_complete_trial_value(std::int64_t trial_id, double value,
                                                             const std::string& keep_old_as) final;
  [[nodiscard]] StorageResult<void> set_trial_intermediate_value(std::int64_t trial_id,
                                                                 std::int64_t step,
                                                                 double value) final;
  [[nodiscard]] StorageResult<void> set_trial_user_attr(std::int64_t trial_id,
                                                        const std::string& key,
                                                        const nlohmann::json& value) final;
  [[nodiscard]] StorageResult<void> set_trial_system_attr(std::int64_t trial_id,
                                                          const std::string& key,
                                                          const nlohmann::json& value) final;
  [[nodiscard]] StorageResult<void> record_heartbeat(std::int64_t trial_id) final;
  [[nodiscard]] StorageResult<bool> update_trial(std::int64_t trial_id,
                                                 const TrialUpdate& update) final;
  [[nodiscard]] StorageResult<search::FrozenTrial> get_trial(std::int64_t trial_id) final;
  [[nodiscard]] StorageResult<std::vector<search::FrozenTrial>> get_all_trials(
      std::int64_t study_id) final;
  [[nodiscard]] StorageResult<std::vector<search::FrozenTrial>> get_trials_changed(
      std::int64_t study_id, StudyMark& mark, const std::vector<std::int64_t>& refresh) final;
  [[nodiscard]] StorageResult<TrialLiveness> trial_liveness(std::int64_t trial_id) final;
  double grace_period_s() const final { return m_options.grace_period_s; }

 protected:
  RdbStorage(const SqlDialect& dialect, const StorageOptions& options, std::string name)
      : m_options(options), m_dialect(dialect), m_name(std::move(name)) {}

  // Runs one statement with `params` bound to its `?`s in order; every row it returns.
  [[nodiscard]] virtual StorageResult<SqlRows> query(std::string_view sql,
                                                     const std::vector<SqlValue>& params) = 0;
  // Runs `body` in one transaction of `kind`, committed when it succeeds and rolled back when it
  // fails. A backend may run it more than once (a retried transaction): it must start afresh.
  [[nodiscard]] virtual StorageResult<void> transact(
      TxnKind kind, const std::function<StorageResult<void>()>& body) = 0;
  // Optuna's version row (none before the schema is written), and the check of what it read:
  // an error unless the schema is version 12.
  static constexpr const char* k_version_query =
      "SELECT schema_version, library_version FROM version_info WHERE version_info_id = 1";
  [[nodiscard]] static Result<void> check_version_rows(const SqlRows& rows);
  // What names the database in errors: a path, or a URL without its password.
  const std::string& name() const { return m_name; }

  StorageOptions m_options;
  // Whether the database keeps the change count (tune_extras_sql(): always once opened for
  // writing; a database an older tune wrote, opened read-only, may not). Set by the backend.
  bool m_change_log = true;

 private:
  [[nodiscard]] StorageResult<std::optional<StudyInfo>> find_study(const std::string& name);
  [[nodiscard]] StorageResult<std::vector<StudyInfo>> read_studies(
      const std::string& where, const std::vector<SqlValue>& params);
  [[nodiscard]] StorageResult<void> set_attr(const char* table, const char* owner_column,
                                             std::int64_t owner_id, const std::string& key,
                                             const nlohmann::json& value);
  [[nodiscard]] StorageResult<void> insert_heartbeat(std::int64_t trial_id);
  [[nodiscard]] StorageResult<std::optional<NewTrial>> claimed_trial(std::int64_t study_id,
                                                                     const std::string& token);
  [[nodiscard]] StorageResult<std::optional<NewTrial>> claim_trial(
      TxnKind kind, std::int64_t study_id, bool lock_study, bool counts_change,
      const std::function<StorageResult<std::optional<NewTrial>>()>& take);
  [[nodiscard]] StorageResult<void> update_unfinished(
      std::int64_t trial_id, std::string_view what, TxnKind kind,
      const std::function<StorageResult<void>()>& body);
  // `kind` as the options allow: synchronous=normal makes every write a plain `write`.
  TxnKind durable(TxnKind kind) const { return m_options.synchronous_full ? kind : TxnKind::write; }
  [[nodiscard]] StorageResult<std::optional<search::TrialState>> locked_state(
      std::int64_t trial_id, std::string_view what);
  [[nodiscard]] StorageResult<void> write_value(std::int64_t trial_id, std::int64_t objective,
                                                double value);
  [[nodiscard]] StorageResult<void> finish_trial(std::int64_t trial_id, search::TrialState state,
                                                 const TrialValues& values);
  // Inside a write transaction: counts a change of the trial (get_trials_changed).
  [[nodiscard]] StorageResult<void> bump_change(std::int64_t trial_id);
  // The trials matching `where` (a condition on `trials` with `?`s for `params`) in number
  // order, each whole, read in one snapshot (its own read transaction).
  [[nodiscard]] StorageResult<std::vector<search::FrozenTrial>> load_trials(
      const std::string& where, const std::vector<SqlValue>& params);
  // The same inside a transaction the caller runs.
  [[nodiscard]] StorageResult<std::vector<search::FrozenTrial>> select_trials(
      const std::string& where, const std::vector<SqlValue>& params);
  [[nodiscard]] StorageResult<void> read_trial_details(std::vector<search::FrozenTrial>& trials);
  // `ids` as the one parameter of m_dialect.in_id_list.
  std::string id_list(const std::vector<std::int64_t>& ids) const;

  const SqlDialect& m_dialect;
  std::string m_name;
};

}  // namespace tune::tuner
