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

}  // namespace tune::tuner
