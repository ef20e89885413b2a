// Threads told apart by the library that started them (probes/thread_origin.h): the classes of
// the origins libtune_threads.so records, the files read as they grow, and the monitor grouping a
// program's unnamed pools by origin, where counting them by how busy they were called a
// spinning OpenCV pool a runtime's idle helpers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "probes/monitor.h"
#include "probes/thread_origin.h"
#include "tests/common/fake_source.h"

namespace tune::probes {
namespace {

TEST(ThreadOrigin, ClassifiesTheLibrariesThatStartPools) {
  EXPECT_EQ(classify_origin("libgomp.so.1:gomp_team_start").group, GroupId::openmp);
  EXPECT_EQ(classify_origin("libopenblas.so.0:blas_thread_init").group, GroupId::blas);
  const OriginClass tbb = classify_origin("libtbb.so.12");
  EXPECT_EQ(tbb.group, GroupId::opencv);
  EXPECT_EQ(tbb.pool, "TBB (OpenCV)");
  // gloo's threads start in libtorch_cpu too: the symbol decides before the library.
  EXPECT_EQ(classify_origin("libtorch_cpu.so.1.13:_ZN4c10d16ProcessGroupGlooC1ERK").group,
            GroupId::runtime);
  EXPECT_EQ(classify_origin("libgloo.so.0:_ZN4gloo9transport3tcp4LoopC1Ev").pool, "gloo");
  EXPECT_EQ(classify_origin("libopen-pal.so.40:opal_thread_start").group, GroupId::runtime);
  EXPECT_EQ(classify_origin("libpmix.so.2:pmix_thread_start").group, GroupId::runtime);
  EXPECT_EQ(classify_origin("python3:PyThread_start_new_thread").pool, "Python threads");
  const OriginClass own = classify_origin("libmine.so.3:worker_main");
  EXPECT_EQ(own.group, GroupId::other);
  EXPECT_EQ(own.pool, "libmine.so.3");
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string p = (std::filesystem::temp_directory_path() / "origin-test-XXXXXX").string();
    path = ::mkdtemp(p.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  void append(pid_t pid, const std::string& text) const {
    std::ofstream(path / std::to_string(pid), std::ios::app) << text;
  }
};

TEST(ThreadOrigin, ReadsEachProcessFileAsItGrows) {
  TempDir dir;
  ThreadOrigins origins(dir.path.string());
  dir.append(101, "1001 libgomp.so.1:gomp_team_start\n1002 libtb");  // a line still being written
  origins.begin_sample();
  EXPECT_EQ(origins.origin(101, 1001), "libgomp.so.1:gomp_team_start");
  EXPECT_FALSE(origins.origin(101, 1002));
  dir.append(101, "b.so.12\n");
  origins.begin_sample();
  EXPECT_EQ(origins.origin(101, 1002), "libtbb.so.12");
  EXPECT_FALSE(origins.origin(101, 101));   // a process's first thread records nothing
  EXPECT_FALSE(origins.origin(102, 1001));  // the tid in another process is another thread
  EXPECT_FALSE(ThreadOrigins("").origin(101, 1001));
  // A process that floods its file is read no further than 1 MiB.
  dir.append(103, std::string(3 << 20, 'x') + "\n1003 libgomp.so.1\n");
  origins.begin_sample();
  EXPECT_FALSE(origins.origin(103, 1003));
}

TEST(ThreadOrigin, TheMonitorGroupsUnnamedPoolsByOriginNotByHowBusyTheyWere) {
  // Two ranks on 2 PUs, each with 2 unnamed threads that carry the program's name: TBB's
  // workers (OpenCV's pool, busy) and gloo's (idle). The study says the program starts 0 unnamed
  // pool threads, so by count both would be the runtimes'; by origin only gloo's are.
  FakeSource src{*read_synthetic_topology("pack:1 core:2 pu:1")};
  TempDir dir;
  src.add_process(100, 1, "mpirun", {0, 1});
  for (int r = 0; r < 2; ++r) {
    const pid_t pid = 101 + r;
    src.add_process(pid, 100, "python3", {0, 1}, {{"OMPI_COMM_WORLD_RANK", std::to_string(r)}});
    for (int k = 1; k <= 2; ++k) {
      src.add_thread(pid, 1000 * (r + 1) + k);
      src.set_thread_name(1000 * (r + 1) + k, "python3");
    }
    dir.append(pid, std::to_string(1000 * (r + 1) + 1) + " libtbb.so.12\n" +
                        std::to_string(1000 * (r + 1) + 2) +
                        " libgloo.so.0:_ZN4gloo9transport3tcp4LoopC1Ev\n");
  }
  MonitorOptions options;
  options.program_threads = 0;
  options.thread_origins_dir = dir.path.string();
  TrialMonitor m(src, 100, options);
  m.sample_once();
  for (int i = 0; i < 20; ++i) {
    src.advance(0.2);
    for (int r = 0; r < 2; ++r) {
      src.run_thread(101 + r, 0.1, 'R', r);
      src.run_thread(1000 * (r + 1) + 1, 0.1, 'R', r);
      src.run_thread(1000 * (r + 1) + 2, 0.0, 'S', r);
    }
    m.sample_once();
  }
  const Verdict v = m.verdict();
  ASSERT_TRUE(v.sustained.duty.contains("opencv"));
  EXPECT_NEAR(v.sustained.duty.at("opencv").threads, 1.0, 1e-9);
  EXPECT_NEAR(v.sustained.duty.at("runtime").threads, 1.0, 1e-9);
  ASSERT_EQ(v.pools.size(), 2U);
  EXPECT_EQ(v.pools.front().name, "TBB (OpenCV)");  // the busiest first
  EXPECT_EQ(v.pools.front().threads, 2);
  EXPECT_NEAR(v.pools.front().cpu_s, 4.0, 1e-9);
  EXPECT_EQ(v.pools.back().group, "runtime");
  EXPECT_EQ(v.to_json()["pools"][0]["name"], "TBB (OpenCV)");
}

}  // namespace
}  // namespace tune::probes
