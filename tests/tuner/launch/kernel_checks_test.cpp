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

}  // namespace
}  // namespace tune::tuner
