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
#include "tuner/measure/progress.h"
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

// The study `tune init` writes for `sh job.sh` in `dir` from the probe's findings `p`, on a
// 2-core machine.
Result<std::string> render_for(const ProbeFindings& p, const std::filesystem::path& dir) {
  InitRequest r;
  r.command = {"/bin/sh", "job.sh"};
  r.source_dir = dir.string();
  r.study_dir = dir.string();
  r.file_exists = [](const std::string&) { return false; };
  auto command = split_init_command(r.command);
  if (!command) return std::unexpected(command.error());
  ProgramInfo program = inspect_program(command->program, &p);
  auto topo = probes::read_synthetic_topology("pack:1 core:2 pu:1");
  return render_init_study(r, *command, program, *topo, probes::knob_catalog());
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
  const auto text = render_for(p, dir);
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

// --- progress lines (a window objective) -----------------------------------------------------

// `n` as Python's {:,} writes it: 1234567 -> "1,234,567".
std::string grouped(long long n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::vector<TimedLine> progress_lines(const std::vector<std::string>& texts, double dt) {
  std::vector<TimedLine> out;
  for (std::size_t i = 0; i < texts.size(); ++i)
    out.push_back({1.0 + dt * static_cast<double>(i), "stdout", texts[i]});
  return out;
}

// A counter printed with its thousands grouped is one counter, whatever its width ("999" then
// "1,050,000": one shape), read whole by the regex offered, with `number: grouped`.
TEST(InitNumbers, AGroupedProgressCounterIsReadWhole) {
  std::vector<std::string> texts;
  for (int i = 1; i <= 20; ++i)
    texts.push_back("seen: " + grouped(150000LL * i - 149200) + " images, loss 0.5");
  const auto found = find_progress_lines(progress_lines(texts, 0.5));
  ASSERT_FALSE(found.empty());
  const auto& p = found.front();
  EXPECT_EQ(p.measure, WindowMeasure::counter);
  EXPECT_EQ(p.name, "seen");
  EXPECT_EQ(p.number, NumberStyle::grouped);
  EXPECT_EQ(p.number_why, "it printed \"2,850,800\"");
  EXPECT_EQ(p.last_value, 2850800.0);
  EXPECT_NEAR(p.rate, 300000, 1);  // 150,000 images every 0.5 s
  for (const std::string line :
       {"seen: 800 images, loss 0.5", "seen: 1,234,567 images, loss 0.5"}) {
    const auto got = regex_first_group(p.regex, line);
    ASSERT_TRUE(got) << p.regex;
    EXPECT_EQ(number_cut_by(line, line.find(*got), line.find(*got) + got->size()), std::nullopt)
        << p.regex << " read '" << *got << "' of " << line;
  }
  EXPECT_EQ(parse_number_text(*regex_first_group(p.regex, texts.back()), p.number), 2850800.0);
  // Plain counters keep their plain regex.
  std::vector<std::string> plain;
  for (int i = 1; i <= 20; ++i) plain.push_back("step " + std::to_string(i * 700));
  const auto steps = find_progress_lines(progress_lines(plain, 0.5));
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.front().number, NumberStyle::plain);
  EXPECT_EQ(steps.front().regex, "\\bstep\\s*([0-9]+)");
}

// A rate with a decimal comma is one rate; a number that digits or a separator touch
// ("1.2" of "build 1.2.7") is offered as no number: its window would refuse every line.
TEST(InitNumbers, ProgressNumbersAreNeverOfferedInPart) {
  std::vector<std::string> rates;
  for (int i = 1; i <= 12; ++i)
    rates.push_back("throughput: " + std::to_string(40 + i % 3) + ",5 img/s");
  const auto found = find_progress_lines(progress_lines(rates, 0.5));
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().measure, WindowMeasure::rate);
  EXPECT_EQ(found.front().number, NumberStyle::decimal_comma);
  EXPECT_NEAR(found.front().rate, 41.5, 1e-9);
  EXPECT_EQ(regex_first_group(found.front().regex, "throughput: 41,5 img/s"), "41,5");

  std::vector<std::string> builds;
  for (int i = 1; i <= 12; ++i) builds.push_back("build 1.2." + std::to_string(i));
  const auto b = find_progress_lines(progress_lines(builds, 0.5));
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b.front().measure, WindowMeasure::lines) << b.front().regex;
}

// The study init writes measures the grouped counter whole: `number: grouped` in its window,
// and the progress reader over the probe's lines gives the whole counts.
TEST(InitNumbers, TheWindowWrittenReadsGroupedProgressWhole) {
  const auto dir = test_support::fresh_test_dir("tune-init-window-numbers-");
  ProbeFindings p;
  p.ran = true;
  p.bounded = true;
  p.seconds = 10;
  p.ranks = 1;
  std::vector<std::string> texts;
  for (int i = 1; i <= 40; ++i) texts.push_back("samples " + grouped(1000LL * i) + " loss 0.5");
  p.progress = find_progress_lines(progress_lines(texts, 0.15));
  ASSERT_FALSE(p.progress.empty());
  const auto text = render_for(p, dir);
  ASSERT_TRUE(text) << text.error();
  auto spec = parse_study_spec(*text, (dir / "init.yaml").string());
  ASSERT_TRUE(spec) << spec.error() << "\n" << *text;
  ASSERT_TRUE(spec->objective.window) << *text;
  const auto& w = *spec->objective.window;
  EXPECT_EQ(w.number, NumberStyle::grouped) << *text;
  EXPECT_TRUE(text->contains("    number: grouped\n")) << *text;
  EXPECT_TRUE(
      flat(*text).contains("number: grouped reads the progress number whole, its "
                           "thousands grouped by ','"))
      << *text;
  ProgressReader reader(w, (dir / "out").string());
  test_support::write_file(dir / "out", texts[20] + "\n" + texts[21] + "\n");
  const auto points = reader.poll(1);
  ASSERT_EQ(points.size(), 2u) << w.regex << "; " << reader.partial_number();
  EXPECT_EQ(reader.counts().refused, 0u);
  EXPECT_EQ(points[0].value, 21000);
  EXPECT_EQ(points[1].value, 22000);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tune::tuner
