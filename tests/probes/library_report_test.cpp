// What the ranks' libraries say they run (probes/library_report.h, probes/library_query.c) and
// which kernels a CPU can run (probes/blas_kernels.h): the reports parsed and summed up, and the
// preload asked for real inside a program that maps OpenBLAS, and one with two OpenMP runtimes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "probes/blas_kernels.h"
#include "probes/library_report.h"
#include "probes/onednn_isa.h"

namespace tune::probes {
namespace {

const std::set<std::string> k_avx512 = {"pni",      "ssse3",    "sse4_2",  "avx",
                                        "avx2",     "fma",      "avx512f", "avx512cd",
                                        "avx512bw", "avx512dq", "avx512vl"};
const std::set<std::string> k_avx2 = {"pni", "ssse3", "sse4_2", "avx", "avx2", "fma"};

TEST(BlasKernels, TheCpuLevelAndTheCoreTypesItRuns) {
  EXPECT_EQ(cpu_isa(k_avx512), IsaLevel::avx512);
  EXPECT_EQ(cpu_isa(k_avx2), IsaLevel::avx2);
  EXPECT_EQ(cpu_isa({"pni"}), IsaLevel::sse3);
  EXPECT_EQ(core_level("Prescott"), IsaLevel::sse3);
  EXPECT_EQ(core_level("skylakex"), IsaLevel::avx512);  // OpenBLAS reads the name in any case
  EXPECT_EQ(core_level("Pentium4"), IsaLevel::unknown);
  const auto avx2 = runnable_core_types(k_avx2);
  EXPECT_EQ(avx2.front(), "Zen");
  EXPECT_EQ(std::ranges::count(avx2, "SkylakeX"), 0);  // AVX-512 kernels need AVX-512
  const auto avx512 = runnable_core_types(k_avx512);
  EXPECT_EQ(avx512.front(), "SkylakeX");  // Cooperlake needs avx512_bf16 too
  EXPECT_EQ(avx512.back(), "Prescott");
}

TEST(BlasKernels, ACheckPassesOnlyWhenItRanTheCoreAskedWithinTheBound) {
  const std::string good =
      "core SkylakeX\ndgemm_error 0.007\nsgemm_error 0.008\ndgemm_gflops 41\nsgemm_gflops "
      "87\ndone\n";
  KernelCheck c = parse_kernel_check(good);
  c.requested = "SkylakeX";
  EXPECT_TRUE(c.ran);
  EXPECT_TRUE(kernel_check_passes(c));
  c.requested = "Sapphirerapids";  // an OpenBLAS that does not know the name runs its own choice
  EXPECT_FALSE(kernel_check_passes(c));
  KernelCheck wrong = parse_kernel_check(
      "core Haswell\ndgemm_error 3.2e+13\nsgemm_error 0.01\ndgemm_gflops 30\nsgemm_gflops "
      "60\ndone\n");
  wrong.requested = "Haswell";
  EXPECT_FALSE(kernel_check_passes(wrong));
  const KernelCheck cut = parse_kernel_check("core Haswell\ndgemm_error 0.1\n");  // SIGILL later
  EXPECT_FALSE(cut.ran);
  EXPECT_FALSE(kernel_check_passes(cut));
  // oneDNN's check prints SGEMM alone (it has no DGEMM); half a precision is no result.
  KernelCheck single = parse_kernel_check("core AVX2\nsgemm_error 0.01\nsgemm_gflops 90\ndone\n");
  single.requested = "AVX2";
  EXPECT_TRUE(single.ran);
  EXPECT_FALSE(single.has_double);
  EXPECT_TRUE(kernel_check_passes(single));
  EXPECT_FALSE(parse_kernel_check("core AVX2\ndgemm_error 0.01\nsgemm_error 0.01\n"
                                  "sgemm_gflops 90\ndone\n")
                   .ran);
}

TEST(LibraryReport, AKernelOlderThanTheCpuIsNamedWithWhatForcedIt) {
  const auto p = parse_library_report(
      "process\t4242\t0\t/usr/bin/python3.11\n"
      "library\topenblas\t/nonexistent/libopenblas.so.0\tcore=Prescott\tconfig=OpenBLAS 0.3.21 "
      "NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64\tthreads=2\tparallel=1\n"
      "library\topenmp\t/nonexistent/libgomp.so.1\tthreads=1\n"
      "env\tOPENBLAS_CORETYPE\tPrescott\n");
  EXPECT_EQ(p.pid, 4242);
  EXPECT_EQ(p.rank, "0");
  ASSERT_EQ(p.libraries.size(), 2u);
  const auto s = summarize_libraries({p}, IsaLevel::avx512);
  ASSERT_EQ(s.libraries.size(), 2u);
  EXPECT_EQ(s.libraries[0].text,
            "OpenBLAS 0.3.21 (pthreads, 2 threads) runs its Prescott kernels (SSE3) on a CPU with "
            "AVX-512, forced by OPENBLAS_CORETYPE=Prescott");
  EXPECT_EQ(s.libraries[1].text, "GNU OpenMP (libgomp.so.1) (1 thread)");
  ASSERT_NE(s.stale_openblas(), nullptr);
  EXPECT_EQ(s.verdict_clause(),
            "OpenBLAS runs Prescott (SSE3) kernels on an AVX-512 CPU, forced by "
            "OPENBLAS_CORETYPE=Prescott");
  const auto back = LibrariesSummary::from_json(s.to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to_json(), s.to_json());
}

TEST(LibraryReport, CurrentLibrariesGetNoNote) {
  const auto p = parse_library_report(
      "process\t7\t-\t/bin/job\n"
      "library\topenblas\t/nonexistent/libopenblas.so.0\tcore=Cooperlake\tconfig=OpenBLAS 0.3.21\t"
      "threads=1\tparallel=1\n");
  const auto s = summarize_libraries({p}, IsaLevel::avx512);
  EXPECT_EQ(s.stale_openblas(), nullptr);
  EXPECT_TRUE(s.notes.empty());
  EXPECT_EQ(s.verdict_clause(), "");
  EXPECT_EQ(s.libraries.at(0).text,
            "OpenBLAS 0.3.21 (pthreads, 1 thread) runs its Cooperlake kernels (AVX-512, as the "
            "CPU allows)");
}

TEST(LibraryReport, OnlyRanksCountWhenSomeProcessesHaveARank) {
  auto launcher = parse_library_report(
      "process\t1\t-\t/usr/bin/orted\nlibrary\topenmp\t/nonexistent/libgomp.so.1\tthreads=2\n");
  auto rank = parse_library_report(
      "process\t2\t1\t/bin/job\nlibrary\topenblas\t/nonexistent/libopenblas.so.0\tcore=Haswell\t"
      "config=OpenBLAS 0.3.21\n");
  // A data loader's worker, forked from rank 1, inherits its rank: one rank still.
  auto worker = parse_library_report(
      "process\t3\t1\t/bin/job\nlibrary\topenblas\t/nonexistent/libopenblas.so.0\tcore=Haswell\t"
      "config=OpenBLAS 0.3.21\n");
  const auto s = summarize_libraries({launcher, rank, worker}, IsaLevel::avx2);
  EXPECT_EQ(s.ranks, 1);
  ASSERT_EQ(s.libraries.size(), 1u);
  EXPECT_EQ(s.libraries[0].kind, "openblas");
  EXPECT_EQ(s.libraries[0].ranks, 1);
}

const std::set<std::string> k_zen4 = [] {
  std::set<std::string> f = k_avx512;
  f.insert({"sse4_1", "avx512_vnni", "avx512_bf16"});
  return f;
}();

TEST(OnednnIsa, ItsCodesByVersionAndTheSetsACpuRuns) {
  EXPECT_EQ(onednn_isa_of_code(0x7, 2), "AVX2");
  EXPECT_EQ(onednn_isa_of_code(0xe7, 2), "AVX512_CORE_BF16");
  EXPECT_EQ(onednn_isa_of_code(0x3e7, 2), "AVX512_CORE_AMX");
  EXPECT_EQ(onednn_isa_of_code(0x3e7, 3), "");  // 3.x moved AMX to 0xfe7
  EXPECT_EQ(onednn_isa_of_code(0xfe7, 3), "AVX512_CORE_AMX");
  EXPECT_EQ(onednn_isa_of_code(0x1ef, 2), "");  // FP16 is 3.x's
  ASSERT_NE(onednn_isa("avx2"), nullptr);       // ONEDNN_MAX_CPU_ISA is read in any case
  EXPECT_EQ(onednn_isa("Haswell"), nullptr);
  const auto zen4 = runnable_onednn_isas(k_zen4, 2);
  ASSERT_FALSE(zen4.empty());
  EXPECT_EQ(zen4.front(), "AVX512_CORE_BF16");  // no AMX, no FP16
  EXPECT_EQ(zen4.back(), "SSE41");
  EXPECT_EQ(runnable_onednn_isas(k_avx2, 2).front(), "AVX2");
}

// oneDNN capped below the CPU by a variable (a module file's safe value) is named; at its own
// choice it is current, and nothing is said.
TEST(LibraryReport, OneDnnCappedBelowTheCpuIsNamedWithTheVariable) {
  const auto capped = parse_library_report(
      "process\t77\t0\t/usr/bin/python3.11\n"
      "library\tonednn\t/usr/lib/x86_64-linux-gnu/libdnnl.so.2\tversion=2.6.3\truntime=2\tisa=0x7\n"
      "env\tONEDNN_MAX_CPU_ISA\tAVX2\n");
  const auto s = summarize_libraries({capped}, IsaLevel::avx512, k_zen4);
  ASSERT_EQ(s.libraries.size(), 1u);
  const LibraryUse& u = s.libraries[0];
  EXPECT_EQ(u.name, "oneDNN 2.6.3");
  EXPECT_EQ(u.core, "AVX2");
  EXPECT_EQ(u.threading, "OpenMP");
  EXPECT_TRUE(u.older_than_cpu);
  EXPECT_EQ(u.text,
            "oneDNN 2.6.3 (OpenMP) runs its AVX2 kernels on a CPU that runs AVX512_CORE_BF16, "
            "forced by ONEDNN_MAX_CPU_ISA=AVX2");
  EXPECT_EQ(s.stale("onednn"), &s.libraries[0]);
  EXPECT_EQ(s.stale_openblas(), nullptr);
  EXPECT_EQ(s.verdict_clause(),
            "oneDNN runs AVX2 kernels on a CPU that runs AVX512_CORE_BF16, forced by "
            "ONEDNN_MAX_CPU_ISA=AVX2");
  const auto back = LibrariesSummary::from_json(s.to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->libraries[0].cpu_best, "AVX512_CORE_BF16");
  const auto own = parse_library_report(
      "process\t78\t0\t/usr/bin/python3.11\n"
      "library\tonednn\t/usr/lib/x86_64-linux-gnu/"
      "libdnnl.so.2\tversion=2.6.3\truntime=2\tisa=0xe7\n");
  const auto current = summarize_libraries({own}, IsaLevel::avx512, k_zen4);
  EXPECT_FALSE(current.libraries[0].older_than_cpu);
  EXPECT_EQ(current.stale("onednn"), nullptr);
  EXPECT_TRUE(current.notes.empty());
  EXPECT_EQ(current.verdict_clause(), "");
}

// --- the preload, asked for real -------------------------------------------------------------

struct PreloadedRun {
  int status = -1;
  std::vector<ProcessLibraries> reports;
};

PreloadedRun run_preloaded(const std::vector<std::string>& argv, const std::string& coretype,
                           const std::map<std::string, std::string>& env = {}) {
  const std::string dir_template =
      (std::filesystem::temp_directory_path() / "library-report-XXXXXX").string();
  std::string dir = dir_template;
  if (::mkdtemp(dir.data()) == nullptr) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("LD_PRELOAD", TUNE_THREADS_LIBRARY, 1);
    ::setenv("TUNE_LIBRARY_REPORTS", dir.c_str(), 1);
    if (coretype.empty())
      ::unsetenv("OPENBLAS_CORETYPE");
    else
      ::setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  PreloadedRun out;
  ::waitpid(pid, &out.status, 0);
  out.reports = read_library_reports(dir);
  std::filesystem::remove_all(dir);
  return out;
}

TEST(LibraryQuery, AProgramsOpenBlasSaysItsCoreAndWhatForcedIt) {
  const PreloadedRun run =
      run_preloaded({PROBES_DGEMM, "--threads", "1", "--seconds", "0.1"}, "Prescott");
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
  ASSERT_EQ(run.reports.size(), 1u);
  const ProcessLibraries& p = run.reports.front();
  EXPECT_EQ(p.exe, std::filesystem::canonical(PROBES_DGEMM).string());
  ASSERT_FALSE(p.libraries.empty());
  const LibraryAnswer& blas = p.libraries.front();
  EXPECT_EQ(blas.kind, "openblas");
  EXPECT_EQ(blas.fields.at("core"), "Prescott");
  EXPECT_EQ(blas.fields.at("threads"), "1");  // the program's own openblas_set_num_threads(1),
                                              // asked at exit
  EXPECT_EQ(p.env.at("OPENBLAS_CORETYPE"), "Prescott");
  const auto s = summarize_libraries(run.reports, cpu_isa(read_cpu_flags()));
  if (cpu_isa(read_cpu_flags()) > IsaLevel::sse3) {
    ASSERT_NE(s.stale_openblas(), nullptr);
    EXPECT_TRUE(s.stale_openblas()->older_than_cpu);
  }
}

TEST(LibraryQuery, TwoOpenMpRuntimesInOneProcessAreNamed) {
  const PreloadedRun run = run_preloaded({PROBES_TWO_OPENMP}, "");
  ASSERT_TRUE(WIFEXITED(run.status));
  ASSERT_NE(WEXITSTATUS(run.status), 3) << "libomp.so.5 is not installed (libomp5 package)";
  ASSERT_EQ(WEXITSTATUS(run.status), 0);
  const auto s = summarize_libraries(run.reports, IsaLevel::avx2);
  int runtimes = 0;
  for (const auto& u : s.libraries) runtimes += u.kind == "openmp";
  EXPECT_EQ(runtimes, 2);
  ASSERT_EQ(s.notes.size(), 1u);
  // The names as the loader found them (libgomp.so.1 may resolve to libgomp.so.1.0.0).
  EXPECT_NE(s.notes[0].find("2 OpenMP runtimes, libgomp.so.1"), std::string::npos) << s.notes[0];
  EXPECT_NE(s.notes[0].find(" and libomp.so.5"), std::string::npos) << s.notes[0];
  EXPECT_EQ(s.verdict_clause(), "two OpenMP runtimes in one rank");
}

// On a node other than tune's the trial's folder is not there: the rank makes it (and its parent),
// private, and writes its answers (that node's watcher reads them, probes/node_watch.h).
TEST(LibraryQuery, ARankMakesTheFolderItsNodeLacks) {
  const auto base =
      std::filesystem::temp_directory_path() / ("library-remote-" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  const auto reports = base / "tune-threads-Ab12" / "libraries";
  const PreloadedRun run = run_preloaded({PROBES_DGEMM, "--threads", "1", "--seconds", "0.05"}, "",
                                         {{"TUNE_LIBRARY_REPORTS", reports.string()}});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
  const auto found = read_library_reports(reports.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].libraries.front().kind, "openblas");
  EXPECT_EQ(std::filesystem::status(reports).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  std::filesystem::remove_all(base);
}

// oneDNN is asked its version and runtime, and its instruction set at exit alone (asking fixes
// it): with ONEDNN_MAX_CPU_ISA=SSE41 it says SSE41, older than any CPU with AVX.
TEST(LibraryQuery, AProgramsOneDnnSaysItsInstructionSetAtExit) {
  const PreloadedRun run =
      run_preloaded({PROBES_ONEDNN_USER}, "", {{"ONEDNN_MAX_CPU_ISA", "SSE41"}});
  ASSERT_TRUE(WIFEXITED(run.status));
  ASSERT_NE(WEXITSTATUS(run.status), 3) << "libdnnl.so.2 is not installed (libdnnl2 package)";
  ASSERT_EQ(WEXITSTATUS(run.status), 0);
  ASSERT_EQ(run.reports.size(), 1u);
  const auto& libs = run.reports.front().libraries;
  const auto onednn = std::ranges::find(libs, "onednn", &LibraryAnswer::kind);
  ASSERT_NE(onednn, libs.end());
  EXPECT_TRUE(onednn->fields.at("version").starts_with("2.") ||
              onednn->fields.at("version").starts_with("3."));
  EXPECT_EQ(onednn->fields.at("isa"), "0x1");
  const auto flags = read_cpu_flags();
  const auto s = summarize_libraries(run.reports, cpu_isa(flags), flags);
  const LibraryUse* stale = s.stale("onednn");
  ASSERT_NE(stale, nullptr);
  EXPECT_EQ(stale->core, "SSE41");
  EXPECT_EQ(stale->forced_by, "ONEDNN_MAX_CPU_ISA=SSE41");
  if (flags.contains("avx")) {
    EXPECT_TRUE(stale->older_than_cpu);
  }
}

}  // namespace
}  // namespace tune::probes
