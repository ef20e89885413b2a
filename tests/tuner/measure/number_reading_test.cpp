// A stored value is what the job printed, or the trial fails: numbers with grouped thousands or
// a decimal comma read whole through `number:`, a match that holds part of a number is a failure
// naming the text, and a result file the job deleted is told from one it never wrote.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/test_support.h"
#include "tuner/base/number_text.h"
#include "tuner/measure/file_watch.h"
#include "tuner/measure/objective.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

TEST(NumberText, EachStyleReadsItsOwnSpellingWholeAndRefusesTheOthers) {
  EXPECT_EQ(*parse_number_text("12345.6", NumberStyle::plain), 12345.6);
  EXPECT_EQ(*parse_number_text("1e-3", NumberStyle::plain), 1e-3);
  EXPECT_EQ(*parse_number_text("12,345.6", NumberStyle::grouped), 12345.6);
  EXPECT_EQ(*parse_number_text("1,234,567", NumberStyle::grouped), 1234567.0);
  EXPECT_EQ(*parse_number_text("-1,234.5e2", NumberStyle::grouped), -123450.0);
  EXPECT_EQ(*parse_number_text("999.5", NumberStyle::grouped), 999.5);
  EXPECT_EQ(*parse_number_text("1,75", NumberStyle::decimal_comma), 1.75);
  EXPECT_EQ(*parse_number_text("12345,5", NumberStyle::decimal_comma), 12345.5);
  EXPECT_EQ(*parse_number_text("42", NumberStyle::decimal_comma), 42.0);
  for (const char* bad : {"12,34", "1,2345", "12,,345", ",345", "12,345.", "1.2.3", "12 345", ""})
    EXPECT_FALSE(parse_number_text(bad, NumberStyle::grouped)) << bad;
  for (const char* bad : {"1,234.5", "1.75", "1,", ",5", "1,2,3", ""})
    EXPECT_FALSE(parse_number_text(bad, NumberStyle::decimal_comma)) << bad;
  const auto plain = parse_number_text("12,345.6", NumberStyle::plain);
  ASSERT_FALSE(plain);
  EXPECT_TRUE(plain.error().contains("number: grouped")) << plain.error();
  EXPECT_EQ(number_style_named("decimal_comma"), NumberStyle::decimal_comma);
  EXPECT_FALSE(number_style_named("comma"));
}

TEST(NumberText, AMatchTouchedByMoreOfTheNumberIsCut) {
  const std::string line = "throughput: 12,345.6 samples/s";
  const auto at = line.find("12");
  EXPECT_EQ(number_cut_by(line, at, at + 2), "12,345.6");           // "12"
  EXPECT_EQ(number_cut_by(line, at + 3, at + 8), "12,345.6");       // "345.6"
  EXPECT_EQ(number_cut_by(line, at, at + 6), "12,345.6");           // "12,345"
  EXPECT_EQ(number_cut_by(line, at, at + 8), std::nullopt);         // all of it
  EXPECT_EQ(number_cut_by("t=1.5e-3 s", 2, 5), "1.5e-3");           // the exponent
  EXPECT_EQ(number_cut_by("12345 x", 2, 5), "12345");               // digits before
  EXPECT_EQ(number_cut_by("step 12, loss 3", 5, 7), std::nullopt);  // a ',' then a blank
  EXPECT_EQ(number_cut_by("done in 12.", 8, 10), std::nullopt);     // a sentence's '.'
  EXPECT_EQ(number_token_at("rate: 1,234,567/s", 6), "1,234,567");
  EXPECT_EQ(number_token_at("x: -0.5, y", 3), "-0.5");
  EXPECT_EQ(number_token_at("x: abc", 3), "");
}

class NumberReadingTest : public test_support::TempDirTest {
 protected:
  NumberReadingTest() : TempDirTest("tune-number-reading-") {}
  std::string write(const std::string& name, const std::string& text) {
    return test_support::write_file(m_dir / name, text);
  }
  Result<ObjectiveReading> read_stream(const std::string& regex, NumberStyle number,
                                       const std::string& out) {
    ObjectiveSpec spec;
    spec.use_regex = true;
    spec.regex = regex;
    spec.number = number;
    return read_objective(spec, {}, "", write("stdout", out), "");
  }
};

TEST_F(NumberReadingTest, GroupedThousandsAndDecimalCommasReadWhole) {
  const std::string grouped_re = "throughput: ([0-9,]+(?:\\.[0-9]+)?)";
  auto g = read_stream(grouped_re, NumberStyle::grouped, "throughput: 12,345.6 samples/s\n");
  ASSERT_TRUE(g) << g.error();
  EXPECT_EQ(g->value, 12345.6);
  auto d = read_stream("time: ([0-9,]+) s", NumberStyle::decimal_comma, "time: 1,75 s\n");
  ASSERT_TRUE(d) << d.error();
  EXPECT_EQ(d->value, 1.75);
  // The style says what a ',' is: the same text in the wrong one is no number.
  auto wrong = read_stream("time: ([0-9,]+) s", NumberStyle::grouped, "time: 1,75 s\n");
  ASSERT_FALSE(wrong);
  EXPECT_TRUE(wrong.error().contains("'1,75', which is not a number with thousands grouped"))
      << wrong.error();
}

TEST_F(NumberReadingTest, AMatchOfPartOfANumberFailsNamingTheText) {
  for (const char* regex : {"throughput: ([0-9]+)", "([0-9.]+) samples/s"}) {
    auto r = read_stream(regex, NumberStyle::plain, "warm-up\nthroughput: 12,345.6 samples/s\n");
    ASSERT_FALSE(r) << regex << " read " << r->value;
    EXPECT_TRUE(
        r.error().contains("only part of the number '12,345.6' in 'throughput: 12,345.6 "
                           "samples/s'"))
        << r.error();
    EXPECT_TRUE(r.error().starts_with("objective regex matched '")) << r.error();
  }
  // Control bytes around the number are shown, not passed on.
  auto ctl = read_stream("x=([0-9]+)", NumberStyle::plain, "\x1b[2Jx=1,5\n");
  ASSERT_FALSE(ctl);
  EXPECT_TRUE(ctl.error().contains("\\x1b[2Jx=1,5")) << ctl.error();
  // The whole number, and one followed by a sentence's ',' or '.', still read.
  auto ok = read_stream("step ([0-9]+)", NumberStyle::plain, "step 12, done.\nstep 13.\n");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->value, 13);
}

TEST_F(NumberReadingTest, FileRegexAndCsvCellsReadTheStyleAndCatchASplitNumber) {
  write("r.txt", "rate: 1,234,567 items/s\n");
  FileMetric m;
  m.file = "r.txt";
  m.regex = "rate: ([0-9]+)";
  auto cut = read_file_metric(m, m_dir.string(), {});
  ASSERT_FALSE(cut);
  EXPECT_TRUE(cut.error().contains("matched '1', only part of the number '1,234,567'"))
      << cut.error();
  m.regex = "rate: ([0-9,]+)";
  m.number = NumberStyle::grouped;
  auto whole = read_file_metric(m, m_dir.string(), {});
  ASSERT_TRUE(whole) << whole.error();
  EXPECT_EQ(*whole, 1234567.0);

  write("r.csv", "step,rate\n1,\"12,345.6\"\n");
  FileMetric c;
  c.file = "r.csv";
  c.csv = "rate";
  c.number = NumberStyle::grouped;
  auto cell = read_file_metric(c, m_dir.string(), {});
  ASSERT_TRUE(cell) << cell.error();
  EXPECT_EQ(*cell, 12345.6);
  // Unquoted, the number splits the row: its first part is no value of the column.
  write("r.csv", "step,rate\n1,12,345.6\n");
  auto split = read_file_metric(c, m_dir.string(), {});
  ASSERT_FALSE(split) << *split;
  EXPECT_TRUE(split.error().contains("row 2 has 3 fields where its header names 2 ('1,12,345.6')"))
      << split.error();
}

TEST_F(NumberReadingTest, AFileGoneAtTheEndIsDeletedWhenItWasSeenAndNotWrittenWhenNever) {
  ObjectiveSpec spec;
  spec.file = FileMetric{};
  spec.file->file = "result.txt";
  spec.file->regex = "v=([0-9]+)";
  const std::string path = (m_dir / "result.txt").string();

  // Written, seen by a look, then removed before the trial ended.
  TrialFileWatch seen({spec}, {}, m_dir.string(), {});
  write("result.txt", "v=7\n");
  seen.look(1.5);
  fs::remove(path);
  seen.look(2.0);
  auto deleted = read_file_metric(*spec.file, m_dir.string(), {}, &seen);
  ASSERT_FALSE(deleted);
  EXPECT_EQ(deleted.error(),
            "file " + path +
                " was deleted during the trial: seen 1.5 s after launch (4 bytes), gone at its end "
                "(looked for regex 'v=([0-9]+)')");

  // There at launch, removed before any look.
  write("result.txt", "v=8\n");
  TrialFileWatch at_launch({spec}, {}, m_dir.string(), {});
  fs::remove(path);
  at_launch.look(0.5);
  auto gone = read_file_metric(*spec.file, m_dir.string(), {}, &at_launch);
  ASSERT_FALSE(gone);
  EXPECT_TRUE(gone.error().contains("was deleted during the trial: there at launch (4 bytes)"))
      << gone.error();

  // Never there: not written, and how it was looked for.
  TrialFileWatch never({spec}, {}, m_dir.string(), {});
  never.look(0.5);
  never.look(1.0);
  auto missing = read_objective(spec, {}, "", "", "", 0, m_dir.string(), {}, std::nullopt, &never);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), "file " + path +
                                 " was not written (looked for regex 'v=([0-9]+)'; not there at "
                                 "launch nor at any of 2 looks while the trial ran)");
}

TEST(NumberStudyFile, NumberLoadsWithARegexOrCsvAndIsCheckedWithItsLine) {
  const std::string head = "name: x\ncommand: [p]\n";
  auto ok =
      parse_study_spec(head + "objective: {regex: 'r: ([0-9,.]+)', number: grouped}\n", "s.yaml");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->objective.number, NumberStyle::grouped);
  auto file = parse_study_spec(
      head + "objective: {file: r.csv, csv: rate, number: decimal_comma}\n", "s.yaml");
  ASSERT_TRUE(file) << file.error();
  EXPECT_EQ(file->objective.file->number, NumberStyle::decimal_comma);
  const std::pair<const char*, const char*> cases[] = {
      {"objective: {regex: 'r: ([0-9,.]+)', number: commas}\n",
       "s.yaml:3: key 'objective.number': 'commas' is not a number style: expected plain "
       "(12345.6), grouped (12,345.6) or decimal_comma (1,75)"},
      {"objective: {key: rate, number: grouped}\n",
       "s.yaml:3: key 'objective.number': says how a regex's match writes its number"},
      {"objective: {file: r.json, json: a.b, number: grouped}\n",
       "s.yaml:3: key 'objective.number': makes no sense with 'json'"},
      {"objective: {window: {regex: 'step ([0-9]+)'}, number: grouped}\n",
       "s.yaml:3: key 'objective.number': makes no sense next to 'window'"},
      {"constraints: [{key: mem, max: 3, number: grouped}]\n",
       "s.yaml:3: key 'constraints[0].number': is for a number read from text"},
  };
  for (const auto& [yaml, error] : cases) {
    const auto r = parse_study_spec(head + yaml, "s.yaml");
    ASSERT_FALSE(r) << yaml;
    EXPECT_TRUE(r.error().starts_with(error)) << yaml << " -> " << r.error();
  }
}

}  // namespace
}  // namespace tune::tuner
