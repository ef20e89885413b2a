// Issue 12, points 2, 3 and 6: a trial's output is untrusted data (any bytes, any size) and its
// folder may already hold somebody's files. `tune` must store a reason for any bytes, read a
// regex objective from any amount of output in bounded memory, cap what a trial writes, and
// never delete what it did not create.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <boost/process.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/test_support.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using search::TrialState;

TEST(Printable, RepairsInvalidAndCutCharactersAndEscapesControls) {
  EXPECT_EQ(printable("plain \xC3\xA9t\xC3\xA9"), "plain \xC3\xA9t\xC3\xA9");
  EXPECT_EQ(printable("a\xFF"
                      "b\xC3"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(printable("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(printable("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(printable("red\x1B[31m\nline\ttab"), "red\\x1b[31m\\x0aline\ttab");
  // A limit in the middle of a character cuts before it.
  EXPECT_EQ(printable("ab\xE2\x82\xAC", 4), "ab...");
  EXPECT_EQ(printable("ab\xE2\x82\xAC", 5), "ab\xE2\x82\xAC");
  // Whatever goes in, what comes out dumps as JSON.
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_NO_THROW((void)nlohmann::json(printable(all + all, 300)).dump());
}

// The one filter of terminal output: newline kept, every other C0 control, DEL and the C1
// controls (U+0080..U+009F, which some terminals obey) shown; idempotent, so text filtered twice
// reads the same.
TEST(TerminalText, ShowsEveryControlButNewline) {
  EXPECT_EQ(terminal_text("a\x1b]0;pwned\x07"
                          "b\n\x1b[2J\tc\x7f\r"),
            "a\\x1b]0;pwned\\x07b\n\\x1b[2J\\x09c\\x7f\\x0d");
  EXPECT_EQ(terminal_text("\xC2\x9B"
                          "2J \xC2\xA0\xC3\xA9 \xFF"),
            "\\u009b2J \xC2\xA0\xC3\xA9 \xEF\xBF\xBD");
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  all += "\xC2\x80\xC2\x9F";
  const auto shown = terminal_text(all);
  for (const char c : shown) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u != 0x7f || c == '\n') << static_cast<int>(u);
  }
  EXPECT_EQ(terminal_text(shown), shown);
}

// A name or message written on one line (an exported script's comments, a library's error):
// newlines and carriage returns are spaces, every other control shows, so a terminal that shows
// the script obeys none; nothing breaks out of the comment's line.
TEST(OneLine, JoinsLinesAndShowsControls) {
  EXPECT_EQ(one_line("omp\x1b]0;pwned\x07=1\nrm -rf ~\r\n\tx \xFF\n"),
            "omp\\x1b]0;pwned\\x07=1 rm -rf ~  \\x09x \xEF\xBF\xBD");
}

// Whatever reaches an attribute, storage neither throws nor stores invalid JSON.
TEST(Printable, StorageStoresAttributesWithInvalidUtf8) {
  const auto path = fs::temp_directory_path() / "tune-output-attr.db";
  fs::remove(path);
  auto s = SqliteStorage::open(path.string());
  ASSERT_TRUE(s) << s.error();
  auto study = (*s)->get_or_create_study("x", search::Direction::minimize, nullptr);
  ASSERT_TRUE(study);
  auto t = (*s)->create_trial(study->study_id, TrialState::running, nlohmann::json::object());
  ASSERT_TRUE(t);
  ASSERT_TRUE((*s)->set_trial_system_attr(t->trial_id, "raw", std::string("a\xFF\xC3")));
  auto back = (*s)->get_trial(t->trial_id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->system_attrs["raw"], "a\xEF\xBF\xBD\xEF\xBF\xBD");
  fs::remove(path);
}

class TrialOutput : public test_support::TempDirTest {
 protected:
  TrialOutput() : TempDirTest("tune-output-") {}

  std::string write_study(const std::string& command, const std::string& objective = "") {
    return test_support::write_file(m_dir / "study.yaml",
                                    "name: output\noutput: " + (m_dir / "out").string() +
                                        "\ncommand: " + command + "\n" + objective +
                                        "sampler: {type: random, seed: 3}\n"
                                        "params:\n  x: {type: float, low: 1, high: 10}\n");
  }
  // Runs tune to the end; returns its exit status, and its peak RSS (KiB) in `max_rss_kib`.
  int run_tune(const std::vector<std::string>& args, long* max_rss_kib = nullptr) {
    bp::child c(TUNE_BIN, bp::args = args, bp::std_out > (m_dir / "tune.out").string(),
                bp::std_err > (m_dir / "tune.err").string());
    const pid_t pid = c.id();
    int status = 0;
    rusage ru{};
    EXPECT_EQ(wait4(pid, &status, 0, &ru), pid);
    c.detach();
    if (max_rss_kib) *max_rss_kib = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::vector<search::FrozenTrial> trials() {
    return test_support::stored_trials(m_dir / "out" / "study.db", "output");
  }
  std::string err() { return test_support::read_file(m_dir / "tune.err"); }
};

// Invalid UTF-8, and a UTF-8 character cut at the 200-byte limit, as a failing trial's last
// stderr line: tune stored neither before (nlohmann::json threw, the trial stayed RUNNING).
TEST_F(TrialOutput, AnyBytesOnStderrBecomeAStoredFailReason) {
  const std::string cut_euro(199, 'e');
  const auto study = write_study(
      "[sh, -c, 'if [ $0 = 1 ]; then printf \"bad \\377\\376 bytes\\n\" >&2; else printf \"" +
      cut_euro + "\\342\\202\\254\\342\\202\\254\\n\" >&2; fi; exit 3', '{trial_number}']");
  ASSERT_EQ(run_tune({"--trials", "2", study}), 0) << err();
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) {
    EXPECT_EQ(t.state, TrialState::fail);
    const auto reason = t.system_attrs.value(k_attr_fail_reason, "");
    EXPECT_EQ(reason.rfind("exit code 3: ", 0), 0u) << reason;
    EXPECT_EQ(printable(reason), reason);  // valid UTF-8, nothing left to escape
  }
  EXPECT_NE(
      ts[1].system_attrs.value(k_attr_fail_reason, "").find("bad \xEF\xBF\xBD\xEF\xBF\xBD bytes"),
      std::string::npos);
}

// A match of 200,000 characters overflowed std::regex's stack (SIGSEGV); a huge output was read
// whole into memory. Now: RE2 over a bounded tail, output capped by the keeper.
TEST_F(TrialOutput, RegexObjectiveOnHugeOutputInBoundedMemory) {
  const auto study = write_study(
      "[sh, -c, 'head -c 300000000 /dev/zero | tr \"\\000\" x; printf \"\\nvalue=\"; "
      "head -c 200000 /dev/zero | tr \"\\000\" 0; echo 42']",
      "objective: {regex: 'value=([0-9]+)'}\n");
  long rss_kib = 0;
  ASSERT_EQ(run_tune({"--trials", "1", study}, &rss_kib), 0) << err();
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  ASSERT_EQ(ts[0].state, TrialState::complete) << ts[0].system_attrs.dump();
  EXPECT_EQ(*ts[0].value, 42.0);
  // What the trial left on disk is capped, and the trial says what was cut.
  const auto stdout_file = fs::path(ts[0].user_attrs.value(k_attr_trial_dir, "")) / "stdout";
  EXPECT_LT(fs::file_size(stdout_file), (16u << 20) + 4096);
  const auto cut = ts[0].system_attrs.value(k_attr_output_cut, nlohmann::json());
  ASSERT_TRUE(cut.contains("stdout")) << ts[0].system_attrs.dump();
  EXPECT_GT(cut["stdout"].get<double>(), 280e6);
  // tune (and the keeper, and the trial) stayed far below the 300 MB the trial wrote.
  EXPECT_LT(rss_kib, 100 * 1024);
}

// A folder of another study (here: a file in trials/0) is left alone; the trial gets its own.
TEST_F(TrialOutput, TrialFoldersNeverDeleteOrReuseExistingFiles) {
  const auto precious = m_dir / "out" / "trials" / "0" / "important.txt";
  fs::create_directories(precious.parent_path());
  std::ofstream(precious) << "keep me";
  const auto study = write_study("[sh, -c, 'echo run > ran.txt; exit 1']");
  ASSERT_EQ(run_tune({"--trials", "1", study}), 0) << err();
  ASSERT_TRUE(fs::exists(precious));
  EXPECT_FALSE(fs::exists(precious.parent_path() / "ran.txt"));
  const auto ts = trials();
  ASSERT_EQ(ts.size(), 1u);
  const fs::path dir = ts[0].user_attrs.value(k_attr_trial_dir, "");
  EXPECT_EQ(dir.filename(), "0.1");
  EXPECT_TRUE(fs::exists(dir / "ran.txt"));
}

}  // namespace
}  // namespace tune::tuner
