// Outputs never overwrite inputs (`tune report` and `tune export` with -o). Before, `tune export
// STUDY -o out/study.db` or `-o study.yaml` exited 0 after truncating the study's database or
// study file in place; any existing file was overwritten, not atomically (a full disk left half
// a script); a missing folder gave "-o PATH: cannot write the file" with no cause.
//
// Now -o refuses the study's own files (its database, the files SQLite keeps beside it, the study
// file: compared by identity, so another spelling, a symbolic or hard link counts) with exit 2,
// --force or not; refuses any other existing file unless --force; writes through a temporary file
// renamed into place, so a failure leaves the old file whole; and names the path and the cause.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/common/test_support.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using test_support::read_file;
using test_support::write_file;

// A study of three fake trials, run; its files in m_dir: study.yaml, out/study.db.
class OutputFile : public test_support::TempDirTest {
 protected:
  OutputFile() : TempDirTest("tune-outfile-") {}
  void SetUp() override {
    TempDirTest::SetUp();
    m_study =
        write_file(m_dir / "study.yaml", "name: outfile\noutput: " + (m_dir / "out").string() +
                                             "\ncommand: ['" FAKE_TRIAL
                                             "', --out, '{trial_dir}', --value, '{x}']\n"
                                             "sampler: {type: random, seed: 2}\n"
                                             "params:\n  x: {type: float, low: 1, high: 10}\n");
    m_db = (m_dir / "out" / "study.db").string();
    const auto r = tune({"--trials", "3", "--quiet", m_study});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    m_study_text = read_file(m_study);
    ASSERT_EQ(trial_count(), 3u);
  }
  void TearDown() override {
    if (m_mounted) umount2(m_mounted->c_str(), MNT_DETACH);
    TempDirTest::TearDown();
  }

  test_support::CommandOutput tune(std::vector<std::string> args,
                                   const std::vector<std::string>& prefix = {}) {
    args.insert(args.begin(), TUNE_BIN);
    args.insert(args.begin(), prefix.begin(), prefix.end());
    return test_support::run_command(args, m_dir, {}, "tune");
  }
  std::size_t trial_count() { return test_support::stored_trials(m_db, "outfile").size(); }
  // SQLite's own check of the whole file: "ok" for a sound database.
  std::string integrity() {
    sqlite3* db = nullptr;
    std::string result = "cannot open";
    if (sqlite3_open_v2(m_db.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
          sqlite3_step(st) == SQLITE_ROW)
        result = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return result;
  }
  // The names in `folder` (a temporary file left behind would show here).
  static std::vector<std::string> names_in(const fs::path& folder) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(folder)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  // A tmpfs of `size` at m_dir/`name` (root, or CAP_SYS_ADMIN), unmounted after the test.
  bool mount_tmpfs(const std::string& name, const std::string& size) {
    const auto at = m_dir / name;
    fs::create_directories(at);
    if (mount("tmpfs", at.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) return false;
    m_mounted = at;
    return true;
  }

  std::string m_study, m_db, m_study_text;
  std::optional<fs::path> m_mounted;
};

// One line on stderr, "tune: error: ..." holding `what`.
::testing::AssertionResult one_error_line(const test_support::CommandOutput& r,
                                          const std::string& what) {
  if (!r.err.starts_with("tune: error: ") || std::count(r.err.begin(), r.err.end(), '\n') != 1 ||
      !r.err.contains(what))
    return ::testing::AssertionFailure() << "not one error line holding '" << what << "':\n"
                                         << r.err;
  return ::testing::AssertionSuccess();
}

TEST_F(OutputFile, TheStudysDatabaseIsNeverAnOutputAndKeepsEveryTrial) {
  fs::create_directories(m_dir / "x");
  fs::create_symlink(m_db, m_dir / "link.db");
  fs::create_hard_link(m_db, m_dir / "hard.db");
  const auto before = read_file(m_db);
  // The same file however it is spelled: relative, through .., a symbolic link, a hard link.
  for (const std::string& out :
       {std::string("out/study.db"), m_db, (m_dir / "x" / ".." / "out" / "study.db").string(),
        (m_dir / "link.db").string(), (m_dir / "hard.db").string()}) {
    for (const bool force : {false, true}) {
      for (const std::vector<std::string>& command :
           {std::vector<std::string>{"export", m_study},
            std::vector<std::string>{"export", m_db, "-f", "env"},
            std::vector<std::string>{"export", m_study, "-f", "slurm-array", "--workers", "2"},
            std::vector<std::string>{"report", m_study, "-f", "json"},
            std::vector<std::string>{"report", "out/study.db"}}) {
        auto args = command;
        args.insert(args.end(), {"-o", out});
        if (force) args.push_back("--force");
        const auto r = tune(args);
        EXPECT_EQ(r.exit_code, 2) << command[0] << " -o " << out << "\n" << r.err;
        EXPECT_TRUE(one_error_line(r, "-o " + out + " is the study's database; "));
      }
    }
  }
  EXPECT_EQ(read_file(m_db), before);
  EXPECT_EQ(integrity(), "ok");
  EXPECT_EQ(trial_count(), 3u);
  // The files SQLite keeps beside it, there or not (the write-ahead log is gone between runs).
  for (const std::string companion : {"-wal", "-shm", "-journal"}) {
    const auto r = tune({"report", m_study, "-o", "x/../out/study.db" + companion, "--force"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(one_error_line(r, "is the study's database's " + companion + " file"));
  }
  EXPECT_EQ(integrity(), "ok");
  EXPECT_EQ(trial_count(), 3u);
  // And the study still runs on.
  const auto r = tune({"--trials", "1", "--quiet", m_study});  // one more
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trial_count(), 4u);
}

TEST_F(OutputFile, TheStudyFileIsNeverAnOutput) {
  fs::create_directories(m_dir / "x");
  fs::create_symlink(m_study, m_dir / "link.yaml");
  for (const std::string& out : {std::string("study.yaml"), std::string("./x/../study.yaml"),
                                 (m_dir / "link.yaml").string()}) {
    for (const bool force : {false, true}) {
      // Given as the study, and named by the database (tune:study_file) when the database is.
      for (const std::vector<std::string>& command :
           {std::vector<std::string>{"export", m_study, "-f", "bash"},
            std::vector<std::string>{"export", m_db, "-f", "slurm"},
            std::vector<std::string>{"export", m_study, "-f", "slurm-array", "--workers", "2"},
            std::vector<std::string>{"export", m_db, "-f", "slurm-array", "--workers", "2"},
            std::vector<std::string>{"report", m_study},
            std::vector<std::string>{"report", m_db}}) {
        auto args = command;
        args.insert(args.end(), {"-o", out});
        if (force) args.push_back("--force");
        const auto r = tune(args);
        EXPECT_EQ(r.exit_code, 2) << command[0] << " " << command[1] << " -o " << out << "\n"
                                  << r.err;
        EXPECT_TRUE(one_error_line(r, "-o " + out + " is the study file; "));
      }
    }
  }
  EXPECT_EQ(read_file(m_study), m_study_text);  // byte for byte
  EXPECT_TRUE(fs::is_symlink(m_dir / "link.yaml"));
}

TEST_F(OutputFile, AnExistingFileIsReplacedOnlyWithForce) {
  const auto old = write_file(m_dir / "report.txt", "an earlier report\n");
  auto r = tune({"report", m_study, "-o", old});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(one_error_line(r, "-o " + old + " exists; pass --force to overwrite it"));
  EXPECT_EQ(read_file(old), "an earlier report\n");

  r = tune({"report", m_study, "-o", old, "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(read_file(old).starts_with("study 'outfile' (minimize ")) << read_file(old);

  // A script stays executable; a replaced file keeps its permission bits; no temporary is left.
  const auto script = write_file(m_dir / "best.sh", "echo old\n");
  fs::permissions(script, fs::perms(0640));
  r = tune({"export", m_study, "-o", script});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(read_file(script), "echo old\n");
  r = tune({"export", m_study, "-o", script, "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(read_file(script).starts_with("#!/usr/bin/env bash\n")) << read_file(script);
  EXPECT_EQ(fs::status(script).permissions(), fs::perms(0750));
  // A new script: executable where readable.
  const auto fresh = (m_dir / "fresh.sh").string();
  r = tune({"export", m_study, "-f", "slurm", "-o", fresh});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(fs::status(fresh).permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_EQ(names_in(m_dir), (std::vector<std::string>{"best.sh", "fresh.sh", "out", "report.txt",
                                                       "study.yaml", "tune.err", "tune.out"}));
  // Through a symbolic link: the file it names is replaced, the link stays.
  fs::create_symlink("report.txt", m_dir / "latest.txt");
  r = tune({"report", m_study, "-f", "markdown", "-o", "latest.txt", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(m_dir / "latest.txt"));
  EXPECT_TRUE(read_file(old).starts_with("# Study report: outfile\n")) << read_file(old);
}

TEST_F(OutputFile, AFolderOrAMissingFolderIsNamedWithItsCause) {
  auto r = tune({"export", m_study, "-o", "/nonexistent-tune-folder/x.sh"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // (After export's line saying the best was not compared with a baseline: none is enqueued.)
  EXPECT_TRUE(
      r.err.ends_with("\ntune: error: -o /nonexistent-tune-folder/x.sh: cannot create "
                      "the file: No such file or directory\n"))
      << r.err;
  r = tune({"report", m_study, "-o", (m_dir / "study.yaml" / "r.txt").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(one_error_line(r, "/study.yaml/r.txt: cannot create the file: Not a directory"));
  // An existing folder is no file to write, --force or not.
  for (const bool force : {false, true}) {
    std::vector<std::string> args = {"report", m_study, "-o", (m_dir / "out").string()};
    if (force) args.push_back("--force");
    r = tune(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(one_error_line(r, "/out is a folder; give the file to write"));
  }
  EXPECT_EQ(integrity(), "ok");
}

// A device is written into, not replaced: /dev/null takes the report without --force, and
// /dev/full's write error is named.
TEST_F(OutputFile, AWriteErrorIsNamed) {
  auto r = tune({"report", m_study, "-o", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = tune({"export", m_study, "-o", "/dev/full"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(r.err.ends_with(
      "\ntune: error: -o /dev/full: cannot write the file: No space left on device\n"))
      << r.err;
  struct stat st {};
  ASSERT_EQ(stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));  // still the device
}

// A file system that fills up in the middle of the write: the old file stays whole, and no
// temporary file is left.
TEST_F(OutputFile, AFullFileSystemLeavesTheOldFileWhole) {
  if (!mount_tmpfs("small", "64k"))
    GTEST_SKIP() << "cannot mount a tmpfs (" << std::strerror(errno)
                 << "): this test needs root, or CAP_SYS_ADMIN";
  const auto old = write_file(m_dir / "small" / "report.html", "<p>an earlier report</p>\n");
  {
    // Fill it: the last write fails with ENOSPC, which is the point.
    std::ofstream fill(m_dir / "small" / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    for (int i = 0; i < 64 && fill; ++i) fill << block << std::flush;
  }
  const auto r = tune({"report", m_study, "-f", "html", "-o", old, "--force"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "tune: error: -o " + old + ": cannot write the file: No space left on device\n");
  EXPECT_EQ(read_file(old), "<p>an earlier report</p>\n");
  EXPECT_EQ(names_in(m_dir / "small"), (std::vector<std::string>{"filler", "report.html"}));
}

// A folder the temporary file cannot be made in (read-only to this user; as root the test runs
// tune as nobody, whom permissions bind): the old file stays whole and the cause is named.
TEST_F(OutputFile, AFolderTheFileCannotBeMadeInLeavesTheOldFileWhole) {
  std::vector<std::string> as_user;
  if (geteuid() == 0) as_user = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  const auto folder = m_dir / "ro";
  fs::create_directories(folder);
  const auto old = write_file(folder / "w.sbatch", "#!/bin/sh\necho old\n");
  fs::permissions(old, fs::perms(0666));
  fs::permissions(folder, fs::perms(0555));
  // slurm-array reads only the study file (readable by all), not the database.
  const auto r = tune(
      {"export", m_study, "-f", "slurm-array", "--workers", "2", "-o", old, "--force"}, as_user);
  fs::permissions(folder, fs::perms(0755));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // After slurm-array's warning that SQLite is no storage for workers on several nodes.
  EXPECT_TRUE(
      r.err.ends_with("\ntune: error: -o " + old + ": cannot create the file: Permission denied\n"))
      << r.err;
  EXPECT_EQ(read_file(old), "#!/bin/sh\necho old\n");
  EXPECT_EQ(names_in(folder), (std::vector<std::string>{"w.sbatch"}));
}

}  // namespace
}  // namespace tune::tuner
