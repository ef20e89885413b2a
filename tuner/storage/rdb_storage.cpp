#include "tuner/storage/rdb_storage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <unordered_map>

#include "tuner/base/trial_attrs.h"
#include "tuner/storage/optuna_schema.h"

namespace tune::tuner {
namespace {

using search::FrozenTrial;
using search::TrialState;

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

search::Direction parse_direction(const std::string& s) {
  return s == "MAXIMIZE" ? search::Direction::maximize : search::Direction::minimize;
}

// The study's directions as the messages name them: MINIMIZE, or [MINIMIZE, MAXIMIZE].
std::string directions_text(const std::vector<search::Direction>& directions) {
  std::vector<std::string> names;
  for (auto d : directions) names.emplace_back(search::to_string(d));
  return names.size() == 1 ? names[0] : fmt::format("[{}]", fmt::join(names, ", "));
}

// `error` with what failed before its message, its kind kept.
std::unexpected<StorageError> failed(std::string_view what, const StorageError& error) {
  return std::unexpected(error.in(what));
}

// Attributes may carry a trial's bytes: never throw on invalid UTF-8, store U+FFFD instead.
std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A claim token (k_attr_claim_token): 128 random bits in hex.
std::string new_claim_token() {
  std::random_device rd;
  std::uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 2; ++i) {
    hi = hi << 32 | rd();
    lo = lo << 32 | rd();
  }
  return fmt::format("{:016x}{:016x}", hi, lo);
}

}  // namespace

Result<void> RdbStorage::check_version_rows(const SqlRows& rows) {
  if (!rows.empty() && rows[0].int64(0) != k_optuna_schema_version) {
    return std::unexpected(fmt::format(
        "database schema version {} (library {}) is not Optuna 3.1's schema 12; upgrade or use "
        "another database",
        rows[0].int64(0), rows[0].text(1)));
  }
  return {};
}

// The studies matching `where` (a condition on `s`, the studies table), each with one direction
// per objective, in objective order (Optuna's study_directions rows).
StorageResult<std::vector<StudyInfo>> RdbStorage::read_studies(
    const std::string& where, const std::vector<SqlValue>& params) {
  auto rows = query(
      "SELECT s.study_id, s.study_name, d.direction FROM studies s LEFT JOIN study_directions d "
      "ON d.study_id = s.study_id WHERE " +
          where + " ORDER BY s.study_id, d.objective",
      params);
  if (!rows) return failed("read studies", rows.error());
  std::vector<StudyInfo> out;
  for (const auto& row : *rows) {
    const auto direction = parse_direction(row.text(2));
    if (out.empty() || out.back().study_id != row.int64(0)) {
      out.push_back({row.int64(0), row.text(1), direction, {}});
    }
    out.back().directions.push_back(direction);
  }
  return out;
}

StorageResult<std::optional<StudyInfo>> RdbStorage::find_study(const std::string& name) {
  auto studies = read_studies("s.study_name = ?", {name});
  if (!studies) return std::unexpected(studies.error());
  if (studies->empty()) return std::optional<StudyInfo>();
  return studies->front();
}

StorageResult<StudyInfo> RdbStorage::get_study(const std::string& name) {
  std::optional<StudyInfo> found;
  auto r = transact(TxnKind::statement, [&]() -> StorageResult<void> {
    auto f = find_study(name);
    if (!f) return std::unexpected(f.error());
    found = std::move(*f);
    return {};
  });
  if (!r) return std::unexpected(r.error());
  if (!found) {
    return std::unexpected(StorageError(StorageErrorKind::missing,
                                        fmt::format("no study named '{}' in {}", name, m_name)));
  }
  return *found;
}

StorageResult<std::vector<StudyInfo>> RdbStorage::get_all_studies() {
  std::vector<StudyInfo> out;
  auto r = transact(TxnKind::statement, [&]() -> StorageResult<void> {
    auto studies = read_studies("1 = 1", {});
    if (!studies) return std::unexpected(studies.error());
    out = std::move(*studies);
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return out;
}

StorageResult<StudyInfo> RdbStorage::get_or_create_study(
    const std::string& name, const std::vector<search::Direction>& directions, bool* created,
    const StudySeed& seed) {
  if (directions.empty()) return std::unexpected("create study: no direction given");
  StudyInfo info{-1, name, directions.front(), directions};
  bool made = false;
  // Run again after its COMMIT (made = true) lost its answer, the body finds the study it made.
  bool made_before = false;
  auto r = transact(durable(TxnKind::write_flush), [&]() -> StorageResult<void> {
    made_before = made;
    made = false;
    if (*m_dialect.serialize_study_creation) {
      auto lock = query(m_dialect.serialize_study_creation, {});
      if (!lock) return failed("create study", lock.error());
    }
    auto existing = find_study(name);
    if (!existing) return std::unexpected(existing.error());
    if (*existing) {
      info = **existing;
      made = made_before;
      return {};
    }
    auto ins = query("INSERT INTO studies (study_name) VALUES (?) RETURNING study_id", {name});
    if (!ins) return failed("create study", ins.error());
    info.study_id = ins->at(0).int64(0);
    for (std::size_t i = 0; i < directions.size(); ++i) {
      auto dir =
          query("INSERT INTO study_directions (direction, study_id, objective) VALUES (?, ?, ?)",
                {std::string(search::to_string(directions[i])), info.study_id,
                 static_cast<std::int64_t>(i)});
      if (!dir) return failed("create study direction", dir.error());
    }
    for (const auto& [key, value] : seed.user_attrs.items())
      if (auto a = set_attr("study_user_attributes", "study_id", info.study_id, key, value); !a)
        return a;
    // Optuna's enqueue_trial, numbered 0, 1, ... in the study just made (create_trial's numbering).
    for (std::size_t i = 0; i < seed.waiting_trials.size(); ++i) {
      auto ins = query(
          "INSERT INTO trials (number, study_id, state, datetime_start) VALUES (?, ?, ?, NULL) "
          "RETURNING trial_id",
          {static_cast<std::int64_t>(i), info.study_id,
           std::string(search::to_string(search::TrialState::waiting))});
      if (!ins) return failed("enqueue a new study's trial", ins.error());
      const auto trial_id = ins->at(0).int64(0);
      for (const auto& [key, value] : seed.waiting_trials[i].items())
        if (auto a = set_attr("trial_system_attributes", "trial_id", trial_id, key, value); !a)
          return a;
    }
    made = true;
    return {};
  });
  if (!r) return std::unexpected(r.error());
  if (created) *created = made;
  if (info.directions != directions) {
    return std::unexpected(
        fmt::format("study '{}' in {} was created with direction {}; the study file says {}", name,
                    m_name, directions_text(info.directions), directions_text(directions)));
  }
  return info;
}

StorageResult<void> RdbStorage::set_attr(const char* table, const char* owner_column,
                                         std::int64_t owner_id, const std::string& key,
                                         const nlohmann::json& value) {
  const std::string sql = fmt::format(
      "INSERT INTO {0} ({1}, \"key\", value_json) VALUES (?, ?, ?) "
      "ON CONFLICT ({1}, \"key\") DO UPDATE SET value_json = excluded.value_json",
      table, owner_column);
  auto r = query(sql, {owner_id, key, dump_json(value)});
  if (!r) return failed(table, r.error());
  return {};
}

StorageResult<void> RdbStorage::set_study_user_attr(std::int64_t study_id, const std::string& key,
                                                    const nlohmann::json& value) {
  return transact(TxnKind::statement, [&] {
    return set_attr("study_user_attributes", "study_id", study_id, key, value);
  });
}

StorageResult<nlohmann::json> RdbStorage::get_study_user_attrs(std::int64_t study_id) {
  nlohmann::json out = nlohmann::json::object();
  auto r = transact(TxnKind::statement, [&]() -> StorageResult<void> {
    auto rows = query("SELECT \"key\", value_json FROM study_user_attributes WHERE study_id = ?",
                      {study_id});
    if (!rows) return failed("get_study_user_attrs", rows.error());
    out = nlohmann::json::object();
    for (const auto& row : *rows) {
      out[row.text(0)] = nlohmann::json::parse(row.text(1), nullptr, false);
    }
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return out;
}

// A heartbeat in whole seconds of the database's UTC clock, as Optuna writes one on SQLite
// (CURRENT_TIMESTAMP): Optuna's fail_stale_trials() takes `(now - heartbeat).seconds`, which for
// a heartbeat a fraction of a second "ahead" wraps to a day and fails a live trial.
StorageResult<void> RdbStorage::insert_heartbeat(std::int64_t trial_id) {
  const std::string sql = fmt::format(
      "INSERT INTO trial_heartbeats (trial_id, heartbeat) VALUES (?, {}) "
      "ON CONFLICT (trial_id) DO UPDATE SET heartbeat = excluded.heartbeat",
      m_dialect.heartbeat_utc);
  auto r = query(sql, {trial_id});
  if (!r) return failed("record_heartbeat", r.error());
  return {};
}

// Inside a write transaction, when its body runs again: the trial of the study that an earlier
// run of it claimed (its COMMIT went through, its answer was lost), if any.
StorageResult<std::optional<NewTrial>> RdbStorage::claimed_trial(std::int64_t study_id,
                                                                 const std::string& token) {
  auto rows = query(
      "SELECT t.trial_id, t.number FROM trials t JOIN trial_system_attributes a ON "
      "a.trial_id = t.trial_id WHERE t.study_id = ? AND a.\"key\" = ? AND a.value_json = ?",
      {study_id, std::string(k_attr_claim_token), dump_json(token)});
  if (!rows) return failed("find the trial claimed before the connection was lost", rows.error());
  if (rows->empty()) return std::optional<NewTrial>();
  return NewTrial{rows->front().int64(0), static_cast<int>(rows->front().int64(1))};
}

// The claim token's retry, for every call that hands a trial to its caller (a creation, a pop).
// A backend runs a transaction's body again after a connection lost at COMMIT, which may have
// gone through: a body run again first looks for the trial its token marks and returns that one,
// so that a retry never makes a second trial, nor pops a second, nor leaves a number nobody runs.
// `take` makes or pops the trial (nullopt: none to pop); the token is written with it, and the
// change counted after it (`counts_change`, a pop: bump_change is the last statement). With
// `lock_study`, the study's row is locked first, also before the look-up: a run cut off at
// COMMIT holds that lock until its commit is done, so the look-up sees it.
StorageResult<std::optional<NewTrial>> RdbStorage::claim_trial(
    TxnKind kind, std::int64_t study_id, bool lock_study, bool counts_change,
    const std::function<StorageResult<std::optional<NewTrial>>()>& take) {
  std::optional<NewTrial> out;
  const std::string token = new_claim_token();
  int runs = 0;
  auto r = transact(kind, [&]() -> StorageResult<void> {
    out.reset();
    if (lock_study) {
      auto lock = query(
          fmt::format("SELECT study_id FROM studies WHERE study_id = ?{}", m_dialect.for_update),
          {study_id});
      if (!lock) return failed("create trial", lock.error());
      if (lock->empty()) {
        return std::unexpected(StorageError(StorageErrorKind::missing,
                                            fmt::format("study id {} does not exist", study_id)));
      }
    }
    if (runs++ > 0) {  // run again: did the last run commit?
      auto mine = claimed_trial(study_id, token);
      if (!mine) return std::unexpected(mine.error());
      if (*mine) {
        out = **mine;
        return {};
      }
    }
    auto taken = take();
    if (!taken) return std::unexpected(taken.error());
    if (!*taken) return {};
    const NewTrial t = **taken;
    if (auto c =
            set_attr("trial_system_attributes", "trial_id", t.trial_id, k_attr_claim_token, token);
        !c) {
      return c;
    }
    if (counts_change) {
      if (auto b = bump_change(t.trial_id); !b) return b;
    }
    out = t;
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return out;
}

StorageResult<NewTrial> RdbStorage::create_trial(std::int64_t study_id, search::TrialState state,
                                                 const nlohmann::json& system_attrs) {
  auto r = create_trial_unless(study_id, state, system_attrs, "");
  if (!r) return std::unexpected(r.error());
  return **r;  // a creation without a key always takes a trial
}

StorageResult<std::optional<NewTrial>> RdbStorage::create_trial_unless(
    std::int64_t study_id, search::TrialState state, const nlohmann::json& system_attrs,
    const std::string& unique_key) {
  const bool running = state == TrialState::running;
  // Acknowledged means durable: the number is handed out once it is on disk, so that no crash
  // (of this machine, or of a database server other workers outlive) can take the trial back
  // after its worker started it and hand the number to another (claim_trial: nor a retry make a
  // second one). An enqueued (WAITING) trial starts when popped, and the pop flushes it: its own
  // commit need only survive the database server.
  const auto kind = durable(running ? TxnKind::write_flush : TxnKind::write_synced);
  // Optuna numbers a trial by the count of the study's trials created before it. Holding the
  // study's row (as Optuna's create_trial does) keeps creators of one study in line.
  auto r = claim_trial(
      kind, study_id, /*lock_study=*/true, /*counts_change=*/false,
      [&]() -> StorageResult<std::optional<NewTrial>> {
        // Under the study's row: no other creator of the study can add the same key meanwhile.
        if (!unique_key.empty()) {
          auto found = query(
              "SELECT 1 FROM trial_system_attributes a JOIN trials t ON t.trial_id = a.trial_id "
              "WHERE t.study_id = ? AND a.\"key\" = ? AND a.value_json = ? LIMIT 1",
              {study_id, unique_key, dump_json(system_attrs.at(unique_key))});
          if (!found) return failed("create trial", found.error());
          if (!found->empty()) return std::optional<NewTrial>();
        }
        // The number in the INSERT itself: every statement under the study's row is a round trip
        // that the other creators of the study wait for (a statement after the lock sees the
        // previous holder's commit). One past the highest number, read from the index on
        // (study_id, number) in a step, where Optuna counts the earlier trials (a pass over all
        // of them): the same number, as neither tune nor Optuna leaves a gap, and never one
        // already taken if a trial was deleted.
        auto ins = query(fmt::format("INSERT INTO trials (number, study_id, state, datetime_start) "
                                     "VALUES ((SELECT COALESCE(MAX(number), -1) + 1 FROM trials "
                                     "WHERE study_id = ?), ?, ?, {}) RETURNING trial_id, number",
                                     running ? m_dialect.now_utc : "NULL"),
                         {study_id, study_id, std::string(search::to_string(state))});
        if (!ins) return failed("create trial", ins.error());
        const NewTrial t{ins->at(0).int64(0), static_cast<int>(ins->at(0).int64(1))};
        // The first heartbeat comes with the start, so that a trial whose tune dies before
        // launching it still ages (another host then recovers it).
        if (running) {
          if (auto h = insert_heartbeat(t.trial_id); !h) return std::unexpected(h.error());
        }
        for (const auto& [key, value] : system_attrs.items()) {
          if (auto a = set_attr("trial_system_attributes", "trial_id", t.trial_id, key, value);
              !a) {
            return std::unexpected(a.error());
          }
        }
        return t;
      });
  if (!r) return std::unexpected(r.error());
  return *r;
}

StorageResult<std::optional<NewTrial>> RdbStorage::pop_waiting_trial(std::int64_t study_id) {
  // Durable before the trial starts, as create_trial's (a popped trial lost back to WAITING
  // would run twice).
  return claim_trial(
      durable(TxnKind::write_flush), study_id, /*lock_study=*/false, /*counts_change=*/true,
      [&]() -> StorageResult<std::optional<NewTrial>> {
        // Several workers pop at once: each takes a WAITING row no other holds.
        auto sel = query(fmt::format("SELECT trial_id, number FROM trials WHERE study_id = ? AND "
                                     "state = 'WAITING' ORDER BY trial_id LIMIT 1{}",
                                     m_dialect.skip_locked),
                         {study_id});
        if (!sel) return failed("pop waiting trial", sel.error());
        if (sel->empty()) return std::optional<NewTrial>();
        const NewTrial t{sel->at(0).int64(0), static_cast<int>(sel->at(0).int64(1))};
        auto upd = query(fmt::format("UPDATE trials SET state = 'RUNNING', datetime_start = {} "
                                     "WHERE trial_id = ?",
                                     m_dialect.now_utc),
                         {t.trial_id});
        if (!upd) return failed("pop waiting trial", upd.error());
        if (auto h = insert_heartbeat(t.trial_id); !h) return std::unexpected(h.error());
        return t;
      });
}

StorageResult<void> RdbStorage::set_trial_param(std::int64_t trial_id, const std::string& name,
                                                double internal, const search::Distribution& dist) {
  return update_unfinished(
      trial_id, "set_trial_param", durable(TxnKind::write_synced), [&]() -> StorageResult<void> {
        auto r = query(
            "INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (trial_id, param_name) DO UPDATE SET "
            "param_value = excluded.param_value, distribution_json = excluded.distribution_json",
            {trial_id, name, internal, search::to_json(dist).dump()});
        if (!r) return failed("set_trial_param", r.error());
        return {};
      });
}

StorageResult<bool> RdbStorage::set_trial_state_values(std::int64_t trial_id, TrialState state,
                                                       const TrialValues& values) {
  bool changed = false;
  // A finished trial is what a power loss must not take; the writes before it go along.
  const auto kind = durable(is_finished(state) ? TxnKind::write_flush : TxnKind::write_synced);
  int runs = 0;
  auto r = transact(kind, [&]() -> StorageResult<void> {
    changed = false;
    const bool again = runs++ > 0;
    auto old = locked_state(trial_id, "set trial state");
    if (!old) return std::unexpected(old.error());
    if (*old && is_finished(**old)) {
      // Run again after a COMMIT whose answer was lost: finding the very state it writes, the
      // last run's write went through.
      changed = again && **old == state;
      return {};
    }
    if (auto f = finish_trial(trial_id, state, values); !f) return f;
    changed = true;
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return changed;
}

// Inside a write transaction: the trial's state, its row locked where the dialect can.
StorageResult<std::optional<TrialState>> RdbStorage::locked_state(std::int64_t trial_id,
                                                                  std::string_view what) {
  auto sel =
      query(fmt::format("SELECT state FROM trials WHERE trial_id = ?{}", m_dialect.for_update),
            {trial_id});
  if (!sel) return failed(what, sel.error());
  if (sel->empty()) return std::unexpected(missing_trial_error(trial_id));
  return parse_state(sel->at(0).text(0));
}

// Inside a write transaction: the trial's value of objective `objective`, inserted or replaced.
StorageResult<void> RdbStorage::write_value(std::int64_t trial_id, std::int64_t objective,
                                            double value) {
  auto val = query(
      "INSERT INTO trial_values (trial_id, objective, value, value_type) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (trial_id, objective) DO UPDATE SET value = excluded.value, "
      "value_type = excluded.value_type",
      {trial_id, objective, finite_or_null(value), value_type(value)});
  if (!val) return failed("set trial value", val.error());
  return {};
}

StorageResult<bool> RdbStorage::set_complete_trial_value(std::int64_t trial_id, double value,
                                                         const std::string& keep_old_as) {
  bool changed = false;
  auto r = transact(durable(TxnKind::write_synced), [&]() -> StorageResult<void> {
    changed = false;
    auto old = locked_state(trial_id, "set complete trial value");
    if (!old) return std::unexpected(old.error());
    if (*old != TrialState::complete) return {};
    if (!keep_old_as.empty()) {
      // The value it replaces, kept once (the first believed value replaces the searched one).
      auto cur =
          query("SELECT value, value_type FROM trial_values WHERE trial_id = ? AND objective = 0",
                {trial_id});
      if (!cur) return failed("set complete trial value", cur.error());
      if (!cur->empty()) {
        const nlohmann::json old_value = value_from_row(cur->front(), 0, 1);
        auto kept = query(
            "INSERT INTO trial_user_attributes (trial_id, \"key\", value_json) VALUES (?, ?, ?) "
            "ON CONFLICT (trial_id, \"key\") DO NOTHING",
            {trial_id, keep_old_as, dump_json(old_value)});
        if (!kept) return failed("set complete trial value", kept.error());
      }
    }
    if (auto w = write_value(trial_id, 0, value); !w) return w;
    if (auto b = bump_change(trial_id); !b) return b;
    changed = true;
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return changed;
}

// set_trial_state_values() once the trial is known to be unfinished (and held).
StorageResult<void> RdbStorage::finish_trial(std::int64_t trial_id, TrialState state,
                                             const TrialValues& values) {
  for (std::size_t i = 0; i < values.values.size(); ++i) {
    if (auto w = write_value(trial_id, static_cast<std::int64_t>(i), values.values[i]); !w)
      return w;
  }
  const std::string sql =
      is_finished(state)
          ? fmt::format("UPDATE trials SET state = ?, datetime_complete = {} WHERE trial_id = ?",
                        m_dialect.now_utc)
          : fmt::format(
                "UPDATE trials SET state = ?, datetime_start = COALESCE(datetime_start, "
                "{}) WHERE trial_id = ?",
                m_dialect.now_utc);
  auto upd = query(sql, {std::string(search::to_string(state)), trial_id});
  if (!upd) return failed("set trial state", upd.error());
  return bump_change(trial_id);
}

// The study's count goes up by one under its row's lock (held to the commit), and the trial
// records it: counts commit in the order they were taken, so a reader that saw count N has seen
// every change up to N (get_trials_changed). Always the last statement of its transaction, after
// the trial's row lock: one lock order, no deadlock.
StorageResult<void> RdbStorage::bump_change(std::int64_t trial_id) {
  auto seq = query(
      "INSERT INTO tune_study_changes (study_id, seq) SELECT study_id, 1 FROM trials WHERE "
      "trial_id = ? ON CONFLICT (study_id) DO UPDATE SET seq = tune_study_changes.seq + 1 "
      "RETURNING study_id, seq",
      {trial_id});
  if (!seq) return failed("count the trial's change", seq.error());
  if (seq->empty()) return std::unexpected(missing_trial_error(trial_id));
  auto mark = query(
      "INSERT INTO tune_trial_changes (trial_id, study_id, seq) VALUES (?, ?, ?) ON CONFLICT "
      "(trial_id) DO UPDATE SET study_id = excluded.study_id, seq = excluded.seq",
      {trial_id, seq->front().int64(0), seq->front().int64(1)});
  if (!mark) return failed("count the trial's change", mark.error());
  return {};
}

StorageResult<bool> RdbStorage::update_trial(std::int64_t trial_id, const TrialUpdate& update) {
  const bool ends = update.state && is_finished(*update.state);
  bool changed = false;
  int runs = 0;
  auto r = transact(
      durable(ends ? TxnKind::write_flush : TxnKind::write_synced), [&]() -> StorageResult<void> {
        changed = false;
        const bool again = runs++ > 0;
        auto old = locked_state(trial_id, "update trial");
        if (!old) return std::unexpected(old.error());
        if (*old && is_finished(**old)) {
          if (!update.state) {
            return std::unexpected(finished_trial_error(trial_id, **old).in("update trial"));
          }
          // As set_trial_state_values: run again after a COMMIT whose answer was
          // lost, finding the very state it writes, the last run's write went
          // through.
          changed = again && **old == *update.state;
          return {};
        }
        for (const auto& [step, value] : update.intermediate_values) {
          auto iv = query(
              "INSERT INTO trial_intermediate_values (trial_id, step, "
              "intermediate_value, intermediate_value_type) VALUES (?, ?, ?, ?) ON "
              "CONFLICT (trial_id, step) DO UPDATE SET intermediate_value = "
              "excluded.intermediate_value, intermediate_value_type = "
              "excluded.intermediate_value_type",
              {trial_id, step, finite_or_null(value), value_type(value)});
          if (!iv) return failed("update trial", iv.error());
        }
        for (const auto& [key, value] : update.user_attrs.items()) {
          if (auto a = set_attr("trial_user_attributes", "trial_id", trial_id, key, value); !a)
            return a;
        }
        for (const auto& [key, value] : update.system_attrs.items()) {
          if (auto a = set_attr("trial_system_attributes", "trial_id", trial_id, key, value); !a)
            return a;
        }
        for (const auto& p : update.params) {
          auto w = query(
              "INSERT INTO trial_params (trial_id, param_name, param_value, "
              "distribution_json) VALUES (?, ?, ?, ?) ON CONFLICT (trial_id, "
              "param_name) DO UPDATE SET param_value = excluded.param_value, "
              "distribution_json = excluded.distribution_json",
              {trial_id, p.name, p.internal, search::to_json(p.distribution).dump()});
          if (!w) return failed("update trial", w.error());
        }
        if (update.state) {
          // finish_trial counts the change
          if (auto f = finish_trial(trial_id, *update.state, update.values); !f) return f;
        } else if (!update.params.empty()) {
          if (auto b = bump_change(trial_id); !b) return b;
        }
        changed = true;
        return {};
      });
  if (!r) return std::unexpected(r.error());
  return changed;
}

StorageResult<void> RdbStorage::set_trial_intermediate_value(std::int64_t trial_id,
                                                             std::int64_t step, double value) {
  // Asynchronous on a server: a crash may take the last fraction of a second's values, points
  // of a curve that only the pruner and the charts read; the trial's value is written with its end.
  return update_unfinished(
      trial_id, "set_trial_intermediate_value", TxnKind::write, [&]() -> StorageResult<void> {
        auto r = query(
            "INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value, "
            "intermediate_value_type) VALUES (?, ?, ?, ?) ON CONFLICT (trial_id, step) DO UPDATE "
            "SET intermediate_value = excluded.intermediate_value, "
            "intermediate_value_type = excluded.intermediate_value_type",
            {trial_id, step, finite_or_null(value), value_type(value)});
        if (!r) return failed("set_trial_intermediate_value", r.error());
        return {};
      });
}

StorageResult<void> RdbStorage::set_trial_user_attr(std::int64_t trial_id, const std::string& key,
                                                    const nlohmann::json& value) {
  return update_unfinished(trial_id, "set_trial_user_attr", durable(TxnKind::write_synced), [&] {
    return set_attr("trial_user_attributes", "trial_id", trial_id, key, value);
  });
}

StorageResult<void> RdbStorage::set_trial_system_attr(std::int64_t trial_id, const std::string& key,
                                                      const nlohmann::json& value) {
  return update_unfinished(trial_id, "set_trial_system_attr", durable(TxnKind::write_synced), [&] {
    return set_attr("trial_system_attributes", "trial_id", trial_id, key, value);
  });
}

// Asynchronous on a server: a heartbeat a crash takes is replaced by the next one, a tick later,
// long before the grace period would count it (the first one is written with the trial).
StorageResult<void> RdbStorage::record_heartbeat(std::int64_t trial_id) {
  return update_unfinished(trial_id, "record_heartbeat", TxnKind::write,
                           [&] { return insert_heartbeat(trial_id); });
}

// One trial has one owner of its state: a write to a trial another worker finished (say, failed
// as stale while this one was suspended) is refused in the transaction that would make it, with
// the error finished_trial_error() names (Optuna's RDBStorage raises on it too).
StorageResult<void> RdbStorage::update_unfinished(
    std::int64_t trial_id, std::string_view what, TxnKind kind,
    const std::function<StorageResult<void>()>& body) {
  return transact(kind, [&]() -> StorageResult<void> {
    auto old = locked_state(trial_id, what);
    if (!old) return std::unexpected(old.error());
    if (*old && is_finished(**old)) {
      return std::unexpected(finished_trial_error(trial_id, **old).in(what));
    }
    return body();
  });
}

StorageResult<TrialLiveness> RdbStorage::trial_liveness(std::int64_t trial_id) {
  // Both ages by the database's clock against timestamps it wrote in UTC: neither this host's
  // clock nor its time zone matters. A timestamp the database cannot read gives NULL.
  const std::string sql = fmt::format(
      "SELECT {}, {} FROM trials t LEFT JOIN trial_heartbeats h ON h.trial_id = t.trial_id "
      "WHERE t.trial_id = ?",
      fmt::format(fmt::runtime(m_dialect.age_seconds), "h.heartbeat"),
      fmt::format(fmt::runtime(m_dialect.age_seconds), "t.datetime_start"));
  TrialLiveness out;
  auto r = transact(TxnKind::statement, [&]() -> StorageResult<void> {
    auto rows = query(sql, {trial_id});
    if (!rows) return failed("trial_liveness", rows.error());
    if (rows->empty()) return std::unexpected(missing_trial_error(trial_id));
    const auto& row = rows->front();
    out = {};
    if (!row.is_null(0)) out.since_heartbeat_s = row.real(0);
    if (!row.is_null(1)) out.since_start_s = row.real(1);
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return out;
}

StorageResult<std::vector<FrozenTrial>> RdbStorage::load_trials(
    const std::string& where, const std::vector<SqlValue>& params) {
  std::vector<FrozenTrial> trials;
  // One read transaction, so that both reads see one snapshot.
  auto r = transact(TxnKind::read, [&]() -> StorageResult<void> {
    auto t = select_trials(where, params);
    if (!t) return std::unexpected(t.error());
    trials = std::move(*t);
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return trials;
}

StorageResult<std::vector<FrozenTrial>> RdbStorage::select_trials(
    const std::string& where, const std::vector<SqlValue>& params) {
  std::vector<FrozenTrial> trials;
  auto rows = query(
      fmt::format("SELECT trial_id, number, state, {}, {} FROM trials WHERE {} "
                  "ORDER BY number, trial_id",
                  fmt::format(fmt::runtime(m_dialect.datetime_text), "datetime_start"),
                  fmt::format(fmt::runtime(m_dialect.datetime_text), "datetime_complete"), where),
      params);
  if (!rows) return failed("load trials", rows.error());
  trials.reserve(rows->size());
  for (const auto& row : *rows) {
    FrozenTrial t;
    t.trial_id = row.int64(0);
    t.number = static_cast<int>(row.int64(1));
    t.state = parse_state(row.text(2)).value_or(TrialState::fail);
    if (!row.is_null(3)) t.datetime_start = parse_datetime(row.text(3));
    if (!row.is_null(4)) t.datetime_complete = parse_datetime(row.text(4));
    trials.push_back(std::move(t));
  }
  if (trials.empty()) return trials;
  if (auto d = read_trial_details(trials); !d) return std::unexpected(d.error());
  return trials;
}

std::string RdbStorage::id_list(const std::vector<std::int64_t>& ids) const {
  return fmt::format("{}{}{}", m_dialect.list_open, fmt::join(ids, ","), m_dialect.list_close);
}

// Params, values, intermediate values and attributes of `trials`, in one statement: one round
// trip to a server instead of five, each table read through its (trial_id, ...) index for the
// listed ids alone. Each row is (what, trial_id, name, number, text), `what` saying which table
// it came from.
StorageResult<void> RdbStorage::read_trial_details(std::vector<FrozenTrial>& trials) {
  enum What : std::int64_t { param, value, intermediate, user_attr, system_attr };
  const std::string among = fmt::format(fmt::runtime(m_dialect.in_id_list), "trial_id");
  const std::string sql = fmt::format(
      "SELECT 0, trial_id, param_name, param_value, distribution_json FROM trial_params "
      "WHERE {0} UNION ALL "
      "SELECT 1, trial_id, CAST(objective AS VARCHAR), value, CAST(value_type AS VARCHAR) FROM "
      "trial_values WHERE {0} UNION ALL "
      "SELECT 2, trial_id, CAST(step AS VARCHAR), intermediate_value, "
      "CAST(intermediate_value_type AS VARCHAR) FROM trial_intermediate_values WHERE {0} "
      "UNION ALL SELECT 3, trial_id, \"key\", NULL, value_json FROM trial_user_attributes "
      "WHERE {0} UNION ALL SELECT 4, trial_id, \"key\", NULL, value_json FROM "
      "trial_system_attributes WHERE {0}",
      among);
  std::vector<std::int64_t> ids;
  ids.reserve(trials.size());
  for (const auto& t : trials) ids.push_back(t.trial_id);
  const SqlValue list = id_list(ids);
  auto rows = query(sql, {list, list, list, list, list});
  if (!rows) return failed("load trials", rows.error());
  std::unordered_map<std::int64_t, FrozenTrial*> by_id;
  by_id.reserve(trials.size());
  for (auto& t : trials) by_id[t.trial_id] = &t;
  for (const auto& row : *rows) {
    const auto it = by_id.find(row.int64(1));
    if (it == by_id.end()) continue;
    FrozenTrial& t = *it->second;
    switch (row.int64(0)) {
      case param:
        if (auto dist = search::distribution_from_json(
                nlohmann::json::parse(row.text(4), nullptr, false))) {
          t.params[row.text(2)] = row.real(3);
          t.distributions.emplace(row.text(2), std::move(*dist));
        }
        break;
      case value: {  // one row per objective, in any order
        const auto objective = static_cast<std::size_t>(std::max<std::int64_t>(row.int64(2), 0));
        if (t.values.size() <= objective) t.values.resize(objective + 1, std::nan(""));
        t.values[objective] = value_from_row(row, 3, 4);
        break;
      }
      case intermediate:
        t.intermediate_values[row.int64(2)] = value_from_row(row, 3, 4);
        break;
      default:
        (row.int64(0) == user_attr ? t.user_attrs : t.system_attrs)[row.text(2)] =
            nlohmann::json::parse(row.text(4), nullptr, false);
    }
  }
  for (auto& t : trials) {
    // A single-objective trial is read through `value` alone (search/trial.h).
    if (!t.values.empty()) t.value = t.values.front();
    if (t.values.size() == 1) t.values.clear();
    // Optuna keeps constraints as the system attribute "constraints".
    if (auto it = t.system_attrs.find("constraints");
        it != t.system_attrs.end() && it->is_array()) {
      for (const auto& c : *it) {
        if (c.is_number()) t.constraints.push_back(c.get<double>());
      }
    }
  }
  return {};
}

StorageResult<FrozenTrial> RdbStorage::get_trial(std::int64_t trial_id) {
  auto trials = load_trials("trial_id = ?", {trial_id});
  if (!trials) return std::unexpected(trials.error());
  if (trials->empty()) return std::unexpected(missing_trial_error(trial_id));
  return std::move(trials->front());
}

StorageResult<std::vector<FrozenTrial>> RdbStorage::get_all_trials(std::int64_t study_id) {
  return load_trials("study_id = ?", {study_id});
}

StorageResult<std::vector<FrozenTrial>> RdbStorage::get_trials_changed(
    std::int64_t study_id, StudyMark& mark, const std::vector<std::int64_t>& refresh) {
  std::vector<FrozenTrial> trials;
  StudyMark seen = mark;
  // One snapshot: the count read first covers every change the trials read after it show, and
  // no later one (get_trials_changed in storage.h).
  auto r = transact(TxnKind::read, [&]() -> StorageResult<void> {
    seen = mark;
    trials.clear();
    std::string where;
    std::vector<SqlValue> params;
    if (m_change_log) {
      auto count = query("SELECT seq FROM tune_study_changes WHERE study_id = ?",
                         std::vector<SqlValue>{study_id});
      if (!count) return failed("load trials", count.error());
      if (!count->empty()) seen.changes = count->front().int64(0);
      // New trials by id (the primary key's range), changed ones through the index on
      // (study_id, seq): neither reads a row that did not change.
      auto ids =
          query(fmt::format("SELECT trial_id FROM trials WHERE trial_id > ? AND {} UNION SELECT "
                            "trial_id FROM tune_trial_changes WHERE study_id = ? AND seq > ?",
                            m_dialect.study_of_listed_trials),
                {mark.trial_id, study_id, study_id, mark.changes});
      if (!ids) return failed("load trials", ids.error());
      if (ids->empty()) return {};
      std::vector<std::int64_t> list;
      list.reserve(ids->size());
      for (const auto& row : *ids) list.push_back(row.int64(0));
      where = fmt::format(fmt::runtime(m_dialect.in_id_list), "trial_id") + " AND " +
              m_dialect.study_of_listed_trials;
      params = {id_list(list), study_id};
    } else {
      // No change count: the ids bound as one list, so the statement stays the same size however
      // many trials are unfinished. A trial still WAITING is as the caller saw it (a WAITING trial
      // is written once, when created, and changes only when popped), so only its state is
      // looked at.
      where = std::string(m_dialect.study_of_listed_trials) +
              " AND (trial_id > ? OR (state != 'WAITING' AND " +
              fmt::format(fmt::runtime(m_dialect.in_id_list), "trial_id") + "))";
      params = {study_id, mark.trial_id, id_list(refresh)};
    }
    auto t = select_trials(where, params);
    if (!t) return std::unexpected(t.error());
    trials = std::move(*t);
    return {};
  });
  if (!r) return std::unexpected(r.error());
  for (const auto& t : trials) seen.trial_id = std::max(seen.trial_id, t.trial_id);
  mark = seen;
  return trials;
}

}  // namespace tune::tuner
