// What a running program shows in /proc, read and classified for `tune init`'s probe run:
// maps, syscall and fdinfo texts as the kernel writes them, the libraries of Debian 12's
// packages by their real paths, this test's own process read live, and an inotify watch on a
// folder the test writes into.
#include "probes/program_probe.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace tune::probes {
namespace {

namespace fs = std::filesystem;

TEST(ProgramProbe, MapsListEachSharedObjectOnceAndNothingElse) {
  const std::string maps =
      "55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234  /usr/bin/hpcc\n"
      "7f2c40ec0000-7f2c40ee0000 r--p 00000000 08:01 99 "
      "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so\n"
      "7f2c40ee0000-7f2c40ef0000 r-xp 00020000 08:01 99 "
      "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so\n"
      "7f2c41000000-7f2c41001000 r--p 00000000 08:01 77 "
      "/usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so\n"
      "7f2c42000000-7f2c42001000 rw-s 00000000 00:05 5  /dev/shm/vader_segment.vm.1 (deleted)\n"
      "7f2c43000000-7f2c43001000 r--p 00000000 08:01 66 /usr/lib/libx.so.1 (deleted)\n"
      "7ffd1000000-7ffd1021000 rw-p 00000000 00:00 0  [stack]\n";
  EXPECT_EQ(parse_maps_libraries(maps),
            (std::vector<std::string>{
                "/usr/lib/libx.so.1",
                "/usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so",
                "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so"}));
}

TEST(ProgramProbe, SyscallAndFdinfoAreReadAsTheKernelWritesThem) {
  EXPECT_EQ(parse_syscall_number("232 0x5 0x7f 0x20 0xffffffff 0x0 0x0 0x7ffd 0x7f3c\n"), 232);
  EXPECT_EQ(parse_syscall_number("running\n"), -1);
  EXPECT_EQ(parse_syscall_number(""), -1);
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nflags:\t0102001\nmnt_id:\t29\n"), 0102001);
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nflags:\t02100000\n") & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(parse_fdinfo_flags("pos: 0\n"), -1);
#ifdef SYS_epoll_wait
  EXPECT_TRUE(is_event_wait_syscall(SYS_epoll_wait));
#endif
#ifdef SYS_poll
  EXPECT_TRUE(is_event_wait_syscall(SYS_poll));
#endif
  EXPECT_FALSE(is_event_wait_syscall(SYS_futex));
  EXPECT_FALSE(is_event_wait_syscall(-1));
  EXPECT_TRUE(is_runtime_thread_name("cuda-EvtHandlr"));
  EXPECT_TRUE(is_runtime_thread_name("NCCL Progress"));
  EXPECT_TRUE(is_runtime_thread_name("async"));
  EXPECT_FALSE(is_runtime_thread_name("hpcc"));
  EXPECT_FALSE(is_runtime_thread_name("python3"));
}

// Debian 12's paths, as the ranks of hpcc and of a torch script map them.
TEST(ProgramProbe, LibrariesAreClassifiedInTheCatalogsTerms) {
  const std::string d = "/usr/lib/x86_64-linux-gnu/";
  auto c = [](const std::string& p) { return classify_library(p); };
  auto blas = c(d + "openblas-pthread/libblas.so.3");
  ASSERT_TRUE(blas);
  EXPECT_EQ(blas->what, "OpenBLAS (pthreads)");
  EXPECT_EQ(blas->pools, std::vector<std::string>{"blas"});
  EXPECT_EQ(c(d + "openblas-pthread/libopenblasp-r0.3.21.so")->what, "OpenBLAS (pthreads)");
  auto omp_blas = c(d + "openblas-openmp/libblas.so.3");
  ASSERT_TRUE(omp_blas);
  EXPECT_EQ(omp_blas->what, "OpenBLAS (OpenMP build)");
  EXPECT_EQ(omp_blas->pools, std::vector<std::string>{"openmp"});
  EXPECT_TRUE(c(d + "openblas-serial/libblas.so.3")->pools.empty());
  EXPECT_EQ(c(d + "blas/libblas.so.3")->what, "reference BLAS (netlib)");
  EXPECT_EQ(c(d + "blis-openmp/libblas.so.3")->pools, std::vector<std::string>{"openmp"});
  EXPECT_TRUE(c(d + "blis-pthread/libblas.so.3")->pools.empty());
  EXPECT_EQ(c("/opt/intel/mkl/lib/libmkl_core.so.2")->what, "MKL");
  EXPECT_EQ(c("/opt/intel/mkl/lib/libmkl_sequential.so.2")->what, "MKL (sequential)");
  EXPECT_EQ(c(d + "libgomp.so.1.0.0")->pools, std::vector<std::string>{"openmp"});
  EXPECT_EQ(c("/opt/intel/lib/libiomp5.so")->what, "libiomp5 (Intel OpenMP)");
  EXPECT_EQ(c("/usr/lib/llvm-14/lib/libomp.so.5")->what, "libomp (LLVM OpenMP)");
  auto torch = c(d + "libtorch_cpu.so.1.13.0");
  ASSERT_TRUE(torch);
  EXPECT_EQ(torch->program, "torch");
  EXPECT_EQ(torch->pools, std::vector<std::string>{"torch_intra_op"});
  EXPECT_EQ(c(d + "libc10.so.1.13.0")->program, "torch");
  EXPECT_EQ(c("/x/libtensorflow_framework.so.2")->what, "TensorFlow");
  EXPECT_TRUE(c(d + "libopencv_core.so.4.6.0")->pools.empty());
  EXPECT_EQ(c("/usr/lib/libnccl.so.2")->program, "nccl");
  EXPECT_EQ(c("/usr/local/cuda/lib64/libcudart.so.12")->what, "CUDA");
  EXPECT_EQ(c(d + "libmpi.so.40.30.4")->program, "openmpi");
  EXPECT_EQ(c(d + "mpich/lib/libmpi.so.12")->what, "MPICH");
  EXPECT_EQ(c(d + "libmpich.so.12")->what, "MPICH");
  EXPECT_FALSE(c(d + "libc.so.6"));
  EXPECT_FALSE(c(d + "openmpi/lib/openmpi3/mca_btl_vader.so"));
  EXPECT_FALSE(c(d + "openblas-pthread/libgfortran.so.5"));

  // One finding per library kind, the first path of it.
  const auto all =
      classify_libraries({d + "libc.so.6", d + "openblas-pthread/libblas.so.3",
                          d + "openblas-pthread/libopenblasp-r0.3.21.so", d + "libmpi.so.40.30.4"});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].path, d + "openblas-pthread/libblas.so.3");
  EXPECT_EQ(all[1].what, "Open MPI");
}

// This test's own process, read live: a library it maps, a thread it starts (named), a file it
// holds open for writing and one for reading, its working directory.
TEST(ProgramProbe, ReadsALiveProcess) {
  const fs::path dir =
      fs::temp_directory_path() / ("tune-program-probe-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string wpath = (dir / "written.txt").string();
  const std::string rpath = (dir / "read.txt").string();
  std::ofstream(rpath) << "input\n";
  const int wfd = ::open(wpath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int rfd = ::open(rpath.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(wfd, 0);
  ASSERT_GE(rfd, 0);
  std::atomic<bool> named = false, stop = false;
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "probe-worker");
    named = true;
    while (!stop) std::this_thread::yield();
  });
  while (!named) std::this_thread::yield();

  const auto view = read_process_view(getpid());
  stop = true;
  worker.join();
  ::close(wfd);
  ::close(rfd);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->pid, getpid());
  EXPECT_EQ(fs::path(view->cwd), fs::current_path());
  EXPECT_TRUE(std::any_of(view->libraries.begin(), view->libraries.end(),
                          [](const std::string& l) { return l.contains("libc.so"); }));
  EXPECT_TRUE(std::any_of(view->threads.begin(), view->threads.end(),
                          [](const auto& t) { return t.comm == "probe-worker"; }));
  const auto file = [&](const std::string& p) {
    return std::find_if(view->files.begin(), view->files.end(),
                        [&](const auto& f) { return f.path == fs::canonical(p).string(); });
  };
  ASSERT_NE(file(wpath), view->files.end());
  EXPECT_TRUE(file(wpath)->write);
  ASSERT_NE(file(rpath), view->files.end());
  EXPECT_FALSE(file(rpath)->write);
  EXPECT_FALSE(read_process_view(-5));
  fs::remove_all(dir);
}

// A file opened and closed at once is still seen: inotify queues the event.
TEST(ProgramProbe, DirectoryWatchSeesOpensCreatesAndWrites) {
  const fs::path dir = fs::temp_directory_path() / ("tune-dir-watch-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "input.txt") << "x\n";
  auto watch = DirectoryWatch::open(dir.string());
  ASSERT_TRUE(watch) << watch.error();
  { std::ifstream in(dir / "input.txt"); }
  {
    // Opened for writing, never written: closing it says "close-write", which is not a write.
    std::fstream rw(dir / "input.txt", std::ios::in | std::ios::out);
    std::string word;
    rw >> word;
  }
  std::ofstream(dir / "output.txt") << "HPL_Tflops=1\n";
  watch->drain();
  const auto& e = watch->entries();
  ASSERT_TRUE(e.contains("input.txt"));
  EXPECT_TRUE(e.at("input.txt").opened);
  EXPECT_FALSE(e.at("input.txt").written);
  ASSERT_TRUE(e.contains("output.txt"));
  EXPECT_TRUE(e.at("output.txt").created);
  EXPECT_TRUE(e.at("output.txt").written);
  EXPECT_FALSE(watch->overflowed());
  EXPECT_FALSE(DirectoryWatch::open((dir / "none").string()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tune::probes
