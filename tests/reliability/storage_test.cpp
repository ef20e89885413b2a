// Storage under load and across users and hosts (issue 12): a thousand unfinished trials, a
// database the user may only read, trials of other hosts judged in UTC with a grace period,
// and what is on disk when a call returns.
#include <gtest/gtest.h>

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/launch/launcher.h"
#include "tuner/storage/sqlite_storage.h"
#include "tuner/storage/storage_url.h"
#include "tuner/storage/study_cache.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;

using Output = test_support::CommandOutput;
using test_support::read_file;

class StorageReliability : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            (std::string("tune-rel-storage-") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    restore_permissions(m_dir);
    fs::remove_all(m_dir);
    fs::create_directories(m_dir / "out");
    // Readable and traversable by the unprivileged reader.
    fs::permissions(m_dir, fs::perms(0755));
    fs::permissions(m_dir / "out", fs::perms(0755));
    m_db = (m_dir / "out" / "study.db").string();
  }
  void TearDown() override {
    restore_permissions(m_dir);
    if (!HasFailure()) fs::remove_all(m_dir);
  }
  static void restore_permissions(const fs::path& dir) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) return;
    fs::permissions(dir, fs::perms(0755), ec);
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      fs::permissions(it->path(), it->is_directory() ? fs::perms(0755) : fs::perms(0644), ec);
    }
  }

  // A study of the fake trial; `extra_args` go after its --value.
  std::string write_study(const std::string& file, const std::string& extra_args = "") {
    return test_support::write_file(
        m_dir / file, "name: rel\noutput: " + (m_dir / "out").string() +
                          "\ncommand: ['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}'" +
                          extra_args +
                          "]\n"
                          "sampler: {type: random, seed: 1}\n"
                          "params:\n  x: {type: float, low: 1, high: 10}\n");
  }

  // `tune ARGS` with extra environment; as user nobody when `as_nobody` and we are root (root
  // ignores file permissions; another user is subject to them as nobody is).
  Output run_tune(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}, bool as_nobody = false) {
    std::vector<std::string> argv;
    if (as_nobody && geteuid() == 0) {
      argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    }
    argv.push_back(TUNE_BIN);
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run_command(argv, m_dir, env, "tune");
  }
  std::unique_ptr<SqliteStorage> storage() {
    auto s = SqliteStorage::open(m_db);
    EXPECT_TRUE(s) << s.error();
    return s ? std::move(*s) : nullptr;
  }
  std::vector<search::FrozenTrial> trials() {
    auto s = storage();
    auto study = s->get_study("rel");
    EXPECT_TRUE(study) << study.error();
    return *s->get_all_trials(study->study_id);
  }
  // Raw SQL, for what no tune API does: backdating timestamps, looking at heartbeats.
  void sql(const std::string& statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(m_db.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 60000);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << (err ? err : "") << " in " << statement;
    sqlite3_free(err);
    sqlite3_close(db);
  }
  bool has_heartbeat(std::int64_t trial_id) {
    sqlite3* db = nullptr;
    sqlite3_open(m_db.c_str(), &db);
    sqlite3_busy_timeout(db, 60000);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT 1 FROM trial_heartbeats WHERE trial_id = ?", -1, &st, nullptr);
    sqlite3_bind_int64(st, 1, trial_id);
    const bool found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return found;
  }
  // Waits (bounded) for a condition; the condition, not a fixed delay, ends the wait.
  template <typename F>
  static bool wait_until(F&& done, std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      std::this_thread::yield();
    }
    return done();
  }
  static std::map<std::string, int> state_counts(const std::vector<search::FrozenTrial>& ts) {
    std::map<std::string, int> n;
    for (const auto& t : ts) ++n[std::string(search::to_string(t.state))];
    return n;
  }

  fs::path m_dir;
  std::string m_db;
};

// `tune confirm --top 3 --repeats 340` queues 1,020 WAITING trials; every later `tune --trials`
// then failed with "Expression tree is too large" (one `OR trial_id = ?` per unfinished trial).
TEST_F(StorageReliability, ThousandWaitingTrialsLeaveTheStudyUsable) {
  const auto study = write_study("study.yaml");
  constexpr int k_waiting = 1020;
  {
    auto s = storage();
    auto info = s->get_or_create_study("rel", search::Direction::minimize, nullptr);
    ASSERT_TRUE(info) << info.error();
    // The rows create_trial(WAITING, {fixed_params}) writes, in one transaction for speed.
    const auto study_id = std::to_string(info->study_id);
    sql("BEGIN; WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < " +
        std::to_string(k_waiting - 1) +
        ") INSERT INTO trials (number, study_id, state) SELECT i, " + study_id +
        ", 'WAITING' FROM n; INSERT INTO trial_system_attributes (trial_id, \"key\", value_json) "
        "SELECT trial_id, 'fixed_params', json_object('x', 1.0 + number % 9) FROM trials; "
        "COMMIT;");
    // The cache of a process that holds all of them unfinished keeps syncing.
    StudyCache cache(*s, *info);
    ASSERT_TRUE(cache.sync());
    auto again = cache.sync();
    ASSERT_TRUE(again) << again.error();
    EXPECT_EQ(cache.trials().size(), static_cast<std::size_t>(k_waiting));
  }
  auto o = run_tune({"--trials", "2", "--quiet", study});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), static_cast<std::size_t>(k_waiting));
  auto n = state_counts(ts);
  EXPECT_EQ(n["COMPLETE"], 2);
  EXPECT_EQ(n["WAITING"], k_waiting - 2);
  // The enqueued values were used, oldest first.
  EXPECT_EQ(ts[0].params.at("x"), 1.0);
  EXPECT_EQ(ts[1].params.at("x"), 2.0);
  // And the read-only commands still list them.
  auto listed = run_tune({"trials", m_db});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("WAITING"), std::string::npos);
}

// A database the user may only read, in a folder the user may not write, left by a normal run:
// `tune trials` and `tune report` opened it READWRITE|CREATE, switched it to WAL and wrote the
// schema, and failed.
TEST_F(StorageReliability, ReadOnlyDatabaseIsReadByAnotherUser) {
  const auto study = write_study("study.yaml");
  ASSERT_EQ(run_tune({"--trials", "3", "--quiet", study}).exit_code, 0);
  ASSERT_FALSE(fs::exists(m_db + "-wal"));  // the last writer checkpointed and removed it
  const auto bytes_before = read_file(m_db);
  fs::permissions(m_db, fs::perms(0444));
  fs::permissions(m_dir / "out", fs::perms(0555));

  auto listed = run_tune({"trials", m_db}, {}, /*as_nobody=*/true);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::istringstream lines(listed.out);
  int complete = 0;
  for (std::string line; std::getline(lines, line);) complete += line.contains("COMPLETE");
  EXPECT_EQ(complete, 3) << listed.out;
  auto report = run_tune({"report", m_db}, {}, true);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("3 complete"), std::string::npos) << report.out;
  auto best = run_tune({"best", study}, {}, true);
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_EQ(read_file(m_db), bytes_before);

  // A writer has the database open and its last trial is only in the write-ahead log: the
  // reader sees it through SQLite's locks (the -wal and -shm files exist).
  restore_permissions(m_dir);  // for the writer, when the test does not run as root
  auto writer = storage();
  auto info = writer->get_study("rel");
  auto extra = writer->create_trial(info->study_id, TrialState::running, {});
  ASSERT_TRUE(extra);
  ASSERT_TRUE(writer->set_trial_state_values(extra->trial_id, TrialState::complete, 0.25));
  ASSERT_TRUE(fs::exists(m_db + "-wal"));
  fs::permissions(m_db, fs::perms(0444));
  fs::permissions(m_dir / "out", fs::perms(0555));
  auto live = run_tune({"best", m_db}, {}, true);
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_NE(live.out.find("value: 0.25"), std::string::npos) << live.out;
  restore_permissions(m_dir);  // the writer's close removes its -wal and -shm
  writer.reset();
  fs::permissions(m_db, fs::perms(0444));

  // A folder the reader may write but a database it may not: the reader must leave no -wal or
  // -shm of its own behind, or the owner could no longer write its study.
  ASSERT_FALSE(fs::exists(m_db + "-wal"));
  fs::permissions(m_dir / "out", fs::perms(0777));
  auto again = run_tune({"trials", m_db}, {}, true);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_FALSE(fs::exists(m_db + "-wal"));
  EXPECT_FALSE(fs::exists(m_db + "-shm"));

  // Writing still needs write permission, and says so.
  auto run = run_tune({"--trials", "1", study}, {}, true);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("may not write"), std::string::npos) << run.err;
}

// Two tune processes 24 hours apart in local time: the one east of the other read the other's
// heartbeat (naive local time) as a day old and failed its live trial.
TEST_F(StorageReliability, LiveTrialOfAnotherHostInAnotherTimeZoneIsNotFailed) {
  const auto hang = m_dir / "hang";
  const auto started = m_dir / "started";
  std::ofstream(hang) << "1";
  const auto study_a = write_study("a.yaml", ", --hang-if-exists, '" + hang.string() +
                                                 "', --started, '" + started.string() + "'");
  const auto study_b = write_study("b.yaml");
  auto env = boost::this_process::environment();
  env["TZ"] = "America/Adak";  // UTC-10 (-9 in summer)
  bp::child a(TUNE_BIN, "--trials", "1", "--quiet", study_a, env, bp::std_out > bp::null,
              bp::std_err > (m_dir / "a.err").string());
  ASSERT_TRUE(wait_until([&] { return fs::exists(started) && fs::file_size(started) > 0; },
                         std::chrono::seconds(30)));
  auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  const auto trial_id = ts[0].trial_id;
  ASSERT_TRUE(wait_until([&] { return has_heartbeat(trial_id); }, std::chrono::seconds(30)));
  // Make A look like a tune on another host: then only its heartbeats speak for it.
  ASSERT_TRUE(storage()->set_trial_system_attr(trial_id, k_attr_owner,
                                               {{"host", "elsewhere"}, {"pid", 1}, {"start", 1}}));

  auto b = run_tune({"--trials", "1", "--quiet", study_b}, {{"TZ", "Pacific/Kiritimati"}});  // +14
  EXPECT_EQ(b.exit_code, 0) << b.err;
  ts = trials();
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].state, TrialState::running)
      << ts[0].system_attrs.value(k_attr_fail_reason, std::string());
  EXPECT_EQ(ts[1].state, TrialState::complete);

  ASSERT_EQ(kill(a.id(), SIGINT), 0);
  a.wait();
  EXPECT_EQ(a.exit_code(), 130) << read_file(m_dir / "a.err");
}

// Trials of another host that stopped showing signs of life: one with no heartbeat at all was
// never recovered; liveness is judged in UTC against the documented grace period (120 s).
TEST_F(StorageReliability, SilentTrialsOfAnotherHostAreRecoveredAfterTheGracePeriod) {
  const auto study = write_study("study.yaml");
  const nlohmann::json elsewhere = {{"host", "elsewhere"}, {"pid", 1}, {"start", 1}};
  std::map<std::string, std::int64_t> id;
  {
    auto s = storage();
    auto info = s->get_or_create_study("rel", search::Direction::minimize, nullptr);
    ASSERT_TRUE(info);
    for (const char* name : {"dead", "young", "silent", "alive"}) {
      id[name] = s->create_trial(info->study_id, TrialState::running, {{k_attr_owner, elsewhere}})
                     ->trial_id;
    }
    id["foreign"] = s->create_trial(info->study_id, TrialState::running, {})->trial_id;
  }
  auto at = [](const char* offset) {
    return std::string("strftime('%Y-%m-%d %H:%M:%f', 'now', '") + offset + "')";
  };
  auto start = [&](const char* name, const char* offset) {
    sql("UPDATE trials SET datetime_start = " + at(offset) +
        " WHERE trial_id = " + std::to_string(id[name]));
  };
  auto heartbeat = [&](const char* name, const char* offset) {
    const auto tid = std::to_string(id[name]);
    sql("DELETE FROM trial_heartbeats WHERE trial_id = " + tid);
    if (offset) {
      sql("INSERT INTO trial_heartbeats (trial_id, heartbeat) VALUES (" + tid + ", " + at(offset) +
          ")");
    }
  };
  start("dead", "-1 hour");  // its tune died before the first heartbeat
  heartbeat("dead", nullptr);
  start("young", "-30 seconds");  // just started, no heartbeat yet
  heartbeat("young", nullptr);
  start("silent", "-1 hour");  // heartbeats stopped 10 minutes ago
  heartbeat("silent", "-10 minutes");
  start("alive", "-1 hour");  // a long trial still beating
  heartbeat("alive", "-5 seconds");
  start("foreign", "-1 hour");  // not tune's (Optuna without heartbeats): left alone
  heartbeat("foreign", nullptr);

  auto o = run_tune({"--trials", "1", "--quiet", study}, {{"TZ", "Pacific/Kiritimati"}});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::map<std::int64_t, search::FrozenTrial> by_id;
  for (auto& t : trials()) by_id[t.trial_id] = t;
  EXPECT_EQ(by_id[id["dead"]].state, TrialState::fail);
  EXPECT_NE(by_id[id["dead"]].system_attrs.value(k_attr_fail_reason, std::string()).find("died"),
            std::string::npos);
  EXPECT_EQ(by_id[id["young"]].state, TrialState::running);
  EXPECT_EQ(by_id[id["silent"]].state, TrialState::fail);
  EXPECT_EQ(by_id[id["alive"]].state, TrialState::running);
  EXPECT_EQ(by_id[id["foreign"]].state, TrialState::running);
}

// The grace period and the durability of commits are storage options in the URL; the database
// is the path without them.
TEST_F(StorageReliability, StorageUrlOptionsReachTheDatabase) {
  const auto study = write_study("study.yaml");
  ASSERT_EQ(run_tune({"--trials", "1", "--quiet", study}).exit_code, 0);
  std::int64_t trial_id = 0;
  {
    auto s = storage();
    auto info = s->get_study("rel");
    trial_id = s->create_trial(info->study_id, TrialState::running,
                               {{k_attr_owner, {{"host", "elsewhere"}, {"pid", 1}, {"start", 1}}}})
                   ->trial_id;
  }
  sql("UPDATE trial_heartbeats SET heartbeat = strftime('%Y-%m-%d %H:%M:%f', 'now', "
      "'-10 minutes') WHERE trial_id = " +
      std::to_string(trial_id));
  const std::string url = "sqlite:///" + m_db;
  auto patient = run_tune({"--trials", "1", "--quiet", "--storage",
                           url + "?grace_period=1h&synchronous=normal", study});
  ASSERT_EQ(patient.exit_code, 0) << patient.err;
  auto ts = trials();
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(ts[1].state, TrialState::running);
  auto strict = run_tune(
      {"--trials", "1", "--quiet", "--storage", url + "?grace_period=5m&synchronous=full", study});
  ASSERT_EQ(strict.exit_code, 0) << strict.err;
  ts = trials();
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts[1].state, TrialState::fail);
  for (const auto& entry : fs::directory_iterator(m_dir / "out")) {
    EXPECT_FALSE(entry.path().filename().string().contains('?')) << entry.path();
  }
  auto bad = run_tune({"trials", "--storage", url + "?synchronous=sometimes", study});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("synchronous=sometimes"), std::string::npos) << bad.err;
}

// A pass-through SQLite VFS, made the default while it lives, that counts the flushes (xSync)
// SQLite asks of the files it opens: what survives a power loss is exactly what was flushed.
class SyncCountingVfs {
 public:
  SyncCountingVfs() {
    s_real = sqlite3_vfs_find(nullptr);
    m_vfs = *s_real;
    m_vfs.zName = "tune-sync-counting";
    m_vfs.szOsFile = static_cast<int>(sizeof(File)) + s_real->szOsFile;
    m_vfs.xOpen = &open;
    s_syncs = 0;
    sqlite3_vfs_register(&m_vfs, /*makeDflt=*/1);
  }
  ~SyncCountingVfs() {
    sqlite3_vfs_unregister(&m_vfs);
    sqlite3_vfs_register(s_real, 1);
  }
  SyncCountingVfs(const SyncCountingVfs&) = delete;
  SyncCountingVfs& operator=(const SyncCountingVfs&) = delete;
  static int syncs() { return s_syncs; }

 private:
  static inline sqlite3_vfs* s_real = nullptr;
  static inline int s_syncs = 0;
  struct File {
    sqlite3_file base;
    sqlite3_file* real;  // the real VFS's file, placed right after this struct
  };
  static sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }
  static int open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
    auto* file = reinterpret_cast<File*>(f);
    file->real = reinterpret_cast<sqlite3_file*>(file + 1);
    const int rc = s_real->xOpen(s_real, name, file->real, flags, out_flags);
    file->base.pMethods = file->real->pMethods ? &k_methods : nullptr;
    return rc;
  }
  static inline const sqlite3_io_methods k_methods = {
      3,
      [](sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); },
      [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
        return real(f)->pMethods->xRead(real(f), b, n, o);
      },
      [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
        return real(f)->pMethods->xWrite(real(f), b, n, o);
      },
      [](sqlite3_file* f, sqlite3_int64 n) { return real(f)->pMethods->xTruncate(real(f), n); },
      [](sqlite3_file* f, int flags) {
        ++s_syncs;
        return real(f)->pMethods->xSync(real(f), flags);
      },
      [](sqlite3_file* f, sqlite3_int64* n) { return real(f)->pMethods->xFileSize(real(f), n); },
      [](sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); },
      [](sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); },
      [](sqlite3_file* f, int* r) { return real(f)->pMethods->xCheckReservedLock(real(f), r); },
      [](sqlite3_file* f, int op, void* a) {
        return real(f)->pMethods->xFileControl(real(f), op, a);
      },
      [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); },
      [](sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); },
      [](sqlite3_file* f, int i, int n, int w, void volatile** p) {
        return real(f)->pMethods->xShmMap(real(f), i, n, w, p);
      },
      [](sqlite3_file* f, int o, int n, int fl) {
        return real(f)->pMethods->xShmLock(real(f), o, n, fl);
      },
      [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); },
      [](sqlite3_file* f, int d) { return real(f)->pMethods->xShmUnmap(real(f), d); },
      [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
        return real(f)->pMethods->xFetch(real(f), o, n, p);
      },
      [](sqlite3_file* f, sqlite3_int64 o, void* p) {
        return real(f)->pMethods->xUnfetch(real(f), o, p);
      },
  };
  sqlite3_vfs m_vfs{};
};

// storage.h promised that a state change is durable when the call returns, but every commit ran
// with synchronous=NORMAL, which flushes nothing at commit: a power loss could take finished
// trials. Now a trial's end is flushed before the call returns (and every write before it with
// it), and so is its creation or its taking from the queue, before it starts (two flushes per
// trial); the writes in between are not (nor an enqueue: its pop flushes it), and
// `?synchronous=normal` turns the flushes off for slow file systems.
TEST_F(StorageReliability, FinishedTrialsAreFlushedBeforeTheCallReturns) {
  SyncCountingVfs vfs;
  auto count = [](auto&& call) {
    const int before = SyncCountingVfs::syncs();
    call();
    return SyncCountingVfs::syncs() - before;
  };
  const search::Distribution dist = search::FloatDistribution{1, 10, false, std::nullopt};
  {
    auto s = storage();  // the default
    std::optional<StudyInfo> info;
    EXPECT_GE(
        count([&] { info = *s->get_or_create_study("rel", search::Direction::minimize, nullptr); }),
        1);
    std::int64_t id = -1;
    // A trial's number is on disk before the trial starts (acknowledged means durable).
    EXPECT_GE(
        count([&] { id = s->create_trial(info->study_id, TrialState::running, {})->trial_id; }), 1);
    EXPECT_EQ(count([&] { ASSERT_TRUE(s->set_trial_param(id, "x", 2.0, dist)); }), 0);
    EXPECT_EQ(count([&] { ASSERT_TRUE(s->set_trial_intermediate_value(id, 1, 2.5)); }), 0);
    EXPECT_EQ(count([&] { ASSERT_TRUE(s->record_heartbeat(id)); }), 0);
    EXPECT_GE(count([&] { ASSERT_TRUE(s->set_trial_state_values(id, TrialState::complete, 2.0)); }),
              1);
    EXPECT_EQ(count([&] { ASSERT_TRUE(s->create_trial(info->study_id, TrialState::waiting, {})); }),
              0);
    EXPECT_GE(count([&] { ASSERT_TRUE(s->pop_waiting_trial(info->study_id)); }), 1);
    EXPECT_GE(count([&] { ASSERT_TRUE(s->set_trial_state_values(id + 1, TrialState::fail, {})); }),
              1);
  }
  auto s = open_storage("sqlite:///" + m_db + "?synchronous=normal");
  ASSERT_TRUE(s) << s.error();
  auto info = (*s)->get_or_create_study("rel", search::Direction::minimize, nullptr);
  ASSERT_TRUE(info);
  // The first commit into a fresh log flushes its header once, whatever the setting.
  auto trial = [&] {
    auto t = (*s)->create_trial(info->study_id, TrialState::running, {});
    (*s)->set_trial_state_values(t->trial_id, TrialState::complete, 1.0);
  };
  trial();
  EXPECT_EQ(count(trial), 0);
}

}  // namespace
}  // namespace tune::tuner
