// The kernels tune may offer (tuner/launch/kernel_checks.h): each core type run in a child with
// the job's library, refused when it dies (SIGILL), computes wrong or is not the core asked; and
// the real check of this machine's OpenBLAS.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "probes/blas_kernels.h"
#include "tests/common/test_support.h"
#include "tuner/launch/kernel_checks.h"

namespace tune::tuner {
namespace {

const std::set<std::string> k_avx512 = {"pni",      "ssse3",    "sse4_2",  "avx",
                                        "avx2",     "fma",      "avx512f", "avx512cd",
                                        "avx512bw", "avx512dq", "avx512vl"};

class KernelChecks : public test_support::TempDirTest {
 public:
  KernelChecks() : TempDirTest("kernel-checks-") {}
  // A stand-in checker: a shell script that answers as `body` says for $OPENBLAS_CORETYPE.
  std::string checker(const std::string& body) {
    const auto path = m_dir / "checker";
    test_support::write_file(path, "#!/bin/sh\n" + body);
    ::chmod(path.c_str(), 0755);
    return path.string();
  }
};

constexpr const char* k_results =
    "echo dgemm_error 0.01; echo sgemm_error 0.01; echo dgemm_gflops 40; echo sgemm_gflops 80; "
    "echo done\n";

TEST_F(KernelChecks, ACoreThatDiesComputesWrongOrIsNotKnownIsRefused) {
  const std::string script =
      std::string(
          "core=${OPENBLAS_CORETYPE:-Prescott}\n"
          "case $core in\n"
          "  SkylakeX) echo core SkylakeX; kill -ILL $$ ;;\n"
          "  Zen) echo core Zen; echo dgemm_error 1e13; echo sgemm_error 0.01; "
          "echo dgemm_gflops 40; echo sgemm_gflops 80; echo done ;;\n"
          "  Haswell) echo core Prescott; ") +
      k_results +
      "    ;;\n"
      "  *) echo core $core; " +
      k_results +
      "    ;;\n"
      "esac\n";
  const KernelOffer offer =
      check_openblas_kernels("libopenblas.so.0", k_avx512, "Prescott", 3, checker(script));
  EXPECT_TRUE(offer.as_run.ran);
  EXPECT_EQ(offer.as_run.core, "Prescott");
  EXPECT_EQ(offer.offered, std::vector<std::string>{});  // SkylakeX, Zen, Haswell all refused
  ASSERT_EQ(offer.refused.size(), 3u);
  EXPECT_EQ(offer.refused[0], "SkylakeX: killed by SIGILL");
  EXPECT_EQ(offer.refused[1].rfind("Zen: wrong results (DGEMM error 1e+13", 0), 0u)
      << offer.refused[1];
  EXPECT_EQ(offer.refused[2], "Haswell: this OpenBLAS does not know it (it ran Prescott)");
}

TEST_F(KernelChecks, PassingCoresAreOfferedBestFirstWithTheirSpeedAgainstTheJobs) {
  const std::string script = std::string(
      "core=${OPENBLAS_CORETYPE:-Prescott}\n"
      "echo core $core; echo dgemm_error 0.01; echo sgemm_error 0.01\n"
      "if [ $core = Prescott ]; then echo dgemm_gflops 10; echo sgemm_gflops 20;\n"
      "else echo dgemm_gflops 40; echo sgemm_gflops 80; fi; echo done\n");
  const KernelOffer offer =
      check_openblas_kernels("libopenblas.so.0", k_avx512, "Prescott", 2, checker(script));
  EXPECT_EQ(offer.offered, (std::vector<std::string>{"SkylakeX", "Zen"}));
  EXPECT_EQ(offer.comment("SkylakeX"), "SkylakeX: DGEMM 4.0x, SGEMM 4.0x, same result");
}

// A study's own list is what is checked: at any level, and a core this CPU lacks is refused.
TEST_F(KernelChecks, AGivenListIsCheckedAloneAndACoreTheCpuCannotRunIsSaid) {
  const std::string script = std::string(
      "core=${OPENBLAS_CORETYPE:-Prescott}\n"
      "echo core $core; echo dgemm_error 0.01; echo sgemm_error 0.01\n"
      "echo dgemm_gflops 20; echo sgemm_gflops 40; echo done\n");
  const std::set<std::string> avx2 = {"pni", "ssse3", "sse4_2", "avx", "avx2", "fma"};
  const KernelOffer offer = check_openblas_kernels("libopenblas.so.0", avx2, "", 3, checker(script),
                                                   {"SkylakeX", "Nehalem"});
  ASSERT_EQ(offer.checked.size(), 1u);
  EXPECT_EQ(offer.checked[0].requested, "Nehalem");
  EXPECT_EQ(offer.offered, std::vector<std::string>{"Nehalem"});
  EXPECT_EQ(offer.refused,
            std::vector<std::string>{"SkylakeX: needs AVX-512, which this CPU lacks"});
}

TEST_F(KernelChecks, ThisMachinesOpenBlasPassesItsOwnCore) {
  const KernelOffer offer = check_openblas_kernels("libopenblas.so.0", probes::read_cpu_flags(),
                                                   "Prescott", 3, TUNE_KERNEL_CHECK);
  ASSERT_TRUE(offer.as_run.ran) << offer.as_run.failure;
  EXPECT_EQ(offer.as_run.core, "Prescott");
  EXPECT_LT(offer.as_run.dgemm_error, 1.0);
  EXPECT_LT(offer.as_run.sgemm_error, 1.0);
  // A CPU with AVX2 runs some AVX2 kernel correctly (Haswell, Zen); every one offered passed.
  if (probes::cpu_isa(probes::read_cpu_flags()) >= probes::IsaLevel::avx2) {
    EXPECT_FALSE(offer.offered.empty());
  }
  for (const auto& core : offer.offered) {
    const auto* c = offer.check_of(core);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(probes::kernel_check_passes(*c));
  }
}

// oneDNN's instruction sets: checked with `--onednn` and ONEDNN_MAX_CPU_ISA, SGEMM alone, its
// best, plain AVX-512 and AVX2 offered (AVX2 can be the faster on a CPU that splits AVX-512).
TEST_F(KernelChecks, OneDnnsInstructionSetsAreCheckedBySgemmAlone) {
  std::set<std::string> zen4 = k_avx512;
  zen4.insert({"avx512_vnni", "avx512_bf16"});
  const std::string script = std::string(
      "[ \"$1\" = --onednn ] || exit 3\n"
      "isa=${ONEDNN_MAX_CPU_ISA:-AVX512_CORE_BF16}\n"
      "echo core $isa; echo sgemm_error 0.01\n"
      "if [ $isa = SSE41 ]; then echo sgemm_gflops 30; else echo sgemm_gflops 90; fi; echo done\n");
  const KernelOffer offer =
      check_kernels("onednn", "libdnnl.so.2", zen4, "SSE41", 3, checker(script));
  ASSERT_TRUE(offer.as_run.ran) << offer.as_run.failure;
  EXPECT_EQ(offer.as_run.core, "SSE41");
  EXPECT_EQ(offer.offered, (std::vector<std::string>{"AVX512_CORE_BF16", "AVX512_CORE", "AVX2"}));
  EXPECT_EQ(offer.comment("AVX2"), "AVX2: SGEMM 3.0x, same result");
  EXPECT_TRUE(offer.refused.empty());
  // An instruction set this oneDNN does not know runs its own choice instead: refused.
  const std::string old = std::string(
      "isa=${ONEDNN_MAX_CPU_ISA:-AVX2}; [ $isa = AVX512_CORE_BF16 ] && isa=AVX512_CORE\n"
      "echo core $isa; echo sgemm_error 0.01; echo sgemm_gflops 50; echo done\n");
  const KernelOffer older = check_kernels("onednn", "libdnnl.so.2", zen4, "", 3, checker(old),
                                          {"AVX512_CORE_BF16", "AVX512_CORE_AMX"});
  EXPECT_TRUE(older.offered.empty());
  EXPECT_EQ(older.refused, (std::vector<std::string>{
                               "AVX512_CORE_AMX: needs AVX-512 with AMX, which this CPU lacks",
                               "AVX512_CORE_BF16: this oneDNN does not know it (it ran "
                               "AVX512_CORE)"}));
}

// OpenBLAS's check must print both precisions: one without DGEMM is no pass.
TEST_F(KernelChecks, AnOpenBlasCheckWithoutDgemmDoesNotPass) {
  const std::string script = std::string(
      "core=${OPENBLAS_CORETYPE:-Prescott}\n"
      "echo core $core; echo sgemm_error 0.01; echo sgemm_gflops 40; echo done\n");
  const KernelOffer offer =
      check_openblas_kernels("libopenblas.so.0", k_avx512, "", 3, checker(script), {"Haswell"});
  EXPECT_TRUE(offer.offered.empty());
  EXPECT_EQ(offer.refused, std::vector<std::string>{"Haswell: the check printed no DGEMM result"});
}

// The real check of this machine's oneDNN (Debian's libdnnl.so.2, which PyTorch maps), capped to
// SSE4.1 as a stale module file would: it runs there, and every instruction set offered passed.
TEST_F(KernelChecks, ThisMachinesOneDnnRunsWhatItIsCappedTo) {
  const KernelOffer offer = check_kernels("onednn", "libdnnl.so.2", probes::read_cpu_flags(),
                                          "SSE41", 3, TUNE_KERNEL_CHECK);
  ASSERT_TRUE(offer.as_run.ran) << offer.as_run.failure;
  EXPECT_EQ(offer.as_run.core, "SSE41");
  EXPECT_FALSE(offer.as_run.has_double);
  EXPECT_LT(offer.as_run.sgemm_error, 1.0);
  if (probes::cpu_isa(probes::read_cpu_flags()) >= probes::IsaLevel::avx2) {
    EXPECT_FALSE(offer.offered.empty()) << ::testing::PrintToString(offer.refused);
  }
  for (const auto& isa : offer.offered) {
    const auto* c = offer.check_of(isa);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(probes::kernel_check_passes(*c));
    EXPECT_EQ(c->core, isa);
  }
}

}  // namespace
}  // namespace tune::tuner
