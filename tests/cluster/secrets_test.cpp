// Secrets stay secret (issue 25): a study on a real PostgreSQL server whose storage URL carries a
// password twice (user info and ?password=), run with PGPASSWORD in tune's environment and one
// in the study's env. Every output tune writes (the run banner, tune best and trials, the report
// in every format, every export format, tune confirm, the errors of a bad URL option and of a
// server that does not answer) and every attribute it stores is searched for the planted
// passwords: none shows anywhere, and `***` stands where the URL is shown. The server trusts
// loopback connections (--auth=trust), so it ignores the passwords. Exit statuses of the read-only
// commands against a live server: a study that is not there is bad input (2).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cluster/postgres_fixture.h"
#include "tests/cluster/run_command.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using test_support::Ran;

// The planted passwords: in the URL's user info, in its query, in tune's environment, in the
// study file's env (given to every trial).
const std::vector<std::string> k_secrets = {"UrlPw-7Hq2zz", "QueryPw-9Kx4zz", "EnvPw-3Lm8zz",
                                            "StudyEnvPw-5Rt1zz"};

// The lines of `text` that hold a planted password, each of them replaced by <SECRET> so that a
// failing test prints none either; "" when none does.
std::string leaks(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    bool leaked = false;
    for (const auto& secret : k_secrets) {
      for (auto at = line.find(secret); at != std::string::npos; at = line.find(secret)) {
        line.replace(at, secret.size(), "<SECRET>");
        leaked = true;
      }
    }
    if (leaked) out += line + '\n';
  }
  return out;
}

class Secrets : public tune::testing::PostgresTest {
 protected:
  void SetUp() override {
    PostgresTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    m_dir = test_support::fresh_test_dir("tune-secrets-");
    m_host = "127.0.0.1:" + std::to_string(server().port()) + "/" + m_db;
    m_url = "postgresql+psycopg2://postgres:" + k_secrets[0] + "@" + m_host +
            "?password=" + k_secrets[1] + "&connect_timeout=10";
    m_shown = "postgresql+psycopg2://postgres:***@" + m_host + "?password=***&connect_timeout=10";
    m_study = test_support::write_file(
        m_dir / "study.yaml",
        "name: secret\noutput: " + (m_dir / "out").string() + "\nstorage: " + m_url +
            "\ncommand: ['" FAKE_TRIAL
            "', --out, '{trial_dir}', --value, '{x}']\n"
            "env: {PGPASSWORD: " +
            k_secrets[3] +
            ", OMP_NUM_THREADS: '{threads}'}\n"
            "sampler: {type: random, seed: 1}\n"
            "params:\n  x: {type: float, low: 1, high: 10}\n  threads: [1, 2]\n");
  }
  void TearDown() override {
    if (!HasFailure() && !m_dir.empty()) fs::remove_all(m_dir);
  }
  // tune with `args`, PGPASSWORD planted in its environment.
  Ran tune(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run(m_dir, argv, {{"PGPASSWORD", k_secrets[2]}});
  }
  // Runs tune, expects `status` and no planted password in its output; returns the output.
  std::string output_of(const std::vector<std::string>& args, int status = 0) {
    const Ran r = tune(args);
    std::string line;
    for (const auto& a : args) line += a + ' ';
    EXPECT_EQ(r.exit_code, status) << leaks(line) << "\n" << leaks(r.err);
    EXPECT_EQ(leaks(r.out + r.err), "") << leaks(line);
    return r.out + r.err;
  }

  fs::path m_dir;
  std::string m_host, m_url, m_shown, m_study;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(Secrets, NoOutputAndNoStoredAttributeHoldsAPassword) {
  const auto ran = output_of({"--trials", "3", m_study});
  EXPECT_TRUE(contains(ran, "storage " + m_shown + "\n")) << leaks(ran);  // the banner

  output_of({"best", m_study});
  output_of({"trials", m_study});
  output_of({"best", m_url});  // the URL as the study's name
  output_of({"trials", "--storage", m_url, m_study});

  for (const std::string format : {"text", "json", "markdown", "html"}) {
    const auto report = output_of({"report", m_study, "--format", format});
    // JSON and HTML escape nothing in this URL but '&' (HTML: &amp;).
    std::string shown = m_shown;
    if (format == "html") shown.replace(shown.find('&'), 1, "&amp;");
    EXPECT_TRUE(contains(report, shown)) << format;
  }

  // Trial scripts: the database in a comment, masked; the study's PGPASSWORD left out.
  for (const std::string format : {"bash", "slurm", "pbs", "env"}) {
    const auto script = output_of({"export", m_study, "--format", format});
    EXPECT_TRUE(contains(script, "# Database: " + m_shown + "\n")) << format;
    EXPECT_TRUE(contains(script, "# PGPASSWORD is a secret and not written here")) << format;
    EXPECT_TRUE(contains(script, "OMP_NUM_THREADS=")) << format;  // the others are written
  }
  const auto line = output_of({"export", m_study, "--format", "mpirun"});
  EXPECT_FALSE(contains(line, "PGPASSWORD")) << leaks(line);
  EXPECT_TRUE(contains(line, "OMP_NUM_THREADS=")) << leaks(line);
  // The workers get the URL without its password and read it from PGPASSWORD or ~/.pgpass.
  const auto workers = output_of({"export", m_study, "--format", "slurm-array", "--workers", "2"});
  EXPECT_TRUE(contains(workers, "# Database: " + m_shown + "\n")) << leaks(workers);
  EXPECT_TRUE(contains(workers, "PGPASSWORD")) << leaks(workers);
  EXPECT_TRUE(contains(
      workers, "--storage 'postgresql+psycopg2://postgres@" + m_host + "?connect_timeout=10' "))
      << leaks(workers);

  output_of({"confirm", m_study, "--repeats", "1", "--top", "1", "--quiet"});

  // A bad option of the URL is bad input, named with the password masked; so is a study file
  // whose storage has one.
  const std::string bad = m_url + "&grace_period=abc";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--trials", "1", "--storage", bad, m_study},
           {"best", "--storage", bad, m_study},
           {"report", bad},
           {"export", "--format", "slurm-array", "--workers", "2", "--storage", bad, m_study}}) {
    const auto error = output_of(args, 2);
    EXPECT_TRUE(contains(error, "grace_period=abc")) << leaks(error);
    EXPECT_TRUE(contains(error, "postgres:***@")) << leaks(error);
  }
  auto text = test_support::slurp(m_study);
  text.replace(text.find("&connect_timeout"), 0, "&grace_period=abc");
  const auto bad_study = test_support::write_file(m_dir / "bad.yaml", text);
  EXPECT_TRUE(contains(output_of({"--trials", "1", bad_study}, 2), "postgres:***@"));

  // A server that does not answer: a failure (1), named with the password masked.
  const std::string down =
      "postgresql://postgres:" + k_secrets[0] + "@127.0.0.1:1/x?connect_timeout=2&retry_for=1s";
  EXPECT_TRUE(contains(output_of({"best", down}, 1), "postgresql://postgres:***@127.0.0.1:1/x"));

  // What the trials stored: the study's PGPASSWORD masked, no password anywhere.
  auto storage = open_storage(url(), OpenMode::read_only);
  ASSERT_TRUE(storage) << storage.error();
  auto study = (*storage)->get_study("secret");
  ASSERT_TRUE(study) << study.error();
  auto study_attrs = (*storage)->get_study_user_attrs(study->study_id);
  ASSERT_TRUE(study_attrs) << study_attrs.error();
  EXPECT_EQ(leaks(study_attrs->dump()), "");
  auto trials = (*storage)->get_all_trials(study->study_id);
  ASSERT_TRUE(trials) << trials.error();
  ASSERT_GT(trials->size(), 3u);  // 3, then confirm's re-runs
  for (const auto& t : *trials) {
    EXPECT_EQ(leaks(t.user_attrs.dump() + t.system_attrs.dump()), "") << "trial " << t.number;
    EXPECT_EQ(t.user_attrs.at(k_attr_env).at("PGPASSWORD"), "***") << "trial " << t.number;
  }
}

// tune's credentials stay tune's (issue 37): a trial's processes start without the PGPASSWORD
// and PGPASSFILE tune was given, unless the study's env names them (here PGPASSFILE); a password
// typed in --storage gets a warning and is gone from tune's /proc/PID/cmdline while the trial
// runs. The trial itself reads what it would leak: its own /proc/self/environ, its parent's (the
// keeper, or the program itself where there is none) and tune's command line.
TEST_F(Secrets, TrialsStartWithoutTunesCredentialsAndTheCommandLineLosesThePassword) {
  const auto study = test_support::write_file(
      m_dir / "env.yaml",
      "name: env\noutput: " + (m_dir / "out").string() +
          "\ncommand: [sh, -c, 'cat /proc/self/environ > \"$0/self\"; "
          "cat /proc/$PPID/environ > \"$0/parent\"; read -r _ _ _ up _ < /proc/$PPID/stat; "
          "cat /proc/$PPID/cmdline /proc/$up/cmdline > \"$0/cmdline\"; echo v=1.5', "
          "'{trial_dir}']\n"
          "env: {PGPASSFILE: /named/by/the/study}\n"
          "objective: {regex: 'v=([0-9.]+)'}\n"
          "sampler: {type: random, seed: 1}\nparams:\n  x: [1, 2]\n");
  std::vector<std::string> argv = {TUNE_BIN, "--trials", "1", "--storage", m_url, study};
  const Ran r = test_support::run(m_dir, argv,
                                  {{"PGPASSWORD", k_secrets[2]}, {"PGPASSFILE", "/tunes/own"}});
  ASSERT_EQ(r.exit_code, 0) << leaks(r.err);
  EXPECT_TRUE(contains(r.err, "tune: warning: a password on the command line can be read by "
                              "other users of this machine (ps); put it in ~/.pgpass or the "
                              "PGPASSWORD variable instead\n"))
      << leaks(r.err);
  const fs::path trial = m_dir / "out" / "trials" / "0";
  for (const std::string file : {"self", "parent"}) {
    const auto environ = test_support::slurp(trial / file);
    ASSERT_FALSE(environ.empty()) << file;
    EXPECT_EQ(leaks(environ), "") << file;
    EXPECT_FALSE(contains(environ, std::string("PGPASSWORD="))) << file;
    EXPECT_FALSE(contains(environ, std::string("PGPASSFILE=/tunes/own"))) << file;
    EXPECT_TRUE(contains(environ, std::string("PGPASSFILE=/named/by/the/study") + '\0')) << file;
  }
  const auto cmdline = test_support::slurp(trial / "cmdline");
  EXPECT_EQ(leaks(cmdline), "");
  EXPECT_TRUE(contains(cmdline, "postgres:***@")) << cmdline;
}

// Against a live server, the read-only commands tell a study that is not there (bad input, 2)
// from a server that does not answer (1, in the test above and tune_e2e's).
TEST_F(Secrets, AStudyThatIsNotThereIsBadInput) {
  ASSERT_EQ(tune({"--trials", "1", "--quiet", m_study}).exit_code, 0);
  for (const std::string command : {"best", "trials", "report", "export", "confirm"}) {
    const Ran r = tune({command, "--study", "absent", m_url});
    EXPECT_EQ(r.exit_code, 2) << command << ": " << leaks(r.err);
    EXPECT_TRUE(contains(r.err, "no study named 'absent'")) << command << ": " << leaks(r.err);
    EXPECT_EQ(leaks(r.out + r.err), "") << command;
  }
}

}  // namespace
}  // namespace tune::tuner
