#include "tuner/storage/optuna_schema.h"

#include <fmt/format.h>

namespace tune::tuner {
namespace {

// The tables in the order Optuna creates them. {id} is an autoincrement key, {datetime} a naive
// timestamp, {float} a double, the other fields Optuna's enum columns (plain text on SQLite).
constexpr const char* k_tables = R"sql(
CREATE TABLE IF NOT EXISTS studies (
	study_id {id}, 
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
	study_direction_id {id}, 
	direction {direction} NOT NULL, 
	study_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	PRIMARY KEY (study_direction_id), 
	UNIQUE (study_id, objective), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS study_user_attributes (
	study_user_attribute_id {id}, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_user_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS study_system_attributes (
	study_system_attribute_id {id}, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_system_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS trials (
	trial_id {id}, 
	number INTEGER, 
	study_id INTEGER, 
	state {state} NOT NULL, 
	datetime_start {datetime}, 
	datetime_complete {datetime}, 
	PRIMARY KEY (trial_id), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE IF NOT EXISTS trial_user_attributes (
	trial_user_attribute_id {id}, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_user_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_system_attributes (
	trial_system_attribute_id {id}, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_system_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_params (
	param_id {id}, 
	trial_id INTEGER, 
	param_name VARCHAR(512), 
	param_value {float}, 
	distribution_json TEXT, 
	PRIMARY KEY (param_id), 
	UNIQUE (trial_id, param_name), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_values (
	trial_value_id {id}, 
	trial_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	value {float}, 
	value_type {value_type} NOT NULL, 
	PRIMARY KEY (trial_value_id), 
	UNIQUE (trial_id, objective), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_intermediate_values (
	trial_intermediate_value_id {id}, 
	trial_id INTEGER NOT NULL, 
	step INTEGER NOT NULL, 
	intermediate_value {float}, 
	intermediate_value_type {intermediate_type} NOT NULL, 
	PRIMARY KEY (trial_intermediate_value_id), 
	UNIQUE (trial_id, step), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS trial_heartbeats (
	trial_heartbeat_id {id}, 
	trial_id INTEGER NOT NULL, 
	heartbeat {datetime} NOT NULL, 
	PRIMARY KEY (trial_heartbeat_id), 
	UNIQUE (trial_id), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE IF NOT EXISTS alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
INSERT INTO version_info (version_info_id, schema_version, library_version)
  VALUES (1, {version}, '3.1.0') ON CONFLICT DO NOTHING;
INSERT INTO alembic_version (version_num)
  SELECT 'v3.0.0.d' WHERE NOT EXISTS (SELECT 1 FROM alembic_version);
)sql";

// SQLAlchemy's Enum columns become native types on PostgreSQL.
constexpr const char* k_postgresql_enums = R"sql(
CREATE TYPE studydirection AS ENUM ('NOT_SET', 'MINIMIZE', 'MAXIMIZE');
CREATE TYPE trialstate AS ENUM ('RUNNING', 'COMPLETE', 'PRUNED', 'FAIL', 'WAITING');
CREATE TYPE trialvaluetype AS ENUM ('FINITE', 'INF_POS', 'INF_NEG');
CREATE TYPE trialintermediatevaluetype AS ENUM ('FINITE', 'INF_POS', 'INF_NEG', 'NAN');
)sql";

constexpr const char* k_tune_extras = R"sql(
CREATE INDEX IF NOT EXISTS ix_tune_trials_study_id_state_id ON trials (study_id, state, trial_id);
CREATE INDEX IF NOT EXISTS ix_tune_trials_study_id_number ON trials (study_id, number);
CREATE TABLE IF NOT EXISTS tune_study_changes (
	study_id INTEGER NOT NULL, 
	seq BIGINT NOT NULL, 
	PRIMARY KEY (study_id), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS tune_trial_changes (
	trial_id INTEGER NOT NULL, 
	study_id INTEGER NOT NULL, 
	seq BIGINT NOT NULL, 
	PRIMARY KEY (trial_id), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS ix_tune_trial_changes_study_id_seq ON tune_trial_changes (study_id, seq);
)sql";

}  // namespace

std::string tune_extras_sql() { return k_tune_extras; }

std::string optuna_schema_sql(SqlFlavor flavor) {
  using fmt::arg;
  if (flavor == SqlFlavor::sqlite) {
    return fmt::format(fmt::runtime(k_tables), arg("id", "INTEGER NOT NULL"),
                       arg("datetime", "DATETIME"), arg("float", "FLOAT"),
                       arg("direction", "VARCHAR(8)"), arg("state", "VARCHAR(8)"),
                       arg("value_type", "VARCHAR(7)"), arg("intermediate_type", "VARCHAR(7)"),
                       arg("version", k_optuna_schema_version));
  }
  return k_postgresql_enums + fmt::format(fmt::runtime(k_tables), arg("id", "SERIAL NOT NULL"),
                                          arg("datetime", "TIMESTAMP WITHOUT TIME ZONE"),
                                          arg("float", "FLOAT"), arg("direction", "studydirection"),
                                          arg("state", "trialstate"),
                                          arg("value_type", "trialvaluetype"),
                                          arg("intermediate_type", "trialintermediatevaluetype"),
                                          arg("version", k_optuna_schema_version));
}

}  // namespace tune::tuner
