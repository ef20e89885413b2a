// Text from a study file, the database or a trial is inert where it lands (issue 37 point 1):
// a study whose name, parameter names, choices, fail reasons and attributes hold `<script>`,
// `<!--<script>`, `ESC ]0;... BEL` (retitles a terminal), `ESC [2J` (clears it), `|` and `*`.
// Driven for real: the live lines of `tune` and the stdout of `tune trials`, `tune best` and
// `tune report` checked byte by byte; the markdown report rendered by Python-Markdown (a renderer
// that passes raw HTML through) and its HTML parsed; the HTML report's charts drawn in headless
// Chromium.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "tests/common/test_support.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/sqlite_storage.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using search::TrialState;
using test_support::CommandOutput;

const std::string k_script = "<script>alert(1)</script>";
const std::string k_comment = "<!--<script>";
const std::string k_title = "\x1b]0;pwned\x07";  // OSC 0: sets the terminal's title
const std::string k_clear = "\x1b[2J";           // CSI 2J: clears the screen
const std::string k_study = k_script + k_title + "|*";
const std::string k_param = k_script + "|*";
const std::vector<std::string> k_choices = {k_title, k_comment, k_clear + "|*"};
const std::string k_reason = k_script + k_clear + k_comment + " | *boom*";

// The first byte below 0x20 other than newline, or 0x7f, with what surrounds it; "" when none.
std::string control_byte_in(const std::string& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f)
      return "byte 0x" + fmt::format("{:02x}", c) + " at " + std::to_string(i) + " near '" +
             out.substr(i > 40 ? i - 40 : 0, 80) + "'";
  }
  return "";
}

// `program`'s path as a shell finds it on PATH; "" when it is not there.
std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((fs::path(dir) / program).c_str(), X_OK) == 0)
      return (fs::path(dir) / program).string();
  return "";
}

class HostileTextE2E : public test_support::TempDirTest {
 protected:
  HostileTextE2E() : TempDirTest("tune-hostile-") {}

  CommandOutput run_tune(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TUNE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return test_support::run_command(argv, m_dir, {}, "tune", 60);
  }

  // The study file: the fake trial scored by its --value {x}, `extra` top-level keys, and after
  // x the parameters (and the enqueued trials) in `params`.
  std::string write_study(const std::string& extra, const std::string& params) {
    return test_support::write_file(
        m_dir / "study.yaml",
        "name: esc\noutput: " + (m_dir / "out").string() +
            "\ncommand: ['" FAKE_TRIAL "', --out, '{trial_dir}', --value, '{x}']\n" + extra +
            "sampler: {type: random, seed: 1}\n"
            "params:\n  x: {type: float, low: 1, high: 10}\n" +
            params);
  }

  // A database as another tool (Optuna, a script) may leave it: the hostile study, three
  // completed trials (one choice each, a probe diagnosis) and two failed ones (the reason in the
  // system attributes, as tune stores it, and in the user attributes, as Optuna's users do).
  fs::path hostile_db() {
    const auto db = m_dir / "hostile.db";
    auto storage = SqliteStorage::open(db.string());
    EXPECT_TRUE(storage) << storage.error();
    auto& s = **storage;
    const auto study = s.get_or_create_study(k_study, search::Direction::minimize, nullptr);
    EXPECT_TRUE(study);
    const search::Distribution choice = search::CategoricalDistribution{
        {std::string(k_choices[0]), std::string(k_choices[1]), std::string(k_choices[2])}};
    const search::Distribution x = search::FloatDistribution{1.0, 10.0, false, std::nullopt};
    for (int i = 0; i < 5; ++i) {
      nlohmann::json system = nlohmann::json::object();
      if (i == 0) system[k_attr_probe_verdict] = {{"diagnosis", k_reason}};
      if (i == 3) system[k_attr_fail_reason] = k_reason;
      const auto t = s.create_trial(study->study_id, TrialState::running, system);
      EXPECT_TRUE(t);
      EXPECT_TRUE(s.set_trial_param(t->trial_id, k_param, i % 3, choice));
      EXPECT_TRUE(s.set_trial_param(t->trial_id, "x", 2.0 + i, x));
      EXPECT_TRUE(s.set_trial_user_attr(t->trial_id, k_attr_wall_time, 1.0 + i));
      if (i == 4) {
        EXPECT_TRUE(s.set_trial_user_attr(t->trial_id, k_attr_fail_reason, k_reason));
      }
      EXPECT_TRUE(i < 3 ? s.set_trial_state_values(t->trial_id, TrialState::complete, 3.0 - i)
                        : s.set_trial_state_values(t->trial_id, TrialState::fail, std::nullopt));
    }
    return db;
  }
};

// The live lines, the end-of-run block, and every read command on the study file's study (its
// parameter name and choices hold the markup and the escape sequences) and on the database's
// (its name, fail reasons and diagnosis too): no control byte reaches stdout, and the text is
// still there to read, shown.
TEST_F(HostileTextE2E, NoControlByteReachesStdout) {
  const auto study =
      write_study("",
                  "  \"<script>alert(1)</script>|*\": [\"\\e]0;pwned\\a\", \"<!--<script>\", "
                  "\"\\e[2J|*\"]\n"
                  "enqueue:\n"
                  "  - {x: 2, \"<script>alert(1)</script>|*\": \"\\e]0;pwned\\a\"}\n"
                  "  - {x: 3, \"<script>alert(1)</script>|*\": \"<!--<script>\"}\n"
                  "  - {x: 4, \"<script>alert(1)</script>|*\": \"\\e[2J|*\"}\n");
  auto o = run_tune({"--trials", "3", study});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_EQ(control_byte_in(o.out), "") << "the live lines";
  EXPECT_NE(o.out.find("[3/3] #2 COMPLETE"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\\x1b]0;pwned\\x07"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\\x1b[2J|*"), std::string::npos) << o.out;
  const auto db = hostile_db();
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"trials", study},
                                             {"best", study},
                                             {"report", study},
                                             {"trials", db.string(), "--study", k_study},
                                             {"best", db.string(), "--study", k_study},
                                             {"report", db.string(), "--study", k_study}}) {
    o = run_tune(args);
    ASSERT_EQ(o.exit_code, 0) << args[0] << ' ' << args[1] << ":\n" << o.out << o.err;
    EXPECT_EQ(control_byte_in(o.out), "") << args[0] << ' ' << args[1] << ":\n" << o.out;
    EXPECT_NE(o.out.find(k_script + "|*"), std::string::npos) << o.out;  // shown as it is
  }
  EXPECT_NE(o.out.find("study '" + k_script + "\\x1b]0;pwned\\x07|*'"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(k_script + "\\x1b[2J" + k_comment + " | *boom*"), std::string::npos)
      << o.out;
}

// What `argv` shows on a terminal: run on a pseudo-terminal (raw, so newlines stay "\n"), its
// stdout and stderr as the terminal received them, and its exit status.
CommandOutput on_a_terminal(const fs::path& dir, const std::vector<std::string>& argv) {
  static const std::string k_pty =
      "import os, pty, sys, tty\n"
      "pid, fd = pty.fork()\n"
      "if pid == 0:\n"
      "    tty.setraw(0)\n"
      "    os.execv(sys.argv[1], sys.argv[1:])\n"
      "out = b''\n"
      "while True:\n"
      "    try:\n"
      "        chunk = os.read(fd, 65536)\n"
      "    except OSError:\n"
      "        break\n"
      "    if not chunk:\n"
      "        break\n"
      "    out += chunk\n"
      "_, status = os.waitpid(pid, 0)\n"
      "sys.stdout.buffer.write(out)\n"
      "sys.exit(os.waitstatus_to_exitcode(status))\n";
  std::vector<std::string> args = {"/usr/bin/python3", "-c", k_pty};
  args.insert(args.end(), argv.begin(), argv.end());
  return test_support::run_command(args, dir, {}, "pty", 60);
}

// On a terminal (a real pty), `tune report` in every format shows a stored choice's escape
// sequences instead of sending them, and so does `tune export`: the script writes such a value
// $'\xNN' (bash_quote), which bash reads back as the value's very bytes.
TEST_F(HostileTextE2E, ReportsAndScriptsSendNoControlByteToATerminal) {
  const auto study = write_study("env: {CHOICE: '{c}'}\n",
                                 "  c: [\"\\e]0;pwned\\a\", \"\\e[2J\"]\n"
                                 "enqueue:\n  - {x: 2, c: \"\\e]0;pwned\\a\"}\n");
  ASSERT_EQ(run_tune({"--trials", "1", "--quiet", study}).exit_code, 0);
  for (const std::string format : {"text", "markdown", "html", "json"}) {
    const auto o = on_a_terminal(m_dir, {TUNE_BIN, "report", study, "--format", format});
    EXPECT_EQ(o.exit_code, 0) << format << ": " << o.out;
    EXPECT_EQ(control_byte_in(o.out), "") << format;
  }
  const auto shown = on_a_terminal(m_dir, {TUNE_BIN, "export", study, "--format", "bash"});
  EXPECT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_EQ(control_byte_in(shown.out), "") << shown.out;
  const auto file = m_dir / "best.sh";
  ASSERT_EQ(run_tune({"export", study, "--format", "bash", "-o", file.string()}).exit_code, 0);
  const auto script = test_support::read_file(file);
  EXPECT_EQ(control_byte_in(script), "") << script;
  EXPECT_TRUE(script.contains("\nexport CHOICE=$'\\x1b]0;pwned\\x07'\n")) << script;
  // bash reads the value back byte for byte.
  const auto value = test_support::run_command(
      {"bash", "-c", "eval \"$(grep '^export CHOICE=' \"$1\")\"; printf %s \"$CHOICE\"", "x",
       file.string()},
      m_dir, {}, "value", 10);
  EXPECT_EQ(value.out, k_title);
}

// Python-Markdown passes raw HTML through: the report's HTML must hold no element and no comment
// that the study's text did not spell out as text, and the text must read as it is stored.
TEST_F(HostileTextE2E, MarkdownRendersNoMarkupFromTheStudy) {
  const auto db = hostile_db();
  const auto md = m_dir / "report.md";
  auto o = run_tune(
      {"report", db.string(), "--study", k_study, "--format", "markdown", "-o", md.string()});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(control_byte_in(test_support::read_file(md)), "");
  // Renders with the tables extension (GitHub's pipe tables), then lists every tag and comment
  // of the result and the text of each table cell.
  const std::string k_check = R"(import sys, markdown
from html.parser import HTMLParser
html = markdown.markdown(open(sys.argv[1], encoding='utf-8').read(), extensions=['tables'])
class P(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True); self.cell = None
    def handle_starttag(self, tag, attrs):
        print('TAG', tag)
        if tag in ('td', 'th'): self.cell = ''
    def handle_endtag(self, tag):
        if tag in ('td', 'th'): print('CELL', repr(self.cell)); self.cell = None
    def handle_comment(self, data): print('COMMENT', repr(data))
    def handle_data(self, data):
        if self.cell is not None: self.cell += data
        else: print('TEXT', repr(data))
P().feed(html)
)";
  // Debian's python3, which python3-markdown installs for.
  o = test_support::run_command({"/usr/bin/python3", "-c", k_check, md.string()}, m_dir, {},
                                "python3", 60);
  ASSERT_EQ(o.exit_code, 0) << o.err << "\n(python3-markdown: scripts/install-deps.sh test)";
  std::set<std::string> tags;
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("TAG ")) tags.insert(line.substr(4));
  const std::set<std::string> allowed = {"h1",    "h2", "p",  "ul", "li",     "table", "thead",
                                         "tbody", "tr", "th", "td", "strong", "code",  "em"};
  for (const auto& tag : tags) EXPECT_TRUE(allowed.contains(tag)) << "<" << tag << ">\n" << o.out;
  EXPECT_FALSE(tags.contains("script"));
  EXPECT_EQ(o.out.find("COMMENT"), std::string::npos) << o.out;
  // The cells read back as stored: the pipe did not split a cell, the stars made no emphasis,
  // the escape bytes are shown.
  EXPECT_NE(o.out.find("CELL '" + k_script + "|*'"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("CELL '" + k_comment + "'"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("CELL '\\\\x1b]0;pwned\\\\x07'"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("CELL '" + k_script + "\\\\x1b[2J" + k_comment + " | *boom*'"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("TEXT 'Study report: " + k_script + "\\\\x1b]0;pwned\\\\x07|*'"),
            std::string::npos)
      << o.out;
}

// A choice holding "<!--<script>" once switched Chromium's parser so that the embedded JSON
// swallowed the drawing scripts: no chart was drawn. Every chart must draw.
TEST_F(HostileTextE2E, HtmlReportDrawsEveryChartInChromium) {
  const auto chromium = on_path("chromium");
  ASSERT_FALSE(chromium.empty()) << "chromium is not installed (scripts/install-deps.sh test)";
  const auto db = hostile_db();
  const auto html = m_dir / "report.html";
  auto o = run_tune(
      {"report", db.string(), "--study", k_study, "--format", "html", "-o", html.string()});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = run_tune({"report", db.string(), "--study", k_study, "--format", "json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  const auto profile = m_dir / "chromium-profile";
  o = test_support::run_command(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
       "--user-data-dir=" + profile.string(), "--virtual-time-budget=5000", "--dump-dom",
       "file://" + html.string()},
      m_dir, {}, "chromium", 90);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  // History, parallel coordinates, timeline, one slice per parameter, importance when it ranks.
  const bool importance = !j["importance"].empty() && j["importance_verdict"] != "within";
  const std::size_t expected = 3 + j["params"].size() + (importance ? 1 : 0);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex("data-charts-rendered=\"(\\d+)\"")))
      << "the drawing script did not run; DOM:\n"
      << o.out.substr(0, 3000);
  EXPECT_EQ(std::stoul(m[1]), expected);
  // No element the study's text would have made.
  EXPECT_EQ(o.out.find("<script>alert"), std::string::npos);
  EXPECT_NE(o.out.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
}

}  // namespace
}  // namespace tune::tuner
