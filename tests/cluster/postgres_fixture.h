// A throwaway PostgreSQL server for tests: PostgresServer runs initdb (as the `postgres` user
// when run as root, since initdb refuses root) into a fresh temporary folder, starts it on
// 127.0.0.1 and a free port with its socket in that folder and fsync off, and stops it (pg_ctl
// stop, then the postmaster's pid) when destroyed; crash() and restart() take it down (an
// immediate shutdown) and up again on the same port. Nothing outside the folder is touched.
//
// PostgresTest is a GoogleTest fixture over one server per test process (started by the first
// test that needs it, stopped by a global environment's TearDown): each test gets a database of
// its own, `url()`. Where the server binaries are missing, every test is skipped with a one-line
// reason (`postgres_missing()`). Header only, for every test binary that needs a server (the
// storage suite, tune workers on a shared study, a Slurm job array on a PostgreSQL study).
// Not thread-safe: set up from the test's main thread.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/common/test_support.h"

namespace tune::testing {

namespace pg_fs = std::filesystem;

// The newest installed server's bin folder (Debian: /usr/lib/postgresql/<major>/bin), or "".
inline pg_fs::path postgres_bin_dir() {
  std::vector<pg_fs::path> found;
  std::error_code ec;
  for (const auto& e : pg_fs::directory_iterator("/usr/lib/postgresql", ec)) {
    if (pg_fs::exists(e.path() / "bin" / "initdb") && pg_fs::exists(e.path() / "bin" / "pg_ctl")) {
      found.push_back(e.path() / "bin");
    }
  }
  if (found.empty()) return {};
  std::sort(found.begin(), found.end(), [](const pg_fs::path& a, const pg_fs::path& b) {
    return std::atoi(a.parent_path().filename().c_str()) <
           std::atoi(b.parent_path().filename().c_str());
  });
  return found.back();
}

// Runs argv (no shell) with stdout/stderr appended to `log`; its exit status, -1 if not run.
inline int run_argv(const std::vector<std::string>& argv, const pg_fs::path& log) {
  return test_support::spawn_and_wait(argv, log);
}

// Why no server can be started here, or nullopt.
inline std::optional<std::string> postgres_missing() {
  if (postgres_bin_dir().empty()) {
    return "PostgreSQL server binaries not installed (apt-get install postgresql)";
  }
  if (geteuid() == 0 && getpwnam("postgres") == nullptr) {
    return "running as root and there is no `postgres` user to run initdb as";
  }
  return std::nullopt;
}

// A port nobody listens on now (the kernel's choice for port 0).
inline int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

class PostgresServer {
 public:
  // Starts a server; `settings` are extra postgresql.conf lines. Check started() / error().
  explicit PostgresServer(const std::vector<std::string>& settings = {}) {
    // The server's own CPU while it starts, stalls or restarts beside a trial is other work's
    // load: judged, each trial it slowed would be marked and re-run (tuner/run/load_check.h),
    // and these tests count the trials the workers made. Recorded, not judged.
    setenv("TUNE_LOAD_CHECK", "off", 0);
    char tmpl[] = "/tmp/tune-pg-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      m_error = "mkdtemp failed";
      return;
    }
    m_dir = tmpl;
    m_bin = postgres_bin_dir();
    pg_fs::permissions(m_dir, pg_fs::perms(0755));  // the postgres user must traverse it
    if (geteuid() == 0) {
      const passwd* pw = getpwnam("postgres");
      if (pw == nullptr || chown(m_dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        m_error = "cannot hand " + m_dir.string() + " to the postgres user";
        return;
      }
    }
    if (tool({"initdb", "-D", data(), "-U", "postgres", "--auth=trust", "-E", "UTF8",
              "--no-sync"}) != 0) {
      m_error = "initdb failed: see " + log().string();
      return;
    }
    for (int attempt = 0; attempt < 5 && !m_started; ++attempt) start(settings);
  }
  ~PostgresServer() { stop(); }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  bool started() const { return m_started; }
  const std::string& error() const { return m_error; }
  int port() const { return m_port; }
  const pg_fs::path& dir() const { return m_dir; }
  // The postmaster's pid, from its pid file (0 when not running).
  pid_t pid() const {
    std::ifstream in(m_dir / "data" / "postmaster.pid");
    long pid = 0;
    in >> pid;
    return static_cast<pid_t>(pid);
  }
  std::string url(const std::string& db) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(m_port) + "/" + db;
  }

  // A new empty database; "" on success, else the server's message.
  std::string create_database(const std::string& name) const {
    return execute("postgres", "CREATE DATABASE \"" + name + "\"");
  }
  // One statement on `db` as the superuser; "" on success, else the error.
  std::string execute(const std::string& db, const std::string& sql) const {
    PGconn* conn = PQconnectdb(url(db).c_str());
    std::string error;
    if (PQstatus(conn) != CONNECTION_OK) {
      error = PQerrorMessage(conn);
    } else {
      PGresult* res = PQexec(conn, sql.c_str());
      const auto st = PQresultStatus(res);
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) error = PQerrorMessage(conn);
      PQclear(res);
    }
    PQfinish(conn);
    return error;
  }
  // The first column of the first row of a query, "" when none.
  std::string scalar(const std::string& db, const std::string& sql) const {
    PGconn* conn = PQconnectdb(url(db).c_str());
    std::string out;
    PGresult* res = PQexec(conn, sql.c_str());
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0) out = PQgetvalue(res, 0, 0);
    PQclear(res);
    PQfinish(conn);
    return out;
  }

  // Stops the server (fast shutdown, waiting); the postmaster is killed if pg_ctl fails.
  void stop() {
    if (!m_started) return;
    const pid_t postmaster = pid();
    if (tool({"pg_ctl", "-D", data(), "-m", "fast", "-w", "stop"}) != 0 && postmaster > 0) {
      kill(postmaster, SIGQUIT);
    }
    m_started = false;
  }
  // Crashes the server: an immediate shutdown (SIGQUIT to every server process, no checkpoint,
  // WAL buffers not yet written are lost), as a server killed mid-work. restart() then runs
  // crash recovery. WAL already handed to the OS survives (fsync is off, but the OS is not
  // crashed), so what survives is what a synchronous commit wrote.
  bool crash() {
    if (!m_started) return false;
    const pid_t postmaster = pid();
    const bool stopped = tool({"pg_ctl", "-D", data(), "-m", "immediate", "-w", "stop"}) == 0;
    if (!stopped && postmaster > 0) kill(postmaster, SIGQUIT);
    m_started = false;
    return stopped;
  }
  // Starts it again on the same port and data folder (after stop() or crash()).
  bool restart() {
    m_started = tool({"pg_ctl", "-D", data(), "-l", log().string(), "-w", "start"}) == 0;
    return m_started;
  }

 private:
  std::string data() const { return (m_dir / "data").string(); }
  pg_fs::path log() const { return m_dir / "server.log"; }
  // A server tool, as the postgres user when we are root.
  int tool(std::vector<std::string> argv) const {
    argv[0] = (m_bin / argv[0]).string();
    if (geteuid() == 0) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
    return run_argv(argv, m_dir / "tools.log");
  }
  void start(const std::vector<std::string>& settings) {
    m_port = free_loopback_port();
    {
      std::ofstream conf(m_dir / "data" / "postgresql.auto.conf", std::ios::trunc);
      conf << "listen_addresses = '127.0.0.1'\nport = " << m_port << "\nunix_socket_directories = '"
           << m_dir.string()
           << "'\nfsync = off\nfull_page_writes = off\nmax_connections = 300\n"
              // A zone far from UTC: tune's timestamps must not depend on the server's zone.
              "timezone = 'Pacific/Kiritimati'\n";
      for (const auto& s : settings) conf << s << '\n';
    }
    m_started = tool({"pg_ctl", "-D", data(), "-l", log().string(), "-w", "start"}) == 0;
    if (!m_started) m_error = "pg_ctl start failed: see " + log().string();
  }

  pg_fs::path m_dir, m_bin;
  int m_port = -1;
  bool m_started = false;
  std::string m_error;
};

// The test process's server, started by the first test that needs one.
inline std::unique_ptr<PostgresServer>& shared_postgres() {
  static std::unique_ptr<PostgresServer> server;
  return server;
}

// Stops the shared server when the test program ends.
class PostgresEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (auto& s = shared_postgres()) {
      const auto dir = s->dir();
      s.reset();
      std::error_code ec;
      pg_fs::remove_all(dir, ec);
    }
  }
};
inline ::testing::Environment* const k_postgres_environment =
    ::testing::AddGlobalTestEnvironment(new PostgresEnvironment);

// A database name for the running test: its name in lower case (PostgreSQL folds unquoted
// names), made unique in the process.
inline std::string test_database_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string("t_") + info->name();
  for (auto& c : name) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  }
  static int counter = 0;
  return name.substr(0, 50) + "_" + std::to_string(++counter);
}

// Starts (once) the shared server and creates a database named after the test; skips with a
// one-line reason where no server can run. The test's URL is url().
class PostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto missing = postgres_missing()) GTEST_SKIP() << *missing;
    auto& server = shared_postgres();
    if (!server) server = std::make_unique<PostgresServer>();
    ASSERT_TRUE(server->started()) << server->error();
    m_db = test_database_name();
    ASSERT_EQ(server->create_database(m_db), "");
  }
  PostgresServer& server() { return *shared_postgres(); }
  std::string url() const { return shared_postgres()->url(m_db); }
  std::string m_db;
};

}  // namespace tune::testing
