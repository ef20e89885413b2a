// SQLite storage: the storage suite (tests/tuner/storage/storage_suite.h) on a file, then what is
// SQLite's own: Optuna's schema rows, heartbeat text, read-only opening, URL options.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/tuner/storage/storage_suite.h"
#include "tuner/storage/sqlite_storage.h"
#include "tuner/study/open_study.h"

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

// A fresh database file per test (what an earlier run left is removed first).
const StorageBackend k_sqlite{"sqlite", [](std::string*) {
                                const auto* info =
                                    ::testing::UnitTest::GetInstance()->current_test_info();
                                std::string name = std::string("tune-suite-") + info->name();
                                std::replace(name.begin(), name.end(), '/', '-');
                                const auto path = (fs::temp_directory_path() / name).string();
                                for (const char* suffix : {"", "-wal", "-shm"}) {
                                  fs::remove(path + suffix);
                                }
                                return "sqlite:///" + path;
                              }};
INSTANTIATE_TEST_SUITE_P(Backends, StorageSuite, ::testing::Values(&k_sqlite),
                         [](const auto& info) { return info.param->name; });

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

TEST_F(StorageTest, OpenStorageUrls) {
  EXPECT_TRUE(open_storage("sqlite:///" + m_path));
  auto other = open_storage("mysql://localhost/x");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().find("expected sqlite:///"), std::string::npos) << other.error();
  // PostgreSQL is built in: an address where nothing listens fails once retry_for has passed
  // (1 s here; a worker's first connection waits that long for a server that is starting),
  // naming it without the password.
  auto pg = open_storage("postgresql://me:secret@127.0.0.1:1/x?connect_timeout=2&retry_for=1s");
  ASSERT_FALSE(pg);
  EXPECT_NE(pg.error().find("cannot connect"), std::string::npos) << pg.error();
  EXPECT_NE(pg.error().find("postgresql://me:***@127.0.0.1:1/x"), std::string::npos) << pg.error();
  EXPECT_EQ(pg.error().find("secret"), std::string::npos) << pg.error();
  auto bad = open_storage("postgresql://127.0.0.1:1/x?retry_for=soon");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("retry_for=soon"), std::string::npos) << bad.error();
}

// Every spelling of a password in a storage URL is masked for showing and dropped for a later
// run's use; what is not a password stays as written.
TEST(StorageUrl, PasswordsAreMaskedForShowingAndDroppedForScripts) {
  struct Case {
    std::string url, shown, without;
  };
  const Case cases[] = {
      {"postgresql://me:pw1@db.example:5433/tune?sslmode=require&retry_for=5s",
       "postgresql://me:***@db.example:5433/tune?sslmode=require&retry_for=5s",
       "postgresql://me@db.example:5433/tune?sslmode=require&retry_for=5s"},
      {"postgres://me:pw1@db/tune", "postgres://me:***@db/tune", "postgres://me@db/tune"},
      {"postgresql+psycopg2://me:pw1@db/tune", "postgresql+psycopg2://me:***@db/tune",
       "postgresql+psycopg2://me@db/tune"},
      {"postgresql://me@db/tune?password=pw1&sslmode=require",
       "postgresql://me@db/tune?password=***&sslmode=require",
       "postgresql://me@db/tune?sslmode=require"},
      {"postgresql://me@db/tune?pass%77ord=pw1", "postgresql://me@db/tune?pass%77ord=***",
       "postgresql://me@db/tune"},
      {"postgresql://me:pw1@db/tune?password=pw1", "postgresql://me:***@db/tune?password=***",
       "postgresql://me@db/tune"},
      // Unencoded '@', ':' and '/' in the password: hidden whole.
      {"postgresql://me:p@s:s/w1@db/tune", "postgresql://me:***@db/tune",
       "postgresql://me@db/tune"},
      {"mysql://me:pw1@db/x", "mysql://me:***@db/x", "mysql://me@db/x"},
      // Nothing to hide.
      {"postgresql://me@db:5432/tune", "postgresql://me@db:5432/tune",
       "postgresql://me@db:5432/tune"},
      {"postgresql://db/tune?", "postgresql://db/tune?", "postgresql://db/tune?"},
      {"postgresql://me:@db/tune", "postgresql://me:@db/tune", "postgresql://me@db/tune"},
      {"sqlite:///out/study.db?synchronous=normal", "sqlite:///out/study.db?synchronous=normal",
       "sqlite:///out/study.db?synchronous=normal"},
      {"sqlite:////srv/me:x@y/study.db", "sqlite:////srv/me:x@y/study.db",
       "sqlite:////srv/me:x@y/study.db"},
      {"out/me:x@y?z.db", "out/me:x@y?z.db", "out/me:x@y?z.db"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(redact_storage_url(c.url), c.shown) << c.url;
    EXPECT_EQ(storage_url_without_password(c.url), c.without) << c.url;
  }
  EXPECT_TRUE(is_secret_env_var("PGPASSWORD"));
  EXPECT_FALSE(is_secret_env_var("PGUSER"));
}

// A URL's options are checked before anything is opened (bad input), and the reason shows no
// password.
TEST(StorageUrl, ProblemsAreFoundWithoutOpeningAndShowNoPassword) {
  EXPECT_EQ(storage_url_problem("postgresql://me:pw1@db/tune?sslmode=require&retry_for=5s"),
            std::nullopt);
  EXPECT_EQ(storage_url_problem("sqlite:///x.db?synchronous=normal&grace_period=2m"), std::nullopt);
  for (const std::string url :
       {"sqlite:///x.db?grace_period=abc", "postgresql://me:pw1@db/tune?grace_period=abc",
        "postgresql://me:pw1@db/tune?retry_for=0s", "postgresql://me:pw1@db/tune?synchronous=x",
        "sqlite:///x.db?sslmode=require", "postgresql://me:pw%zz1@db/tune",
        "postgresql://me@db/tune?password=pw%1",
        // What libpq cannot read, found without connecting; its message would quote the URL.
        "postgresql://me:pw1@[::1/tune", "postgresql://me:pw1@db/tune?sslmode"}) {
    const auto why = storage_url_problem(url);
    ASSERT_TRUE(why) << url;
    EXPECT_EQ(why->find("pw"), std::string::npos) << *why;
    auto opened = open_storage(url);
    ASSERT_FALSE(opened) << url;
    EXPECT_EQ(opened.error().find("pw1"), std::string::npos) << opened.error();
    EXPECT_EQ(opened.error().find("pw%"), std::string::npos) << opened.error();
  }
}

// `tune best/report/confirm --storage sqlite:///typo.db` names no study: the error says so and no
// empty database file is left behind (confirm opens read-write, to add its re-runs).
TEST_F(StorageTest, OpeningAMissingStudyDatabaseCreatesNoFile) {
  for (const std::string& url :
       {"sqlite:///" + m_path, "sqlite:///" + m_path + "?synchronous=full", m_path}) {
    auto opened = open_existing_study(url, "", "absent", OpenMode::read_write);
    ASSERT_FALSE(opened) << url;
    EXPECT_NE(opened.error().find("no such database"), std::string::npos) << opened.error();
    EXPECT_FALSE(fs::exists(m_path)) << url;
  }
}

// Heartbeats are stored as Optuna stores them on SQLite: CURRENT_TIMESTAMP's UTC text in whole
// seconds, never later than CURRENT_TIMESTAMP (Optuna's fail_stale_trials() takes a heartbeat
// even a fraction of a second "ahead" for a day old).
TEST_F(StorageTest, HeartbeatsAreStoredAsOptunaWritesThem) {
  auto s = open();
  auto study = s->get_or_create_study("tz", search::Direction::minimize, nullptr);
  ScopedTimeZone west("America/Adak");
  auto t = s->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(t);
  const auto trial_id = t->trial_id;
  ASSERT_TRUE(s->record_heartbeat(trial_id));
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
