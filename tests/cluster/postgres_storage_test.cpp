// PostgreSQL storage on a throwaway server: the storage suite SQLite passes, the schema Optuna
// creates (column for column), python3-optuna and tune on one study, and a connection cut or a
// server gone mid-study.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "tests/cluster/pgbouncer_fixture.h"
#include "tests/cluster/postgres_fixture.h"
#include "tests/tuner/storage/storage_suite.h"
#include "tuner/storage/postgres_storage.h"

namespace tune::tuner {
namespace {

using search::TrialState;
using tune::testing::PostgresServer;
using tune::testing::PostgresTest;
using tune::testing::shared_postgres;

// Each test gets a database of its own on the process's server.
const StorageBackend k_postgres{"postgresql", [](std::string* skip) -> std::string {
                                  if (auto missing = tune::testing::postgres_missing()) {
                                    *skip = *missing;
                                    return "";
                                  }
                                  auto& server = shared_postgres();
                                  if (!server) server = std::make_unique<PostgresServer>();
                                  if (!server->started()) {
                                    *skip = "";
                                    ADD_FAILURE() << server->error();
                                    return "";
                                  }
                                  const auto db = tune::testing::test_database_name();
                                  const auto error = server->create_database(db);
                                  EXPECT_EQ(error, "");
                                  return server->url(db);
                                }};
// The same through PgBouncer in transaction pooling mode, two server connections for all the
// suite's connections: every call must work on whichever server connection runs it (no
// session state, no named prepared statements: postgres_storage.h).
const StorageBackend k_pgbouncer{"pgbouncer", [](std::string* skip) -> std::string {
                                   std::string error;
                                   *skip = tune::testing::start_shared_pgbouncer(&error);
                                   if (!skip->empty()) return "";
                                   if (!error.empty()) {
                                     ADD_FAILURE() << error;
                                     return "";
                                   }
                                   const auto db = tune::testing::test_database_name();
                                   EXPECT_EQ(shared_postgres()->create_database(db), "");
                                   return tune::testing::shared_pgbouncer()->url(db);
                                 }};
INSTANTIATE_TEST_SUITE_P(Backends, StorageSuite, ::testing::Values(&k_postgres, &k_pgbouncer),
                         [](const auto& info) { return info.param->name; });

// Runs python3 (Debian's, which sees python3-optuna) on `script` with `args`; its exit status.
int run_python(const std::string& script, const std::vector<std::string>& args,
               const std::filesystem::path& log) {
  std::vector<std::string> argv = {"/usr/bin/python3", "-c", script};
  argv.insert(argv.end(), args.begin(), args.end());
  return tune::testing::run_argv(argv, log);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class PostgresStorageTest : public PostgresTest {
 protected:
  std::unique_ptr<Storage> open(const std::string& options = "") {
    auto s = open_storage(url() + options);
    EXPECT_TRUE(s) << s.error();
    return s ? std::move(*s) : nullptr;
  }
  // Every column of the public schema: table.column:type:nullable, sorted; tune's own tables
  // beside Optuna's (tune_*, optuna_schema.h tune_extras_sql) left out, or only them.
  std::string columns(const std::string& db, bool tunes = false) {
    return server().scalar(
        db, std::string("SELECT string_agg(table_name || '.' || column_name || ':' || udt_name || "
                        "':' || is_nullable, ',' ORDER BY table_name, column_name) FROM "
                        "information_schema.columns WHERE table_schema = 'public' AND ") +
                (tunes ? "" : "NOT ") + "starts_with(table_name, 'tune_')");
  }
  std::string constraints(const std::string& db) {
    return server().scalar(
        db,
        "SELECT string_agg(conrelid::regclass || ':' || contype || ':' || "
        "pg_get_constraintdef(oid), ',' ORDER BY 1) FROM pg_constraint WHERE connamespace = "
        "'public'::regnamespace AND NOT starts_with(conrelid::regclass::text, 'tune_')");
  }
  std::filesystem::path log() const { return server().dir() / (m_db + ".log"); }
  const PostgresServer& server() const { return *shared_postgres(); }
};

// The tables, columns, types (native enums included) and constraints python3-optuna 3.1 creates
// on PostgreSQL, and tune's are the same.
TEST_F(PostgresStorageTest, CreatesTheSchemaOptunaCreates) {
  ASSERT_TRUE(open());
  const std::string optuna_db = m_db + "_optuna";
  ASSERT_EQ(server().create_database(optuna_db), "");
  ASSERT_EQ(run_python("import optuna, sys; optuna.create_study(storage=sys.argv[1])",
                       {server().url(optuna_db)}, log()),
            0)
      << slurp(log());
  const auto ours = columns(m_db);
  EXPECT_NE(ours.find("trials.state:trialstate:NO"), std::string::npos) << ours;
  EXPECT_EQ(ours, columns(optuna_db));
  EXPECT_EQ(constraints(m_db), constraints(optuna_db));
  // Beside them, tune's change count (Optuna maps its own tables only).
  EXPECT_EQ(columns(m_db, true),
            "tune_study_changes.seq:int8:NO,tune_study_changes.study_id:int4:NO,"
            "tune_trial_changes.seq:int8:NO,tune_trial_changes.study_id:int4:NO,"
            "tune_trial_changes.trial_id:int4:NO");
  // Reopening an existing schema changes nothing.
  ASSERT_TRUE(open());
  EXPECT_EQ(columns(m_db), ours);
}

// A study python3-optuna started (a finished trial, an enqueued one) is continued by tune, and
// what tune wrote reads back in Optuna.
TEST_F(PostgresStorageTest, OptunaAndTuneShareAStudy) {
  const char* k_start =
      "import optuna, sys\n"
      "s = optuna.create_study(study_name='shared', storage=sys.argv[1])\n"
      "s.optimize(lambda t: t.suggest_float('x', 0, 1), n_trials=2)\n"
      "s.enqueue_trial({'x': 0.25})\n";
  ASSERT_EQ(run_python(k_start, {url()}, log()), 0) << slurp(log());
  auto s = open();
  auto study = s->get_study("shared");
  ASSERT_TRUE(study) << study.error();
  auto popped = s->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(popped && *popped) << (popped ? "" : popped.error());
  EXPECT_EQ((*popped)->number, 2);
  ASSERT_TRUE(s->set_trial_param((*popped)->trial_id, "x", 0.25,
                                 search::FloatDistribution{0, 1, false, std::nullopt}));
  ASSERT_TRUE(s->set_trial_state_values((*popped)->trial_id, TrialState::complete, 0.25));
  auto mine = s->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->number, 3);
  ASSERT_TRUE(s->set_trial_state_values(mine->trial_id, TrialState::fail, std::nullopt));
  const char* k_check =
      "import optuna, sys\n"
      "t = optuna.load_study(study_name='shared', storage=sys.argv[1]).trials\n"
      "got = [(x.number, x.state.name, x.params.get('x')) for x in t]\n"
      "assert [g[:2] for g in got] == [(0, 'COMPLETE'), (1, 'COMPLETE'), (2, 'COMPLETE'),\n"
      "                                (3, 'FAIL')], got\n"
      "assert got[2][2] == 0.25 and t[2].value == 0.25, got\n";
  EXPECT_EQ(run_python(k_check, {url()}, log()), 0) << slurp(log());
  auto all = s->get_all_trials(study->study_id);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].state, TrialState::complete);
  EXPECT_TRUE((*all)[0].value.has_value());
  // Optuna deletes the study whole: tune's change count beside it goes with it (cascade).
  EXPECT_NE(server().scalar(m_db, "SELECT count(*) FROM tune_trial_changes"), "0");
  EXPECT_EQ(run_python("import optuna, sys; optuna.delete_study(study_name='shared', "
                       "storage=sys.argv[1])",
                       {url()}, log()),
            0)
      << slurp(log());
  EXPECT_EQ(server().scalar(m_db, "SELECT count(*) FROM tune_trial_changes"), "0");
  EXPECT_EQ(server().scalar(m_db, "SELECT count(*) FROM tune_study_changes"), "0");
}

// The server cuts the worker's connection (a restart, a failover, a network cut): the next call
// reconnects and runs its transaction again, unnoticed by the caller.
TEST_F(PostgresStorageTest, ACutConnectionIsReconnected) {
  auto s = open();
  auto study = s->get_or_create_study("cut", search::Direction::minimize, nullptr);
  ASSERT_TRUE(study);
  auto& pg = dynamic_cast<PostgresStorage&>(*s);
  for (int round = 0; round < 3; ++round) {
    auto pid = pg.backend_pid();
    ASSERT_TRUE(pid);
    ASSERT_EQ(
        server().scalar("postgres", "SELECT pg_terminate_backend(" + std::to_string(*pid) + ")"),
        "t");
    auto t = s->create_trial(study->study_id, TrialState::running, {});
    ASSERT_TRUE(t) << t.error();
    EXPECT_EQ(t->number, round);
    EXPECT_NE(*pg.backend_pid(), *pid);
  }
}

// A loopback TCP proxy in front of the server that, when armed, lets a client's COMMIT through,
// waits for the server's answer (so the transaction has committed) and then cuts the
// connection instead of passing the answer on: the client cannot know whether it committed.
// Every other byte passes unchanged, both ways. Its thread is stopped and joined by the
// destructor.
class CommitCuttingProxy {
 public:
  explicit CommitCuttingProxy(int server_port) : m_server_port(server_port) {
    m_listen = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(0);
    socklen_t len = sizeof addr;
    if (bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(m_listen, 16) != 0 ||
        getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "proxy: cannot listen: " << std::strerror(errno);
      return;
    }
    m_port = ntohs(addr.sin_port);
    m_thread = std::thread([this] { loop(); });
  }
  ~CommitCuttingProxy() {
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
    for (const auto& p : m_pairs) {
      close(p.client);
      close(p.server);
    }
    close(m_listen);
  }
  int port() const { return m_port; }
  void cut_next_commit() { m_armed = true; }
  int cuts() const { return m_cuts; }

 private:
  struct Pair {
    int client, server;
    bool commit_sent = false;  // the armed COMMIT went to the server: its answer is dropped
  };
  static sockaddr_in loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    return addr;
  }
  static bool send_all(int fd, const char* data, ssize_t n) {
    while (n > 0) {
      const ssize_t w = send(fd, data, static_cast<std::size_t>(n), MSG_NOSIGNAL);
      if (w <= 0) return false;
      data += w;
      n -= w;
    }
    return true;
  }
  void loop() {
    char buf[65536];
    while (!m_stop) {
      std::vector<pollfd> fds = {{m_listen, POLLIN, 0}};
      for (const auto& p : m_pairs) {
        fds.push_back({p.client, POLLIN, 0});
        fds.push_back({p.server, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;  // 20 ms: to see m_stop
      std::vector<Pair> kept;
      for (std::size_t i = 0; i < m_pairs.size(); ++i) {
        Pair p = m_pairs[i];
        bool open = true;
        if (fds[1 + 2 * i].revents) {  // client -> server
          const ssize_t n = recv(p.client, buf, sizeof buf, 0);
          // A simple-protocol Query message holding COMMIT (libpq sends it so).
          if (n > 0 && m_armed && std::string_view(buf, n).find("COMMIT") != std::string::npos) {
            m_armed = false;
            p.commit_sent = true;
          }
          open = n > 0 && send_all(p.server, buf, n);
        }
        if (open && fds[2 + 2 * i].revents) {  // server -> client
          const ssize_t n = recv(p.server, buf, sizeof buf, 0);
          if (p.commit_sent) {  // the server has committed and answered: lose the answer
            ++m_cuts;
            open = false;
          } else {
            open = n > 0 && send_all(p.client, buf, n);
          }
        }
        if (open) {
          kept.push_back(p);
        } else {
          close(p.client);
          close(p.server);
        }
      }
      m_pairs = std::move(kept);
      if (fds[0].revents & POLLIN) {
        const int client = accept(m_listen, nullptr, nullptr);
        const int server = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr = loopback(m_server_port);
        if (client >= 0 && connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
          m_pairs.push_back({client, server});
        } else {
          close(client);
          close(server);
        }
      }
    }
  }

  int m_server_port;
  int m_listen = -1;
  int m_port = -1;
  std::vector<Pair> m_pairs;  // the proxy thread's own
  std::atomic<bool> m_stop{false}, m_armed{false};
  std::atomic<int> m_cuts{0};
  std::thread m_thread;
};

// A connection lost at COMMIT after the server committed (a crash, a network cut at that
// moment): the call, run again on a new connection, finds what its first run did instead of
// doing it twice: a study made (and said so), one trial made, one trial popped, a trial's end
// reported as this worker's.
TEST_F(PostgresStorageTest, ACommitWhoseAnswerWasLostIsNotDoneTwice) {
  CommitCuttingProxy proxy(server().port());
  auto s = open_storage("postgresql://postgres@127.0.0.1:" + std::to_string(proxy.port()) + "/" +
                        m_db + "?retry_for=20s");
  ASSERT_TRUE(s) << s.error();
  bool created = false;
  proxy.cut_next_commit();
  auto study = (*s)->get_or_create_study("cut", search::Direction::minimize, &created);
  ASSERT_TRUE(study) << study.error();
  EXPECT_EQ(proxy.cuts(), 1);
  EXPECT_TRUE(created) << "the study it made, retried, was taken for another worker's";
  const auto count = [&](const std::string& where) {
    return server().scalar(m_db, "SELECT count(*) FROM trials WHERE " + where);
  };

  proxy.cut_next_commit();
  auto made = (*s)->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(made) << made.error();
  EXPECT_EQ(proxy.cuts(), 2);
  EXPECT_EQ(made->number, 0);
  EXPECT_EQ(count("true"), "1") << "the retried creation made a second trial";

  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE((*s)->create_trial(study->study_id, TrialState::waiting, {}));
  }
  proxy.cut_next_commit();
  auto popped = (*s)->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(popped && *popped) << (popped ? "none" : popped.error());
  EXPECT_EQ(proxy.cuts(), 3);
  EXPECT_EQ((*popped)->number, 1);
  EXPECT_EQ(count("state = 'WAITING'"), "1") << "the retried pop took a second trial";

  proxy.cut_next_commit();
  auto ended = (*s)->set_trial_state_values(made->trial_id, TrialState::complete, 2.5);
  ASSERT_TRUE(ended) << ended.error();
  EXPECT_EQ(proxy.cuts(), 4);
  EXPECT_TRUE(*ended) << "its own end, retried, was taken for another worker's";
  auto t = (*s)->get_trial(made->trial_id);
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->state, TrialState::complete);
  EXPECT_EQ(t->value, 2.5);
}

// With the server gone for longer than retry_for, a call fails after about that long, with an
// error of kind unreachable naming the server; once it is back, the same storage object works
// again.
TEST_F(PostgresStorageTest, AServerGoneLongerThanTheRetryTimeIsAClearError) {
  auto s = open("?retry_for=1s");
  auto study = s->get_or_create_study("gone", search::Direction::minimize, nullptr);
  ASSERT_TRUE(study);
  auto& srv = *shared_postgres();
  srv.stop();
  const auto t0 = std::chrono::steady_clock::now();
  auto t = s->create_trial(study->study_id, TrialState::running, {});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(srv.restart());
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind, StorageErrorKind::unreachable) << t.error();
  EXPECT_NE(t.error().message.find("stopped answering"), std::string::npos) << t.error();
  EXPECT_NE(t.error().message.find("127.0.0.1"), std::string::npos) << t.error();
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 10.0);
  auto again = s->create_trial(study->study_id, TrialState::running, {});
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again->number, 0);  // the failed call left nothing behind
}

// A read-only opening (tune best/trials/report) writes nothing, not even the schema.
TEST_F(PostgresStorageTest, ReadOnlyOpeningWritesNothing) {
  auto missing = open_storage(url(), OpenMode::read_only);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("no Optuna study schema"), std::string::npos) << missing.error();
  EXPECT_EQ(server().scalar(m_db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"),
            "0");
  {
    auto w = open();
    auto study = w->get_or_create_study("ro", search::Direction::minimize, nullptr);
    ASSERT_TRUE(study);
  }
  auto r = open_storage(url(), OpenMode::read_only);
  ASSERT_TRUE(r) << r.error();
  auto study = (*r)->get_study("ro");
  ASSERT_TRUE(study);
  auto refused = (*r)->create_trial(study->study_id, TrialState::running, {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("read-only"), std::string::npos) << refused.error();
}

}  // namespace
}  // namespace tune::tuner
