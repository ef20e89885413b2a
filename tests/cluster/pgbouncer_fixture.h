// A throwaway PgBouncer in front of a test's PostgreSQL server (postgres_fixture.h): Debian's
// pgbouncer (1.18 on Debian 12), in transaction pooling mode, listening on 127.0.0.1 and a free
// port, its configuration, log and pid file in a fresh temporary folder, pooling every database
// of the server as the `postgres` user (auth_type any: the fixture's server trusts loopback).
// Started by the constructor as a child process (as the `postgres` user when run as root: it
// refuses root), stopped by the destructor through its pid (SIGTERM, then SIGKILL after a
// bounded wait) and its folder removed. `pool_size` server connections at most per database, so
// a test with more workers than that has their transactions share server connections, as 200
// workers share the pool of a real deployment. Where the binary is missing, pgbouncer_missing()
// says so in one line and tests skip. Header only; not thread-safe: set up from the test's main
// thread.
#pragma once

#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "tests/cluster/postgres_fixture.h"

namespace tune::testing {

inline constexpr const char* k_pgbouncer_bin = "/usr/sbin/pgbouncer";

// Why no PgBouncer can run here, or nullopt.
inline std::optional<std::string> pgbouncer_missing() {
  if (!pg_fs::exists(k_pgbouncer_bin)) {
    return "PgBouncer not installed (apt-get install pgbouncer; scripts/install-deps.sh test)";
  }
  if (geteuid() == 0 && getpwnam("postgres") == nullptr) {
    return "running as root and there is no `postgres` user to run pgbouncer as";
  }
  return std::nullopt;
}

// Whether something accepts TCP connections on 127.0.0.1:`port`.
inline bool loopback_port_open(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool open = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return open;
}

class PgBouncer {
 public:
  PgBouncer(const PostgresServer& server, int pool_size) {
    char tmpl[] = "/tmp/tune-pgbouncer-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      m_error = "mkdtemp failed";
      return;
    }
    m_dir = tmpl;
    pg_fs::permissions(m_dir, pg_fs::perms(0755));
    const passwd* pw = geteuid() == 0 ? getpwnam("postgres") : nullptr;
    if (pw != nullptr && chown(m_dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      m_error = "cannot hand " + m_dir.string() + " to the postgres user";
      return;
    }
    m_port = free_loopback_port();
    {
      std::ofstream ini(m_dir / "pgbouncer.ini");
      ini << "[databases]\n* = host=127.0.0.1 port=" << server.port() << " user=postgres\n"
          << "[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = " << m_port
          << "\nunix_socket_dir =\nauth_type = any\npool_mode = transaction\n"
          << "default_pool_size = " << pool_size << "\nmin_pool_size = 0\n"
          << "max_client_conn = 1000\n"
          // Back within a second of the server's restart (the default waits 15 s).
          << "server_login_retry = 1\n"
          << "logfile = " << (m_dir / "pgbouncer.log").string()
          << "\npidfile = " << (m_dir / "pgbouncer.pid").string() << "\n";
    }
    if (pw != nullptr) chown((m_dir / "pgbouncer.ini").c_str(), pw->pw_uid, pw->pw_gid);
    const std::string ini = (m_dir / "pgbouncer.ini").string();
    m_pid = fork();
    if (m_pid == 0) {
      if (pw != nullptr && (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)) _exit(126);
      const int log = open((m_dir / "stderr.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (log >= 0) {
        dup2(log, 1);
        dup2(log, 2);
      }
      execl(k_pgbouncer_bin, k_pgbouncer_bin, ini.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    if (m_pid < 0) {
      m_error = "fork failed";
      return;
    }
    // Ready when it accepts connections (bounded; an early exit is reported with its log).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_pid = -1;
        m_error = "pgbouncer exited at start: see " + (m_dir / "pgbouncer.log").string() + " and " +
                  (m_dir / "stderr.log").string();
        return;
      }
      if (loopback_port_open(m_port)) {
        m_started = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m_error = "pgbouncer did not listen within 20 s";
  }
  ~PgBouncer() {
    stop();
    std::error_code ec;
    if (!m_dir.empty()) pg_fs::remove_all(m_dir, ec);
  }
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  bool started() const { return m_started; }
  const std::string& error() const { return m_error; }
  int port() const { return m_port; }
  pid_t pid() const { return m_pid; }
  std::string url(const std::string& db) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(m_port) + "/" + db;
  }

  // Stops it: SIGTERM to its pid (its own clean shutdown), SIGKILL if still there after 10 s.
  void stop() {
    if (m_pid <= 0) return;
    kill(m_pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int status = 0;
    while (waitpid(m_pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(m_pid, SIGKILL);
        waitpid(m_pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m_pid = -1;
    m_started = false;
  }

 private:
  pg_fs::path m_dir;
  int m_port = -1;
  pid_t m_pid = -1;
  bool m_started = false;
  std::string m_error;
};

// The test process's PgBouncer in front of its shared server (shared_postgres()), two server
// connections per database, started by the first test that needs one; stopped before the
// server by a global environment's TearDown (registered after the server's, torn down first).
inline std::unique_ptr<PgBouncer>& shared_pgbouncer() {
  static std::unique_ptr<PgBouncer> bouncer;
  return bouncer;
}

class PgBouncerEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { shared_pgbouncer().reset(); }
};
inline ::testing::Environment* const k_pgbouncer_environment =
    ::testing::AddGlobalTestEnvironment(new PgBouncerEnvironment);

// Starts (once) the shared server and its PgBouncer; the reason to skip, "" when both run (a
// failure to start is the test's failure, `error`).
inline std::string start_shared_pgbouncer(std::string* error) {
  if (auto missing = postgres_missing()) return *missing;
  if (auto missing = pgbouncer_missing()) return *missing;
  auto& server = shared_postgres();
  if (!server) server = std::make_unique<PostgresServer>();
  if (!server->started()) {
    *error = server->error();
    return "";
  }
  auto& bouncer = shared_pgbouncer();
  if (!bouncer) bouncer = std::make_unique<PgBouncer>(*server, 2);
  if (!bouncer->started()) *error = bouncer->error();
  return "";
}

}  // namespace tune::testing
