// A single-node Slurm cluster in a temp folder, for tests: munged on its own socket, slurmctld
// and slurmd on ports of their own, each run in the foreground as this process's child and
// stopped by pid (tune's launcher would, rightly, stop a daemon that its command left behind).
// Clients reach it through env() (SLURM_CONF). Needs root (munged runs as the munge user) and
// Debian's slurm-wlm + munge; start() says why not otherwise, for a one-line skip. Header-only;
// one object per cluster, not thread-safe.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/cluster/run_command.h"

namespace tune::test_support {

class LocalSlurm {
 public:
  explicit LocalSlurm(std::filesystem::path dir) : m_dir(std::move(dir)) {}
  ~LocalSlurm() { stop(); }
  LocalSlurm(const LocalSlurm&) = delete;
  LocalSlurm& operator=(const LocalSlurm&) = delete;

  // Empty string on success, else why it could not start.
  std::string start() {
    namespace fs = std::filesystem;
    for (const char* p : {"munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo", "setpriv"})
      if (!on_path(p)) return std::string(p) + " is not installed";
    if (geteuid() != 0) return "needs root to run munged as the munge user";
    for (const char* sub : {"munge", "state", "spool"}) fs::create_directories(m_dir / sub);
    // munged insists that every folder above its socket is searchable by all.
    for (fs::path p = m_dir; p != p.root_path(); p = p.parent_path())
      fs::permissions(p, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
    auto r = run(m_dir, {"chown", "munge:munge", (m_dir / "munge").string()});
    if (r.exit_code != 0) return "chown munge: " + r.err;
    fs::permissions(m_dir / "munge",
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    if (auto why = daemon({"setpriv", "--reuid=munge", "--regid=munge", "--init-groups", "munged",
                           "--foreground", "--socket=" + socket(),
                           "--pid-file=" + (m_dir / "munge/pid").string(),
                           "--log-file=" + (m_dir / "munge/log").string(),
                           "--seed-file=" + (m_dir / "munge/seed").string()});
        !why.empty())
      return why;
    // slurmctld needs munged's socket: wait (bounded) until it exists.
    for (const auto until = Clock::now() + std::chrono::seconds(10);
         !fs::exists(socket()) && Clock::now() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    write_conf();
    for (const char* name : {"slurmctld", "slurmd"}) {
      if (auto why = daemon({name, "-D", "-f", conf()}); !why.empty()) return why;
    }
    // Ready when the node reports idle; each sinfo is a round trip to slurmctld.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < deadline) {
      r = run(m_dir, {"sinfo", "-h", "-o", "%t"}, env());
      if (r.exit_code == 0 && r.out.starts_with("idle")) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return "the node never became idle; slurmctld log:\n" + slurp(m_dir / "slurmctld.log");
  }

  void stop() {
    for (auto it = m_daemons.rbegin(); it != m_daemons.rend(); ++it) {
      kill(it->id(), SIGTERM);
      std::error_code ec;
      if (!it->wait_for(std::chrono::seconds(10), ec)) {
        kill(it->id(), SIGKILL);
        it->wait(ec);
      }
    }
    m_daemons.clear();
  }

  std::string conf() const { return (m_dir / "slurm.conf").string(); }
  std::map<std::string, std::string> env() const { return {{"SLURM_CONF", conf()}}; }
  std::string host() const {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
  }
  const std::filesystem::path& dir() const { return m_dir; }

 private:
  using Clock = std::chrono::steady_clock;

  std::string socket() const { return (m_dir / "munge/munge.socket").string(); }

  // Each cluster numbers its jobs from its own FirstJobId and keeps PMIx's per-step folders in
  // its own folder (mpi.conf, read from beside slurm.conf): job ids restart with every test
  // cluster, and a step folder left in /tmp by an earlier one (/tmp/spmix_appdir_UID_JOB.STEP)
  // makes a later step with the same id fail to launch.
  void write_conf() const {
    const int port = 20000 + static_cast<int>(getpid() % 20000);
    std::filesystem::create_directories(m_dir / "pmix");
    std::ofstream(m_dir / "mpi.conf") << "PMIxCliTmpDirBase=" << (m_dir / "pmix").string() << "\n";
    const auto path = [&](const char* name) { return (m_dir / name).string(); };
    std::ofstream(conf()) << "ClusterName=tunetest\nFirstJobId=" << 1 + getpid() % 60000 * 1000
                          << "\nSlurmctldHost=" << host() << "\nSlurmctldPort=" << port
                          << "\nSlurmdPort=" << port + 1
                          << "\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket="
                          << socket()
                          << "\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                             "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
                             "SlurmUser=root\nSlurmdUser=root\nReturnToService=2\nMpiDefault=none\n"
                             "StateSaveLocation="
                          << path("state") << "\nSlurmdSpoolDir=" << path("spool")
                          << "\nSlurmctldPidFile=" << path("slurmctld.pid")
                          << "\nSlurmdPidFile=" << path("slurmd.pid")
                          << "\nSlurmctldLogFile=" << path("slurmctld.log")
                          << "\nSlurmdLogFile=" << path("slurmd.log") << "\nNodeName=" << host()
                          << " CPUs=" << std::thread::hardware_concurrency()
                          << " State=UNKNOWN\nPartitionName=debug Nodes=" << host()
                          << " Default=YES MaxTime=INFINITE State=UP\n";
  }

  // Starts one daemon in the foreground, output to DIR/<name>.console.
  std::string daemon(const std::vector<std::string>& argv) {
    namespace bp = boost::process;
    const auto name =
        std::filesystem::path(argv[0] == "setpriv" ? "munged" : argv[0]).filename().string();
    try {
      auto env = boost::this_process::environment();
      env["SLURM_CONF"] = conf();
      m_daemons.emplace_back(bp::search_path(argv[0]),
                             bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()), env,
                             bp::std_in<bp::null, bp::std_out> bp::null,
                             bp::std_err > (m_dir / (name + ".console")).string());
    } catch (const std::exception& e) {
      return name + ": " + e.what();
    }
    return "";
  }

  std::filesystem::path m_dir;
  std::vector<boost::process::child> m_daemons;
};

}  // namespace tune::test_support
