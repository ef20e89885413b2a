// `tune init` reads a figure whole, whatever its separators: `12,345.6 samples/s` (Python's
// `{:,}`) is 12345.6 and `1,75 s` 1.75, the regex it writes reads them so (with `number:`), and a
// figure no one style reads is not offered rather than offered as a part of it.
#include <gtest/gtest.h>

#include <filesystem>

#include "probes/knob_catalog.h"
#include "tests/common/test_support.h"
#include "tuner/init/init_probe.h"
#include "tuner/init/init_study.h"
#include "tuner/measure/objective.h"
#include "tuner/study/patterns.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

const ResultLine* find(const std::vector<ResultLine>& lines, const std::string& name) {
  for (const auto& r : lines)
    if (r.name == name) return &r;
  return nullptr;
}

// `text` with its comments' line breaks undone: "a\n  #   b" -> "a b".
std::string flat(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      std::size_t j = text.find_first_not_of(' ', i + 1);
      if (j != std::string::npos && text[j] == '#') {
        out += ' ';
        i = text.find_first_not_of(' ', j + 1) - 1;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// The number `r`'s regex reads out of `line`, in `r`'s style.
double read_back(const ResultLine& r, const std::string& line) {
  const auto got = regex_first_group(r.regex, line);
  EXPECT_TRUE(got) << r.regex << " on " << line;
  if (!got) return -1;
  auto v = parse_number_text(*got, r.number);
  EXPECT_TRUE(v) << v.error();
  return v ? *v : -1;
}

TEST(InitNumbers, GroupedThousandsAreReadWhole) {
  const std::string line = "throughput: 12,345.6 samples/s";
  const auto lines =
      find_result_lines("epoch 1\nthroughput: 9,876.5 samples/s\n" + line + "\n", "stdout");
  const ResultLine* r = find(lines, "throughput");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->value, 12345.6);
  EXPECT_EQ(r->number, NumberStyle::grouped);
  EXPECT_EQ(r->number_why, "it printed \"12,345.6\"");
  EXPECT_EQ(read_back(*r, line), 12345.6);
  EXPECT_EQ(read_back(*r, "throughput: 1,234,567 samples/s"), 1234567.0);
  EXPECT_EQ(read_back(*r, "throughput: 999.5 samples/s"), 999.5);
  // The unit's own reading ("N samples/s") of the same number is no second, cut figure.
  EXPECT_EQ(find(lines, "samples/s"), nullptr);
  // A figure named only by its unit, with groups and no decimal point.
  const auto by_unit = find_result_lines("processed 1,234,567 items/s\n", "stdout");
  ASSERT_EQ(by_unit.size(), 1u);
  EXPECT_EQ(by_unit[0].name, "items/s");
  EXPECT_EQ(by_unit[0].value, 1234567.0);
  EXPECT_EQ(read_back(by_unit[0], "processed 1,234,567 items/s"), 1234567.0);
}

TEST(InitNumbers, ADecimalCommaIsReadAsOne) {
  const auto lines = find_result_lines("time: 1,75 s\n", "stdout");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].name, "time");
  EXPECT_EQ(lines[0].value, 1.75);
  EXPECT_EQ(lines[0].number, NumberStyle::decimal_comma);
  EXPECT_FALSE(lines[0].maximize);
  EXPECT_EQ(read_back(lines[0], "time: 1,75 s"), 1.75);
  EXPECT_EQ(read_back(lines[0], "time: 12 s"), 12.0);
}

TEST(InitNumbers, AnAmbiguousCommaFollowsTheRestOfTheOutput) {
  // "1,234" is 1234 or 1.234: a '.' decimal point elsewhere makes its ',' a group.
  const auto point = find_result_lines("loss: 0.25\nrate: 1,234 samples/s\n", "stdout");
  ASSERT_EQ(point.size(), 1u);
  EXPECT_EQ(point[0].value, 1234.0);
  EXPECT_EQ(point[0].number, NumberStyle::grouped);
  EXPECT_TRUE(point[0].number_why.contains("decimal point is '.' (\"0.25\")"))
      << point[0].number_why;
  // A decimal comma elsewhere makes it one.
  const auto comma = find_result_lines("loss: 0,25\nrate: 1,234 samples/s\n", "stdout");
  ASSERT_EQ(comma.size(), 1u);
  EXPECT_EQ(comma[0].value, 1.234);
  EXPECT_EQ(comma[0].number, NumberStyle::decimal_comma);
  // A figure seen once grouped and once with a decimal comma has no one reading: not offered.
  EXPECT_TRUE(
      find_result_lines("rate: 12,345.6 samples/s\nrate: 1,75 samples/s\n", "stdout").empty());
  // Nor a run of numbers that is no number.
  EXPECT_TRUE(find_result_lines("rate: 1.2.3 samples/s\n", "stdout").empty());
  // Plain numbers keep their plain regex (no `number:`).
  const auto plain = find_result_lines("samples/s: 1234.5\n", "stdout");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].number, NumberStyle::plain);
}

// The study init writes reads the figure whole: its comment says 12345.6, its objective has
// `number: grouped`, and reading the probe's line through it gives 12345.6.
TEST(InitNumbers, TheStudyWrittenReadsTheFigureWhole) {
  const auto dir = test_support::fresh_test_dir("tune-init-numbers-");
  ProbeFindings p;
  p.ran = true;
  p.exit_code = 0;
  p.seconds = 0.2;
  p.ranks = 1;
  p.results = find_result_lines("throughput: 12,345.6 samples/s\n", "stdout");
  InitRequest r;
  r.command = {"/bin/sh", "job.sh"};
  r.source_dir = dir.string();
  r.study_dir = dir.string();
  r.file_exists = [](const std::string&) { return false; };
  auto command = split_init_command(r.command);
  ASSERT_TRUE(command);
  ProgramInfo program = inspect_program(command->program, &p);
  auto topo = probes::read_synthetic_topology("pack:1 core:2 pu:1");
  auto text = render_init_study(r, *command, program, *topo, probes::knob_catalog());
  ASSERT_TRUE(text) << text.error();
  EXPECT_TRUE(flat(*text).contains("stdout gave throughput 12345.6 samples/s")) << *text;
  EXPECT_TRUE(
      flat(*text).contains("number: grouped reads the figure whole, its thousands "
                           "grouped by ',' (it printed \"12,345.6\")"))
      << *text;
  EXPECT_TRUE(text->contains("  number: grouped\n")) << *text;
  auto spec = parse_study_spec(*text, (dir / "init.yaml").string());
  ASSERT_TRUE(spec) << spec.error() << "\n" << *text;
  ASSERT_TRUE(spec->objective.use_regex) << *text;
  EXPECT_EQ(spec->objective.number, NumberStyle::grouped);
  const auto out = test_support::write_file(dir / "stdout", "throughput: 12,345.6 samples/s\n");
  auto v = read_objective(spec->objective, {}, "", out, "");
  ASSERT_TRUE(v) << v.error();
  EXPECT_EQ(v->value, 12345.6);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tune::tuner
