// Trials that span hosts, for real on one machine: two network namespaces joined by a veth pair,
// each with its own sshd, address (10.99.0.N) and hostname (hN), made by scripts/netns-hosts.sh
// in a fixture that stops by pid what it started. Host h2's sshd runs on one CPU only (a smaller
// node), so 2 ranks there oversubscribe it while h1's 2 ranks on 2 CPUs do not. `tune` runs on
// h1, the bundled trainer 2 hosts x 2 ranks from the generated hostfile; each node's sampler must
// see its own ranks, and the verdict must name h2, not h1. Traffic stays on 10.99.0.0/24.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/common/test_support.h"
#include "tuner/launch/launcher.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;

const std::string k_hosts_script = TUNE_SOURCE_DIR "/scripts/netns-hosts.sh";

struct Ran {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Ran run(const std::vector<std::string>& argv, const fs::path& dir, double timeout_s = 120) {
  LaunchRequest req;
  req.argv = argv;
  req.stdout_path = (dir / "cmd.out").string();
  req.stderr_path = (dir / "cmd.err").string();
  req.timeout_s = timeout_s;
  const auto r = run_process(req);
  EXPECT_TRUE(r.started) << r.error;
  return {r.exit_code, slurp(req.stdout_path), slurp(req.stderr_path)};
}

// The fixture's own commands run as plain children, not under run_process(): its keeper would
// stop the sshds that `up` leaves running, as it stops whatever a trial leaves behind.
using test_support::spawn_and_wait;

class MultiHost : public ::testing::Test {
 protected:
  // Namespaces need root and a kernel that lets this container make them: without, the tests
  // are skipped with the reason; anything else that fails is a failure.
  static void SetUpTestSuite() {
    char templ[] = "/tmp/tune-multihost-XXXXXX";
    if (::geteuid() != 0) {
      s_skip = "network namespaces need root";
      return;
    }
    s_dir = ::mkdtemp(templ);
    const auto log = s_dir / "fixture.log";
    if (spawn_and_wait({"unshare", "--net", "true"}, log) != 0) {
      s_skip = "this machine cannot create network namespaces (unshare --net failed)";
      return;
    }
    s_up =
        spawn_and_wait({k_hosts_script, "up", s_dir.string(), "2", "--slots", "2", "--cpus", "2=1"},
                       log) == 0;
    if (!s_up) s_error = "netns-hosts.sh up failed: " + slurp(log);
  }
  static void TearDownTestSuite() {
    if (s_dir.empty()) return;
    if (s_up) spawn_and_wait({k_hosts_script, "down", s_dir.string()}, s_dir / "fixture.log");
    std::error_code ec;
    fs::remove_all(s_dir, ec);
  }
  void SetUp() override {
    if (!s_skip.empty()) GTEST_SKIP() << s_skip;
    ASSERT_TRUE(s_up) << s_error;
  }

  // `tune ARGS` as host h1 (its namespace and hostname).
  static Ran tune_on_h1(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {k_hosts_script, "exec", s_dir.string(), "1", TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, s_dir, 300);  // 3 trials of at most 60 s each
  }

  static std::string study(const std::string& name, const std::string& mca_extra) {
    const fs::path dir = s_dir / name;
    fs::create_directories(dir);
    const auto path = dir / "study.yaml";
    std::ofstream(path) << "name: " << name << "\n"
                        << "output: " << (dir / "out").string() << "\n"
                        << "timeout: 60s\n"
                        << "launch:\n  mpirun:\n    n: 4\n"
                        << "    hostfile: " << (s_dir / "hostfile").string() << "\n"
                        << "    bind_to: none\n"
                        << "    mca: {btl: 'tcp,self,vader', pml: ob1, btl_tcp_if_include: "
                           "10.99.0.0/24, oob_tcp_if_include: 10.99.0.0/24"
                        << mca_extra << "}\n"
                        << "command: ['{tune_trainer}', '--out={trial_dir}', '--synthetic=2000', "
                           "'--benchmark', '--iterator-workers=0', '--omp-threads=1', "
                           "'--blas-threads=1', '--opencv-threads=1', '--allreduce={allreduce}']\n"
                        << "params:\n  allreduce: [mpi, ring, rabenseifner]\n"
                        << "sampler: {type: grid}\n"
                        << "probes: {enabled: true, interval: 0.1}\n";
    return path.string();
  }

  static std::vector<search::FrozenTrial> trials(const std::string& name) {
    auto s = SqliteStorage::open((s_dir / name / "out" / "study.db").string());
    EXPECT_TRUE(s) << (s ? "" : s.error());
    if (!s) return {};
    auto st = (*s)->get_study(name);
    EXPECT_TRUE(st) << (st ? "" : st.error());
    if (!st) return {};
    return *(*s)->get_all_trials(st->study_id);
  }

  static inline fs::path s_dir;
  static inline std::string s_skip, s_error;
  static inline bool s_up = false;
};

TEST_F(MultiHost, TwoHostsTimesTwoRanksEachNodeSampledAndTheSmallNodeNamed) {
  const auto path =
      study("twohosts", ", plm_rsh_args: '-F " + (s_dir / "ssh_config").string() + "'");
  const auto o = tune_on_h1({"--trials", "3", "--quiet", path});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto ts = trials("twohosts");
  ASSERT_EQ(ts.size(), 3u);
  for (const auto& t : ts) {
    ASSERT_EQ(t.state, TrialState::complete)
        << "trial " << t.number << ": " << t.system_attrs.value("fail_reason", std::string());
    // The prediction read the hostfile: 2 nodes of 2 ranks, not 4 ranks on this one.
    const auto& predicted = t.system_attrs["probe_prediction"];
    ASSERT_EQ(predicted["nodes"].size(), 2u) << predicted.dump();
    EXPECT_EQ(predicted["nodes"][1]["host"], "10.99.0.2");
    EXPECT_EQ(predicted["nodes"][1]["ranks"], nlohmann::json({2, 3}));

    // Each node's sampler saw its own ranks, on its own host.
    const auto& verdict = t.system_attrs["probe_verdict"];
    ASSERT_EQ(verdict["nodes"].size(), 2u) << verdict.dump();
    // h2 is a namespace of this machine: its ranks run here, outside the trial's tree, so this
    // machine's CPU figures cannot tell them from other work's load and the load is not judged
    // (it was, and trial 0 was re-run as under load).
    EXPECT_EQ(verdict["shares_machine_with"], nlohmann::json({"10.99.0.2"})) << verdict.dump();
    EXPECT_FALSE(t.user_attrs.contains("measured_under_load")) << t.user_attrs.dump();
    std::map<std::string, std::set<int>> seen;
    for (const auto& node : verdict["nodes"]) {
      ASSERT_TRUE(node.contains("ranks_seen")) << node.dump();
      for (const auto& r : node["ranks_seen"])
        seen[node["hostname"].get<std::string>()].insert(r["rank"].get<int>());
    }
    EXPECT_EQ(seen, (std::map<std::string, std::set<int>>{{"h1", {0, 1}}, {"h2", {2, 3}}}))
        << verdict.dump();

    // h2 runs its 2 ranks on 1 CPU: the verdict names it (and one of its ranks), not h1.
    const auto diagnosis = verdict["diagnosis"].get<std::string>();
    EXPECT_TRUE(diagnosis.starts_with("oversubscribed on h2 (10.99.0.2, ranks 2-3): "))
        << diagnosis;
    EXPECT_NE(diagnosis.find("; ok on h1 (10.99.0.1, ranks 0-1): "), std::string::npos)
        << diagnosis;
    EXPECT_TRUE(diagnosis.find("rank 2") != std::string::npos ||
                diagnosis.find("rank 3") != std::string::npos)
        << diagnosis;
  }

  // The exports carry the same layout: 2 nodes x 2 tasks, the hostfile, and as root the flag
  // the trials ran with.
  const auto slurm = tune_on_h1({"export", path, "-f", "slurm"});
  ASSERT_EQ(slurm.exit_code, 0) << slurm.err;
  EXPECT_NE(slurm.out.find("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"), std::string::npos)
      << slurm.out;
  const auto line = tune_on_h1({"export", path, "-f", "mpirun"});
  ASSERT_EQ(line.exit_code, 0) << line.err;
  EXPECT_NE(line.out.find("mpirun --allow-run-as-root -n 4 --bind-to none --hostfile " +
                          (s_dir / "hostfile").string()),
            std::string::npos)
      << line.out;
}

// Without the fixture's ssh config, ssh cannot check h2's host key: the trial's reason is that
// line, not the banner of dashes Open MPI prints after it.
TEST_F(MultiHost, AFailedRemoteStartSaysWhy) {
  const auto o = tune_on_h1({"--trials", "1", "--quiet", study("nokeys", "")});
  const auto ts = trials("nokeys");
  ASSERT_EQ(ts.size(), 1u) << o.out << o.err;
  EXPECT_EQ(ts[0].state, TrialState::fail);
  const auto reason = ts[0].system_attrs.value("fail_reason", std::string());
  EXPECT_TRUE(reason.starts_with("exit code ")) << reason;
  EXPECT_NE(reason.find("Host key verification failed."), std::string::npos) << reason;
  EXPECT_EQ(reason.find("----"), std::string::npos) << reason;
}

}  // namespace
}  // namespace tune::tuner
