// Inputs and outputs as files (issue 24): `workdir:` and `files:` in the study file, staging them
// into a trial's working directory, and objectives/constraints read from files the job wrote.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/common/test_support.h"
#include "tuner/measure/objective.h"
#include "tuner/run/staging.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using test_support::read_file;
using test_support::write_file;

class FilesTest : public test_support::TempDirTest {
 protected:
  FilesTest() : TempDirTest("tune-files-") {}
  // Parses `yaml` as the study file s.yaml in the test's folder (sources are taken from there).
  Result<StudySpec> parse(const std::string& yaml) {
    return parse_study_spec(yaml, (m_dir / "s.yaml").string());
  }
  // The error for `yaml`, with the folder taken off so expectations read "s.yaml:LINE: ...".
  std::string error_of(const std::string& yaml) {
    auto spec = parse(yaml);
    EXPECT_FALSE(spec) << "expected an error for:\n" << yaml;
    if (spec) return "";
    std::string e = spec.error();
    const std::string dir = m_dir.string() + "/";
    for (auto at = e.find(dir); at != std::string::npos; at = e.find(dir)) e.erase(at, dir.size());
    return e;
  }
  std::string write(const std::string& name, const std::string& text) {
    return write_file(m_dir / name, text);
  }
};

const char* k_head = "name: x\ncommand: [p]\nparams:\n  x: {type: int, low: 1, high: 4}\n";

TEST_F(FilesTest, ParsesWorkdirAndEveryFormOfFiles) {
  write("input.dat", "data\n");
  write("HPL.dat.in", "NB {x}\nliteral {{braces}}\n");
  auto spec = parse(std::string(k_head) +
                    "workdir: study\n"
                    "files:\n"
                    "  - {copy: input.dat}\n"
                    "  - {link: input.dat, dest: sub/linked.dat}\n"
                    "  - {template: HPL.dat.in, dest: HPL.dat}\n"
                    "  - {src: input.dat, mode: link, dest: other.dat}\n");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->workdir, "{study_dir}");
  ASSERT_EQ(spec->files.size(), 4u);
  EXPECT_EQ(spec->files[0].mode, StagedFile::Mode::copy);
  EXPECT_EQ(spec->files[0].src, (m_dir / "input.dat").string());
  EXPECT_EQ(spec->files[0].dest, "input.dat");
  EXPECT_EQ(spec->files[1].mode, StagedFile::Mode::link);
  EXPECT_EQ(spec->files[1].dest, "sub/linked.dat");
  EXPECT_EQ(spec->files[2].mode, StagedFile::Mode::render);
  EXPECT_EQ(spec->files[2].text, "NB {x}\nliteral {{braces}}\n");
  EXPECT_EQ(spec->files[3].mode, StagedFile::Mode::link);
  EXPECT_EQ(parse(std::string(k_head))->workdir, "{trial_dir}");  // the default
  EXPECT_EQ(parse(std::string(k_head) + "workdir: trial\n")->workdir, "{trial_dir}");
  EXPECT_EQ(parse(std::string(k_head) + "workdir: 'run/{x}'\n")->workdir, "run/{x}");
}

TEST_F(FilesTest, BadFilesAreStudyFileErrorsWithLineAndKey) {
  write("input.dat", "data\n");
  write("t.in", "a {x}\nb {nb}\n");
  const std::string h = k_head;
  EXPECT_EQ(error_of(h + "files:\n  - {copy: missing.dat}\n"),
            "s.yaml:6: key 'files[0].copy': missing.dat does not exist (paths are taken from "
            "the study file's folder)");
  EXPECT_EQ(error_of(h + "files:\n  - {template: t.in, dest: t}\n"),
            "s.yaml:6: key 'files[0].template': t.in:2: placeholder '{nb}' names no parameter of "
            "'params' and no built-in (trial_dir, trial_number, study, study_dir, output_dir, "
            "tune_trainer, nproc)");
  EXPECT_EQ(error_of(h + "files:\n  - {copy: input.dat, link: input.dat}\n"),
            "s.yaml:6: key 'files[0].link': give one of copy, link, template or src, not both "
            "'copy' and 'link'");
  EXPECT_EQ(error_of(h + "files:\n  - {copy: input.dat, dest: ../up}\n"),
            "s.yaml:6: key 'files[0].dest': '../up' must be a path inside the working directory "
            "(relative, no '..')");
  EXPECT_EQ(error_of(h + "files:\n  - {src: input.dat, mode: move}\n"),
            "s.yaml:6: key 'files[0].mode': expected copy, link or template");
  EXPECT_EQ(error_of(h + "files:\n  - {dest: x}\n"),
            "s.yaml:6: key 'files[0]': needs one of copy, link, template or src (the file)");
  EXPECT_EQ(error_of(h + "files:\n  - {copy: input.dat, size: 3}\n"),
            "s.yaml:6: key 'files[0].size': unknown key (allowed: copy, dest, link, mode, src, "
            "template)");
  EXPECT_EQ(error_of(h + "files: input.dat\n"),
            "s.yaml:5: key 'files': expected a list such as [{copy: input.dat}, {template: "
            "HPL.dat.in, dest: HPL.dat}]");
  EXPECT_EQ(error_of(h + "workdir: '{nope}'\n"),
            "s.yaml:5: key 'workdir': placeholder '{nope}' names no parameter of 'params' and no "
            "built-in (trial_dir, trial_number, study, study_dir, output_dir, tune_trainer, "
            "nproc)");
}

TEST_F(FilesTest, ParsesObjectivesAndConstraintsFromFiles) {
  auto spec = parse(std::string(k_head) +
                    "directions: [maximize, minimize, minimize]\n"
                    "objective:\n"
                    "  - {file: result.json, json: 'runs[1].gflops'}\n"
                    "  - {file: 'out/{x}.csv', csv: {column: time, row: min}}\n"
                    "  - {file: log.txt, regex: 'T=([0-9.]+)'}\n"
                    "constraints:\n"
                    "  - {file: result.csv, csv: mem, max: 10}\n");
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_TRUE(spec->objectives[0].file);
  EXPECT_EQ(spec->objectives[0].file->json, "runs[1].gflops");
  EXPECT_EQ(spec->objectives[1].file->file, "out/{x}.csv");
  EXPECT_EQ(spec->objectives[1].file->csv, "time");
  EXPECT_EQ(spec->objectives[1].file->csv_row, "min");
  EXPECT_EQ(spec->objectives[2].file->regex, "T=([0-9.]+)");
  ASSERT_TRUE(spec->constraints[0].file);
  EXPECT_EQ(spec->constraints[0].file->csv, "mem");
  EXPECT_EQ(spec->constraints[0].file->csv_row, "last");
  EXPECT_EQ(objective_names(*spec),
            (std::vector<std::string>{"runs[1].gflops", "time", "objective 2"}));
}

TEST_F(FilesTest, BadFileObjectivesAreStudyFileErrors) {
  const std::string h = k_head;
  EXPECT_EQ(error_of(h + "objective: {file: r.json}\n"),
            "s.yaml:5: key 'objective.file': needs one of 'regex', 'json' or 'csv' to say what to "
            "read from the file");
  EXPECT_EQ(error_of(h + "objective: {file: r.json, json: a, csv: b}\n"),
            "s.yaml:5: key 'objective.csv': give one of 'regex', 'json' or 'csv' with 'file', not "
            "both 'json' and 'csv'");
  EXPECT_EQ(error_of(h + "objective: {json: a}\n"),
            "s.yaml:5: key 'objective.json': needs 'file' (the file the trial wrote to read it "
            "from)");
  EXPECT_EQ(error_of(h + "objective: {file: r.json, json: a, key: b}\n"),
            "s.yaml:5: key 'objective.key': makes no sense with 'file' (the value is read from "
            "that file, not from a log, a stream or the wall time); remove one of them");
  EXPECT_EQ(error_of(h + "objective: {file: r.json, json: 'a..b'}\n"),
            "s.yaml:5: key 'objective.json': 'a..b' is not a key path (an empty name); write e.g. "
            "a.b[0].c");
  EXPECT_EQ(error_of(h + "objective: {file: r.csv, csv: {column: t, row: middle}}\n"),
            "s.yaml:5: key 'objective.csv.row': expected last, first, max or min");
  EXPECT_EQ(error_of(h + "objective: {file: r.txt, regex: '(unclosed'}\n"),
            "s.yaml:5: key 'objective.regex': invalid regular expression (RE2 syntax): missing ): "
            "(unclosed");
  EXPECT_EQ(error_of(h + "objective: {file: '{y}.json', json: a}\n"),
            "s.yaml:5: key 'objective.file': placeholder '{y}' names no parameter of 'params' and "
            "no built-in (trial_dir, trial_number, study, study_dir, output_dir, tune_trainer, "
            "nproc)");
  EXPECT_EQ(error_of(h + "constraints:\n  - {key: a, file: r.json, json: a, max: 1}\n"),
            "s.yaml:6: key 'constraints[0].key': give either 'key' (a logged metric) or 'file' "
            "with regex/json/csv, not both");
}

TEST_F(FilesTest, StagesCopiesLinksAndRenderedTemplates) {
  write("input.dat", "data\n");
  write("t.in", "NB {x}\n{{kept}}\nOPT {opt}\nend\n");
  auto spec = parse(std::string(k_head) +
                    "  opt: [null, 1]\n"
                    "files:\n"
                    "  - {copy: input.dat}\n"
                    "  - {link: input.dat, dest: sub/l.dat}\n"
                    "  - {template: t.in, dest: t.out}\n");
  ASSERT_TRUE(spec) << spec.error();
  const fs::path wd = m_dir / "wd";
  fs::create_directories(wd);
  write("wd/input.dat", "stale\n");  // replaced, as a previous run's copy would be
  TemplateValues values{{"x", std::int64_t{3}}, {"opt", std::monostate{}}};
  auto staged = stage_files(spec->files, wd.string(), values);
  ASSERT_TRUE(staged) << staged.error();
  EXPECT_EQ(read_file(wd / "input.dat"), "data\n");
  EXPECT_FALSE(fs::is_symlink(wd / "input.dat"));
  EXPECT_TRUE(fs::is_symlink(wd / "sub/l.dat"));
  EXPECT_EQ(read_file(wd / "sub/l.dat"), "data\n");
  // A line that refers to a null value is left out, as an argv element would be.
  EXPECT_EQ(read_file(wd / "t.out"), "NB 3\n{kept}\nend\n");
  EXPECT_EQ(staged->dump(),
            nlohmann::json::array(
                {{{"dest", "input.dat"}, {"src", (m_dir / "input.dat").string()}, {"mode", "copy"}},
                 {{"dest", "sub/l.dat"}, {"src", (m_dir / "input.dat").string()}, {"mode", "link"}},
                 {{"dest", "t.out"}, {"src", (m_dir / "t.in").string()}, {"mode", "template"}}})
                .dump());
  // Staged onto itself (workdir: study): left alone, not truncated.
  auto self = stage_files({spec->files[0]}, m_dir.string(), values);
  ASSERT_TRUE(self) << self.error();
  EXPECT_EQ(read_file(m_dir / "input.dat"), "data\n");
}

TEST_F(FilesTest, AStagingFailureNamesThePathAndTheError) {
  write("input.dat", "data\n");
  auto spec = parse(std::string(k_head) + "files:\n  - {copy: input.dat, dest: in/x.dat}\n");
  ASSERT_TRUE(spec) << spec.error();
  fs::create_directories(m_dir / "wd");
  write("wd/in", "a file where a folder must go\n");
  auto staged = stage_files(spec->files, (m_dir / "wd").string(), {});
  ASSERT_FALSE(staged);
  EXPECT_NE(staged.error().find("staging files[0]: cannot create " + (m_dir / "wd/in").string()),
            std::string::npos)
      << staged.error();
  fs::remove(m_dir / "input.dat");  // gone since the study loaded
  auto gone = stage_files(spec->files, (m_dir / "wd2").string(), {});
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().find("copying " + (m_dir / "input.dat").string() + ": cannot read"),
            std::string::npos)
      << gone.error();
}

// Issue 37: only regular files and folders are staged; a FIFO, a symbolic link loop or one to
// nothing, or such a thing inside a copied folder, is refused as the study file loads.
TEST_F(FilesTest, AFifoALoopOrADanglingLinkIsAStudyFileError) {
  const std::string h = k_head;
  ASSERT_EQ(::mkfifo((m_dir / "pipe").c_str(), 0600), 0);
  EXPECT_EQ(error_of(h + "files:\n  - {copy: pipe}\n"),
            "s.yaml:6: key 'files[0].copy': pipe is a FIFO (named pipe): staging takes regular "
            "files and folders only");
  EXPECT_EQ(error_of(h + "files:\n  - {link: pipe}\n"),
            "s.yaml:6: key 'files[0].link': pipe is a FIFO (named pipe): staging takes regular "
            "files and folders only");
  fs::create_symlink("loop_b", m_dir / "loop_a");
  fs::create_symlink("loop_a", m_dir / "loop_b");
  EXPECT_EQ(error_of(h + "files:\n  - {copy: loop_a}\n"),
            "s.yaml:6: key 'files[0].copy': loop_a is a symbolic link loop (loop_a -> loop_b)");
  fs::create_symlink("nowhere", m_dir / "dangling");
  EXPECT_EQ(error_of(h + "files:\n  - {copy: dangling}\n"),
            "s.yaml:6: key 'files[0].copy': dangling is a symbolic link to nowhere, which does "
            "not exist");
  // Inside a copied folder: the FIFO by its path; a link back up as the loop it is.
  fs::create_directories(m_dir / "data/sub");
  write("data/sub/ok.txt", "ok\n");
  ASSERT_EQ(::mkfifo((m_dir / "data/sub/p").c_str(), 0600), 0);
  EXPECT_EQ(error_of(h + "files:\n  - {copy: data}\n"),
            "s.yaml:6: key 'files[0].copy': data/sub/p is a FIFO (named pipe): staging takes "
            "regular files and folders only");
  fs::remove(m_dir / "data/sub/p");
  fs::create_directory_symlink("..", m_dir / "data/sub/up");
  EXPECT_EQ(error_of(h + "files:\n  - {copy: data}\n"),
            "s.yaml:6: key 'files[0].copy': data/sub/up is a symbolic link loop (it leads back to "
            "a folder above it)");
  // Linked, a folder is not walked: the job sees it as it is.
  EXPECT_TRUE(parse(h + "files:\n  - {link: data}\n")) << "a linked folder is not copied";
}

// Issue 37: a sparse file stays sparse in the trial's folder (st_blocks), with the same bytes.
TEST_F(FilesTest, ASparseFileIsStagedSparse) {
  constexpr off_t k_size = off_t{256} << 20;  // 256 MiB, of which 4 KiB is data
  constexpr off_t k_data_at = off_t{64} << 20;
  const auto src = m_dir / "sparse.bin";
  {
    const int fd = ::open(src.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0640);
    ASSERT_GE(fd, 0);
    const std::string data(4096, 'x');
    ASSERT_EQ(::pwrite(fd, data.data(), data.size(), k_data_at), 4096);
    ASSERT_EQ(::ftruncate(fd, k_size), 0);
    ::close(fd);
  }
  struct stat before {};
  ASSERT_EQ(::stat(src.c_str(), &before), 0);
  ASSERT_LT(before.st_blocks * 512, off_t{1} << 20) << "the test's own file is not sparse here";
  auto spec = parse(std::string(k_head) + "files:\n  - {copy: sparse.bin}\n");
  ASSERT_TRUE(spec) << spec.error();
  fs::create_directories(m_dir / "wd");
  auto staged = stage_files(spec->files, (m_dir / "wd").string(), {});
  ASSERT_TRUE(staged) << staged.error();
  struct stat after {};
  ASSERT_EQ(::stat((m_dir / "wd/sparse.bin").c_str(), &after), 0);
  EXPECT_EQ(after.st_size, k_size);
  EXPECT_LT(after.st_blocks * 512, off_t{1} << 20) << "copied at full size: " << after.st_blocks;
  EXPECT_EQ(after.st_mode & 07777, 0640u);
  const int fd = ::open((m_dir / "wd/sparse.bin").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string back(4097, '\0');
  ASSERT_EQ(::pread(fd, back.data(), back.size(), k_data_at - 1), 4097);
  ::close(fd);
  EXPECT_EQ(back, '\0' + std::string(4096, 'x'));
}

// Issue 37: a parameter's value never moves the trial's working folder out of where the study
// file puts it: a '../' or absolute choice is refused at load, and whatever gets past (two
// values that make '..' together) fails the trial when the template is expanded.
TEST_F(FilesTest, AValueCannotMoveTheWorkdirOutside) {
  const std::string h = "name: x\ncommand: [p]\nparams:\n  d: [a, '../escape']\n";
  EXPECT_EQ(error_of(h + "workdir: 'runs/{d}'\n"),
            "s.yaml:5: key 'workdir': params.d's choice '../escape' holds a '..' part (it climbs "
            "out of the folder): a parameter's value may name a folder inside the one "
            "'runs/{d}' writes, never move the trial out of it (write such a path in 'workdir:' "
            "itself)");
  EXPECT_NE(error_of("name: x\ncommand: [p]\nparams:\n  d: [a, /tmp]\nworkdir: '{d}'\n")
                .find("params.d's choice '/tmp' begins with '/' (an absolute path)"),
            std::string::npos);
  // The study file may write a folder above, or an absolute one, itself; a value may go down.
  EXPECT_TRUE(parse("name: x\ncommand: [p]\nparams:\n  d: [a, b/c]\nworkdir: '../{d}'\n"));
  const std::string dir = m_dir.string();
  const auto in = expand_path_template("../runs/{d}", {{"d", std::string("b/c")}}, dir);
  ASSERT_TRUE(in) << in.error();
  EXPECT_EQ(**in, (m_dir.parent_path() / "runs/b/c").string());
  const auto abs = expand_path_template("/scratch/{d}", {{"d", std::string("a")}}, dir);
  ASSERT_TRUE(abs) << abs.error();
  EXPECT_EQ(**abs, "/scratch/a");
  // Two values that are harmless alone climb together: refused as the trial expands it.
  const auto two =
      expand_path_template("runs/{a}{b}", {{"a", std::string(".")}, {"b", std::string(".")}}, dir);
  ASSERT_FALSE(two);
  EXPECT_EQ(two.error(), "'runs/{a}{b}' became " + dir + ", outside " + dir +
                             "/runs: a parameter's value may name a folder inside it, never "
                             "climb out ('..') or replace it (an absolute path)");
  // After a '/', an absolute value is a folder inside; alone, it would replace the folder.
  const auto below = expand_path_template(
      "{trial_dir}/{d}", {{"trial_dir", dir + "/t/0"}, {"d", std::string("/etc")}}, dir);
  ASSERT_TRUE(below) << below.error();
  EXPECT_EQ(**below, dir + "/t/0/etc");
  EXPECT_FALSE(expand_path_template("{d}", {{"d", std::string("/etc")}}, dir));
}

TEST_F(FilesTest, ReadsJsonCsvAndRegexMetrics) {
  write("r.json", R"({"runs": [{"gflops": 1.5}, {"gflops": 2.5, "bad": "x"}], "nan": NaN})");
  write("r.csv", "step, gflops ,mem\n1,10.5,3\n2,30,1\n3,\"20\",2\n");
  write("out.txt", "T=1.0\nT=2.0\nother\n");
  FileMetric m;
  m.file = "r.json";
  m.json = "runs[1].gflops";
  EXPECT_EQ(read_file_metric(m, m_dir.string(), {}).value(), 2.5);
  m.file = "r.csv";
  m.json.clear();
  m.csv = "gflops";
  EXPECT_EQ(read_file_metric(m, m_dir.string(), {}).value(), 20);
  m.csv_row = "first";
  EXPECT_EQ(read_file_metric(m, m_dir.string(), {}).value(), 10.5);
  m.csv_row = "max";
  EXPECT_EQ(read_file_metric(m, m_dir.string(), {}).value(), 30);
  m.csv_row = "min";
  EXPECT_EQ(read_file_metric(m, m_dir.string(), {}).value(), 10.5);
  m = FileMetric{};
  m.file = "{name}.txt";  // a template, relative to the working directory
  m.regex = "T=([0-9.]+)";
  EXPECT_EQ(read_file_metric(m, m_dir.string(), {{"name", std::string("out")}}).value(), 2.0);
  m.file = (m_dir / "out.txt").string();  // or absolute
  EXPECT_EQ(read_file_metric(m, "/elsewhere", {}).value(), 2.0);
}

TEST_F(FilesTest, MissingFilesKeysColumnsAndMatchesAreNamed) {
  write("r.json", R"({"runs": [{"gflops": 1.5}], "s": "x", "nan": NaN})");
  write("r.csv", "a,b\n1,x\n");
  write("out.txt", "nothing here\n");
  const auto dir = m_dir.string();
  const auto err = [&](FileMetric m) {
    auto r = read_file_metric(m, dir, {});
    EXPECT_FALSE(r);
    return r ? std::string() : r.error();
  };
  FileMetric json;
  json.file = "r.json";
  json.json = "runs[2].gflops";
  EXPECT_EQ(err(json), "file " + dir + "/r.json has no 'runs[2]' (json: runs[2].gflops)");
  json.json = "s";
  EXPECT_EQ(err(json), "file " + dir + "/r.json: 's' is not a number (\"x\")");
  json.json = "nan";
  EXPECT_EQ(err(json), "file " + dir + "/r.json: 'nan' is not finite (NaN)");
  json.file = "none.json";
  EXPECT_EQ(err(json), "file " + dir + "/none.json was not written (looked for json 'nan')");
  FileMetric csv;
  csv.file = "r.csv";
  csv.csv = "c";
  EXPECT_EQ(err(csv), "file " + dir + "/r.csv has no column 'c' (its header: a,b)");
  csv.csv = "b";
  EXPECT_EQ(err(csv),
            "file " + dir + "/r.csv row 2 column 'b' holds 'x', which is not a finite number");
  FileMetric re;
  re.file = "out.txt";
  re.regex = "T=([0-9.]+)";
  EXPECT_EQ(err(re), "regex 'T=([0-9.]+)' matched nothing in file " + dir + "/out.txt");
}

TEST_F(FilesTest, ObjectivesAndConstraintsReadFilesWithoutALog) {
  write("r.json", R"({"gflops": 12.5, "mem": 3})");
  ObjectiveSpec o;
  o.file = FileMetric{.file = "r.json", .regex = "", .json = "gflops", .csv = ""};
  ConstraintSpec c;
  c.file = FileMetric{.file = "r.json", .regex = "", .json = "mem", .csv = ""};
  c.max = 2;
  // No log exists: nothing here needs one.
  auto r = read_objective(o, {c}, (m_dir / "log").string(), "", "", 1.0, m_dir.string(), {});
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->value, 12.5);
  EXPECT_EQ(r->constraints, std::vector<double>{1.0});
}

}  // namespace
}  // namespace tune::tuner
