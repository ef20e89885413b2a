// SQLite storage: Optuna's schema rows, trial life cycle, frozen finished trials, concurrency,
// unbounded numbers of unfinished trials, UTC timestamps, read-only opening, URL options.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tuner/sqlite_storage.h"
#include "tuner/trial_attrs.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_path = (fs::temp_directory_path() /
              (std::string("tune-storage-") +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db"))
                 .string();
    remove_db();
  }
  void TearDown() override { remove_db(); }
  void remove_db() {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(m_path + suffix);
  }
  std::unique_ptr<SqliteStorage> open(OpenMode mode = OpenMode::read_write) {
    StorageOptions options;
    options.mode = mode;
    auto s = SqliteStorage::open(m_path, options);
    EXPECT_TRUE(s) << s.error();
    return s ? std::move(*s) : nullptr;
  }
  std::string bytes() const {
    std::ifstream in(m_path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  bool side_files() const { return fs::exists(m_path + "-wal") || fs::exists(m_path + "-shm"); }
  std::string m_path;
};

// Sets TZ for the scope (the C library's local time), restoring it after.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = getenv("TZ")) m_old = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~ScopedTimeZone() {
    if (m_old) {
      setenv("TZ", m_old->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> m_old;
};

TEST_F(StorageTest, WritesOptunaVersionRows) {
  open();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(m_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT schema_version, library_version FROM version_info", -1, &st,
                     nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 12);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)), "3.1.0");
  sqlite3_finalize(st);
  sqlite3_prepare_v2(db, "SELECT version_num FROM alembic_version", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "v3.0.0.d");
  sqlite3_finalize(st);
  sqlite3_close(db);
  open();  // reopening keeps one row each
}

TEST_F(StorageTest, TrialLifeCycle) {
  auto s = open();
  bool created = false;
  auto study = s->get_or_create_study("demo", search::Direction::maximize, &created);
  ASSERT_TRUE(study) << study.error();
  EXPECT_TRUE(created);
  auto again = s->get_or_create_study("demo", search::Direction::maximize, &created);
  EXPECT_FALSE(created);
  EXPECT_EQ(again->study_id, study->study_id);
  EXPECT_FALSE(s->get_or_create_study("demo", search::Direction::minimize, nullptr));

  auto t0 = s->create_trial(study->study_id, TrialState::running, {{"k", 1}});
  auto t1 = s->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(t0 && t1);
  EXPECT_EQ(t0->number, 0);
  EXPECT_EQ(t1->number, 1);
  const search::Distribution dist = search::IntDistribution{1, 8, false, 1};
  ASSERT_TRUE(s->set_trial_param(t0->trial_id, "threads", 4.0, dist));
  ASSERT_TRUE(s->set_trial_intermediate_value(t0->trial_id, 10, 0.5));
  ASSERT_TRUE(s->set_trial_user_attr(t0->trial_id, k_attr_command, {"mpirun", "-n", "2"}));
  ASSERT_TRUE(s->set_trial_system_attr(t0->trial_id, k_attr_constraints, {-0.5}));
  auto done = s->set_trial_state_values(t0->trial_id, TrialState::complete, 123.5);
  ASSERT_TRUE(done);
  EXPECT_TRUE(*done);
  // Finished trials are frozen.
  auto refused = s->set_trial_state_values(t0->trial_id, TrialState::fail, std::nullopt);
  ASSERT_TRUE(refused);
  EXPECT_FALSE(*refused);

  auto t = s->get_trial(t0->trial_id);
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->state, TrialState::complete);
  EXPECT_EQ(*t->value, 123.5);
  EXPECT_EQ(t->params.at("threads"), 4.0);
  EXPECT_EQ(std::get<search::IntDistribution>(t->distributions.at("threads")).high, 8);
  EXPECT_EQ(t->intermediate_values.at(10), 0.5);
  EXPECT_EQ(t->user_attrs[k_attr_command][2], "2");
  EXPECT_EQ(t->system_attrs["k"], 1);
  ASSERT_EQ(t->constraints.size(), 1u);
  EXPECT_TRUE(t->is_feasible());
  ASSERT_TRUE(t->datetime_start && t->datetime_complete);
  EXPECT_LE(*t->datetime_start, *t->datetime_complete);

  auto all = s->get_all_trials(study->study_id);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].state, TrialState::running);
}

TEST_F(StorageTest, InfiniteValuesRoundTrip) {
  auto s = open();
  auto study = s->get_or_create_study("inf", search::Direction::minimize, nullptr);
  auto t = s->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(s->set_trial_intermediate_value(t->trial_id, 1, -HUGE_VAL));
  ASSERT_TRUE(s->set_trial_state_values(t->trial_id, TrialState::complete, HUGE_VAL));
  auto back = s->get_trial(t->trial_id);
  EXPECT_EQ(*back->value, HUGE_VAL);
  EXPECT_EQ(back->intermediate_values.at(1), -HUGE_VAL);
}

TEST_F(StorageTest, WaitingTrialsArePoppedInOrder) {
  auto s = open();
  auto study = s->get_or_create_study("q", search::Direction::minimize, nullptr);
  auto w0 =
      s->create_trial(study->study_id, TrialState::waiting, {{k_attr_fixed_params, {{"a", 1}}}});
  auto w1 =
      s->create_trial(study->study_id, TrialState::waiting, {{k_attr_fixed_params, {{"a", 2}}}});
  auto p0 = s->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(p0 && *p0);
  EXPECT_EQ((*p0)->trial_id, w0->trial_id);
  auto t = s->get_trial(w0->trial_id);
  EXPECT_EQ(t->state, TrialState::running);
  EXPECT_TRUE(t->datetime_start.has_value());
  auto p1 = s->pop_waiting_trial(study->study_id);
  EXPECT_EQ((*p1)->trial_id, w1->trial_id);
  auto none = s->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

TEST_F(StorageTest, CacheReadsOnlyWhatChanged) {
  auto s = open();
  auto study = s->get_or_create_study("c", search::Direction::minimize, nullptr);
  StudyCache cache(*s, *study);
  auto a = s->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), 1u);
  EXPECT_EQ(cache.trials()[0].state, TrialState::running);
  ASSERT_TRUE(s->set_trial_state_values(a->trial_id, TrialState::complete, 2.0));
  ASSERT_TRUE(s->create_trial(study->study_id, TrialState::running, {}));
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), 2u);
  EXPECT_EQ(cache.trials()[0].state, TrialState::complete);
  EXPECT_EQ(*cache.trials()[0].value, 2.0);
  EXPECT_EQ(cache.trials()[1].number, 1);
}

TEST_F(StorageTest, ConcurrentWritersGetDistinctNumbers) {
  {
    auto s = open();
    ASSERT_TRUE(s->get_or_create_study("par", search::Direction::minimize, nullptr));
  }
  constexpr int k_per_writer = 40;
  std::vector<std::vector<int>> numbers(2);
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      auto s = SqliteStorage::open(m_path);  // own connection, as another process would have
      ASSERT_TRUE(s);
      auto study = (*s)->get_study("par");
      for (int i = 0; i < k_per_writer; ++i) {
        auto t = (*s)->create_trial(study->study_id, TrialState::running, {});
        ASSERT_TRUE(t) << t.error();
        numbers[w].push_back(t->number);
        ASSERT_TRUE((*s)->set_trial_state_values(t->trial_id, TrialState::complete, i));
      }
    });
  }
  for (auto& t : writers) t.join();
  std::set<int> all;
  for (const auto& v : numbers) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), 2u * k_per_writer);
  EXPECT_EQ(*all.rbegin(), 2 * k_per_writer - 1);
}

TEST_F(StorageTest, OpenStorageUrls) {
  EXPECT_TRUE(open_storage("sqlite:///" + m_path));
  auto pg = open_storage("postgresql://localhost/x");
  ASSERT_FALSE(pg);
  EXPECT_NE(pg.error().find("only SQLite"), std::string::npos);
}

// One `OR trial_id = ?` per unfinished trial hit SQLite's expression depth limit at 1,000.
TEST_F(StorageTest, CacheSyncsWithThousandsOfUnfinishedTrials) {
  auto s = open();
  auto study = s->get_or_create_study("many", search::Direction::minimize, nullptr);
  constexpr int k_waiting = 2500;
  {
    // Rows as create_trial(WAITING) writes them, in one transaction for speed.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(m_path.c_str(), &db), SQLITE_OK);
    const std::string sql =
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < " +
        std::to_string(k_waiting - 1) +
        ") INSERT INTO trials (number, study_id, state) SELECT i, " +
        std::to_string(study->study_id) + ", 'WAITING' FROM n";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  StudyCache cache(*s, *study);
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), static_cast<std::size_t>(k_waiting));
  auto popped = s->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(popped && *popped);
  ASSERT_TRUE(s->set_trial_state_values((*popped)->trial_id, TrialState::complete, 1.0));
  auto again = cache.sync();
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(cache.trials()[0].state, TrialState::complete);
  EXPECT_EQ(cache.trials()[1].state, TrialState::waiting);
  EXPECT_EQ(cache.trials().size(), static_cast<std::size_t>(k_waiting));
}

// Timestamps are UTC: a heartbeat written in one time zone is seconds old in another, 24 hours
// away; the trial's start and end read back as the instants they were.
TEST_F(StorageTest, TimestampsAreUtcWhateverTheTimeZone) {
  auto s = open();
  auto study = s->get_or_create_study("tz", search::Direction::minimize, nullptr);
  std::int64_t trial_id = -1;
  const auto before = std::chrono::system_clock::now();
  {
    ScopedTimeZone west("America/Adak");
    auto t = s->create_trial(study->study_id, TrialState::running, {});
    ASSERT_TRUE(t);
    trial_id = t->trial_id;
    ASSERT_TRUE(s->record_heartbeat(trial_id));
  }
  ScopedTimeZone east("Pacific/Kiritimati");
  auto life = s->trial_liveness(trial_id);
  ASSERT_TRUE(life) << life.error();
  ASSERT_TRUE(life->since_heartbeat_s && life->since_start_s);
  EXPECT_LT(std::abs(*life->since_heartbeat_s), 60.0);
  EXPECT_LT(std::abs(*life->since_start_s), 60.0);
  auto t = s->get_trial(trial_id);
  ASSERT_TRUE(t && t->datetime_start);
  EXPECT_LT(std::abs(std::chrono::duration<double>(*t->datetime_start - before).count()), 60.0);
  // Stored as Optuna stores heartbeats on SQLite: CURRENT_TIMESTAMP's UTC text in whole seconds,
  // never later than CURRENT_TIMESTAMP (Optuna's fail_stale_trials() takes a heartbeat even a
  // fraction of a second "ahead" for a day old).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(m_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT abs(julianday(heartbeat) - julianday('now')) * 86400, "
                     "length(heartbeat), heartbeat <= CURRENT_TIMESTAMP FROM trial_heartbeats "
                     "WHERE trial_id = ?",
                     -1, &st, nullptr);
  sqlite3_bind_int64(st, 1, trial_id);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_LT(sqlite3_column_double(st, 0), 60.0);
  EXPECT_EQ(sqlite3_column_int(st, 1), 19);  // YYYY-MM-DD HH:MM:SS
  EXPECT_EQ(sqlite3_column_int(st, 2), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

// A trial starts with a heartbeat (created RUNNING or popped), so a tune that dies before the
// launch still leaves a trial that ages; a WAITING trial has neither heartbeat nor start.
TEST_F(StorageTest, RunningTrialsStartWithAHeartbeat) {
  auto s = open();
  auto study = s->get_or_create_study("hb", search::Direction::minimize, nullptr);
  auto running = s->create_trial(study->study_id, TrialState::running, {});
  auto waiting = s->create_trial(study->study_id, TrialState::waiting, {});
  auto r = s->trial_liveness(running->trial_id);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->since_heartbeat_s.has_value());
  auto w = s->trial_liveness(waiting->trial_id);
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->since_heartbeat_s.has_value());
  EXPECT_FALSE(w->since_start_s.has_value());
  ASSERT_TRUE(s->pop_waiting_trial(study->study_id));
  w = s->trial_liveness(waiting->trial_id);
  EXPECT_TRUE(w->since_heartbeat_s.has_value());
  EXPECT_TRUE(w->since_start_s.has_value());
  EXPECT_FALSE(s->trial_liveness(12345));
}

TEST_F(StorageTest, UrlOptions) {
  auto full = open_storage("sqlite:///" + m_path);
  ASSERT_TRUE(full) << full.error();
  EXPECT_EQ(full->get()->grace_period_s(), k_default_grace_period_s);
  // Between flushes the connection runs NORMAL; a trial's end commits with FULL.
  EXPECT_EQ(*dynamic_cast<SqliteStorage&>(**full).synchronous_level(), 1);
  // A URL's folder is created as a plain path's is (by the runner).
  const auto nested = fs::path(m_path + ".d") / "sub" / "study.db";
  EXPECT_TRUE(open_storage("sqlite:///" + nested.string()));
  EXPECT_TRUE(fs::exists(nested));
  fs::remove_all(m_path + ".d");
  auto normal = open_storage("sqlite:///" + m_path + "?synchronous=normal&grace_period=5m");
  ASSERT_TRUE(normal) << normal.error();
  EXPECT_EQ(normal->get()->grace_period_s(), 300.0);
  EXPECT_TRUE(fs::exists(m_path));
  auto bad = open_storage("sqlite:///" + m_path + "?synchronous=sometimes");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("synchronous=sometimes"), std::string::npos) << bad.error();
  auto unknown = open_storage("sqlite:///" + m_path + "?timeout=5");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("unknown option 'timeout'"), std::string::npos);
  auto grace = open_storage("sqlite:///" + m_path + "?grace_period=-1s");
  ASSERT_FALSE(grace);
  EXPECT_NE(grace.error().find("grace_period"), std::string::npos);
}

// Read-only opening writes nothing and creates no file: not the schema, not WAL mode, not the
// -wal/-shm files SQLite would add (which a user who may not write the folder cannot create,
// and which, made by another user in a shared folder, the owner could not write).
TEST_F(StorageTest, ReadOnlyOpeningWritesNothing) {
  {
    auto s = open();
    auto study = s->get_or_create_study("ro", search::Direction::minimize, nullptr);
    auto t = s->create_trial(study->study_id, TrialState::running, {});
    ASSERT_TRUE(s->set_trial_state_values(t->trial_id, TrialState::complete, 3.0));
  }
  ASSERT_FALSE(side_files());
  const auto before = bytes();
  {
    auto r = open(OpenMode::read_only);
    ASSERT_TRUE(r);
    auto study = r->get_study("ro");
    ASSERT_TRUE(study) << study.error();
    auto all = r->get_all_trials(study->study_id);
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ(*(*all)[0].value, 3.0);
    EXPECT_FALSE(side_files());
    EXPECT_FALSE(r->create_trial(study->study_id, TrialState::running, {}));
  }
  EXPECT_FALSE(side_files());
  EXPECT_EQ(bytes(), before);

  StorageOptions read_only;
  read_only.mode = OpenMode::read_only;
  auto missing = SqliteStorage::open(m_path + ".absent", read_only);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("no such database"), std::string::npos) << missing.error();
  EXPECT_FALSE(fs::exists(m_path + ".absent"));
  std::ofstream(m_path + ".text") << "not a database, but long enough to have a header line\n";
  auto text = SqliteStorage::open(m_path + ".text", read_only);
  EXPECT_FALSE(text);
  fs::remove(m_path + ".text");
}

// A reader opened while no writer had the database follows a writer that appears later: the
// new commits are in the write-ahead log, which an `immutable` connection would not read.
TEST_F(StorageTest, ReadOnlyReaderSeesAWriterThatAppearsLater) {
  { ASSERT_TRUE(open()->get_or_create_study("late", search::Direction::minimize, nullptr)); }
  ASSERT_FALSE(side_files());
  auto reader = open(OpenMode::read_only);
  auto study = reader->get_study("late");
  ASSERT_TRUE(study);
  StudyCache cache(*reader, *study);
  ASSERT_TRUE(cache.sync());
  EXPECT_TRUE(cache.trials().empty());
  auto writer = open();
  auto t = writer->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(writer->set_trial_state_values(t->trial_id, TrialState::complete, 7.0));
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), 1u);
  EXPECT_EQ(*cache.trials()[0].value, 7.0);
  // And a reader opened while the writer runs reads through the writer's log from the start.
  auto second = open(OpenMode::read_only);
  auto all = second->get_all_trials(study->study_id);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 1u);
}

}  // namespace
}  // namespace tune::tuner
