// Optuna 3.1's relational schema (RDBStorage, schema version 12), as the DDL each SQL backend
// runs to create it: one table description, rendered with SQLite's or PostgreSQL's column types
// exactly as SQLAlchemy creates them for python3-optuna (on PostgreSQL, enums are native types
// and ids are SERIAL), so either database can be shared with Optuna. Pure functions; thread-safe.
#pragma once

#include <string>

namespace tune::tuner {

enum class SqlFlavor { sqlite, postgresql };

// The schema version and library version rows Optuna 3.1 writes and checks.
inline constexpr int k_optuna_schema_version = 12;

// Every CREATE statement and the version rows, separated by ';'. The SQLite text creates only
// what is absent (IF NOT EXISTS); the PostgreSQL text expects an empty database (PostgreSQL has
// no CREATE TYPE IF NOT EXISTS), so its caller looks first, under a lock.
std::string optuna_schema_sql(SqlFlavor flavor);

// What tune adds beside Optuna's tables, which python3-optuna neither reads nor minds (it maps
// its own tables only, and deleting a study cascades here): indexes on `trials` for the
// statements run on every trial (pop the oldest WAITING trial: (study_id, state, trial_id);
// number a new one: (study_id, number)), and the change count
// behind Storage::get_trials_changed: tune_study_changes (study_id, seq: the study's count,
// bumped by every write that counts as a change) and tune_trial_changes (trial_id, study_id,
// seq: the count at the trial's last change). Idempotent (IF NOT EXISTS), the same text for
// both databases.
std::string tune_extras_sql();
// A table of tune_extras_sql(), to look for: a database without it keeps no change count.
inline constexpr const char* k_tune_changes_table = "tune_trial_changes";

}  // namespace tune::tuner
