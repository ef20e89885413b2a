// `cmake --install` and `cpack` end to end: tune installed into a temporary prefix, the prefix
// moved elsewhere (a shared prefix is mounted wherever the cluster mounts it), the build tree's
// binaries off PATH, and then a short study, an HTML report and an export run from the installed
// copy alone; the .deb's dependencies are runtime packages only.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cluster/run_command.h"

namespace tune::test_support {
namespace {

namespace fs = std::filesystem;

// No build folder in it: a binary found through PATH would be the system's, never the build's.
const std::map<std::string, std::string> k_clean_path = {
    {"PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"}};

class InstallE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_dir = fs::temp_directory_path() / ("tune-install-e2e-" + std::to_string(getpid()));
    fs::remove_all(s_dir);
    fs::create_directories(s_dir / "work");
    s_install = run(s_dir, {CMAKE_COMMAND, "--install", TUNE_BUILD_DIR, "--prefix",
                            (s_dir / "staged").string()});
    if (s_install.exit_code != 0) return;
    // Moved after installing: nothing may point at the path it was installed to.
    fs::rename(s_dir / "staged", s_dir / "prefix");
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(s_dir);
  }
  void SetUp() override {
    ASSERT_EQ(s_install.exit_code, 0) << "cmake --install failed:\n"
                                      << s_install.out << s_install.err;
  }

  static fs::path prefix() { return s_dir / "prefix"; }
  static Ran tune(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), (prefix() / "bin" / "tune").string());
    env.insert(k_clean_path.begin(), k_clean_path.end());
    return run(s_dir / "work", std::move(args), std::move(env), 240);
  }

  static inline fs::path s_dir;
  static inline Ran s_install;
};

TEST_F(InstallE2E, LaysOutBinariesStudiesAndChartJs) {
  for (const char* file : {"bin/tune", "bin/tune-keeper", "bin/tune-trainer",
                           "share/tune/studies/quickstart.yaml", "share/tune/chart.min.js",
                           "lib/tune/libtune_threads.so", "lib/tune/libtune_getenv.so"})
    EXPECT_TRUE(fs::is_regular_file(prefix() / file)) << file;
  if (fs::exists(fs::path(TUNE_BUILD_DIR) / "bin" / "libtune_trainer_gpu.so")) {
    EXPECT_TRUE(fs::is_regular_file(prefix() / "lib/tune/libtune_trainer_gpu.so"));
  }
}

// A ready study found by name under PREFIX/share/tune/studies, run with the installed trainer
// and keeper, then reported (Chart.js from the prefix) and exported.
TEST_F(InstallE2E, ShortStudyReportAndExportRunFromTheInstalledCopy) {
  std::ofstream(prefix() / "share/tune/studies/tiny.yaml")
      << "name: tiny\nlaunch:\n  mpirun: {n: 1, oversubscribe: true}\n"
         "command: ['{tune_trainer}', '--out={trial_dir}', --synthetic=200, --hidden=16,\n"
         "          --batch-size=50, --epochs=1, --benchmark, '--iterator-workers={workers}']\n"
         "params:\n  workers: [0, 1]\n"
         "sampler: {type: random, seed: 3}\n";
  auto r = tune({"--trials", "2", "tiny"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(s_dir / "work/tune-out/tiny/study.db"));

  r = tune({"trials", "tiny"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;  // header + 2 trials
  EXPECT_NE(r.out.find("COMPLETE"), std::string::npos) << r.out;

  // The report inlines the prefix's own Chart.js (a stand-in here, so its origin shows).
  std::ofstream(prefix() / "share/tune/chart.min.js") << "/* the installed copy */";
  const auto html = (s_dir / "work/report.html").string();
  r = tune({"report", "tiny", "--format", "html", "-o", html}, {{"TUNE_CHARTJS", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(html).find("/* the installed copy */"), std::string::npos);

  const auto script = (s_dir / "work/best.sh").string();
  r = tune({"export", "tiny", "-o", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto text = slurp(script);
  EXPECT_NE(text.find((prefix() / "bin/tune-trainer").string()), std::string::npos) << text;
  EXPECT_EQ(text.find(TUNE_BUILD_DIR), std::string::npos) << text;
  r = run(s_dir / "work", {"bash", script}, {{"TUNE_OUT", (s_dir / "work/run").string()}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto log = nlohmann::json::parse(slurp(s_dir / "work/run/log"));
  EXPECT_GT(log.back().value("elapsed_time", 0.0), 0.0);
}

// cpack's .deb: Depends are what the binaries load plus mpirun; no -dev, test or build package.
TEST_F(InstallE2E, DebianPackageDependsOnRuntimePackagesOnly) {
  for (const char* tool : {"cpack", "dpkg-deb", "dpkg-shlibdeps"})
    if (!on_path(tool)) GTEST_SKIP() << tool << " is not installed (dpkg-dev, cmake)";
  const auto out = s_dir / "deb";
  fs::create_directories(out);
  const auto cpack = fs::path(CMAKE_COMMAND).parent_path() / "cpack";
  auto r = run(
      s_dir, {cpack.string(), "--config", TUNE_BUILD_DIR "/CPackConfig.cmake", "-B", out.string()},
      {}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::path deb;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().filename().string().starts_with("tune_") && e.path().extension() == ".deb")
      deb = e.path();
  ASSERT_FALSE(deb.empty()) << r.out;
  r = run(s_dir, {"dpkg-deb", "-f", deb.string(), "Depends"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string depends = r.out;
  for (const char* needed : {"openmpi-bin", "libopenmpi3", "libyaml-cpp0.7", "libsqlite3-0"})
    EXPECT_NE(depends.find(needed), std::string::npos) << needed << " in: " << depends;
  for (const char* unwanted : {"-dev", "gtest", "chromium", "slurm", "munge", "cuda", "nccl"})
    EXPECT_EQ(depends.find(unwanted), std::string::npos) << unwanted << " in: " << depends;
  r = run(s_dir, {"dpkg-deb", "-c", deb.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file :
       {"./usr/bin/tune\n", "./usr/bin/tune-keeper\n", "./usr/bin/tune-trainer\n",
        "./usr/share/tune/studies/quickstart.yaml\n"})
    EXPECT_NE(r.out.find(std::string(" ") + file), std::string::npos) << file << r.out;
}

}  // namespace
}  // namespace tune::test_support
