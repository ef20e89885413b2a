// The exported script's check of the winning kernel on the node it runs on
// (tuner/export/kernel_export.h): one check per kernel parameter the trial set, with the library
// the trial's ranks mapped, `--onednn` for oneDNN's instruction set; nothing for a null.
#include <gtest/gtest.h>

#include "tuner/base/trial_attrs.h"
#include "tuner/export/kernel_export.h"

namespace tune::tuner {
namespace {

StudySpec two_kernels() {
  StudySpec spec;
  StudySpec::KernelParam blas;
  blas.name = "core";
  StudySpec::KernelParam onednn;
  onednn.name = "isa";
  onednn.library = "onednn";
  spec.kernel_params = {blas, onednn};
  return spec;
}

TEST(KernelExport, EachKernelTheTrialSetIsCheckedWithTheLibraryItsRanksMapped) {
  search::FrozenTrial trial;
  trial.system_attrs[k_attr_probe_libraries] = {
      {"cpu", "AVX-512"},
      {"libraries",
       {{{"kind", "onednn"}, {"path", "/usr/lib/x86_64-linux-gnu/libdnnl.so.2.6"}},
        {{"kind", "openblas"}, {"path", "/usr/lib/libopenblasp-r0.3.21.so"}}}}};
  const std::string s = kernel_checks(two_kernels(), trial,
                                      {{"ONEDNN_MAX_CPU_ISA", "AVX2"}, {"OMP_NUM_THREADS", "1"}});
  EXPECT_NE(s.find("ONEDNN_MAX_CPU_ISA=AVX2 \"$tune_kernel_check\" --onednn --expect AVX2 "
                   "/usr/lib/x86_64-linux-gnu/libdnnl.so.2.6 || {"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("OPENBLAS_CORETYPE"), std::string::npos) << s;  // null: the node's own
  EXPECT_EQ(s.find("tune_kernel_check=$("), s.rfind("tune_kernel_check=$("));  // found once
  const std::string both = kernel_checks(
      two_kernels(), trial, {{"ONEDNN_MAX_CPU_ISA", "AVX2"}, {"OPENBLAS_CORETYPE", "SkylakeX"}});
  EXPECT_NE(both.find("OPENBLAS_CORETYPE=SkylakeX \"$tune_kernel_check\" --expect SkylakeX "
                      "/usr/lib/libopenblasp-r0.3.21.so"),
            std::string::npos)
      << both;
  EXPECT_EQ(kernel_checks(two_kernels(), trial, {}), "");
  // A hostile value is quoted, never a command.
  const std::string hostile = kernel_checks(two_kernels(), search::FrozenTrial{},
                                            {{"ONEDNN_MAX_CPU_ISA", "AVX2; rm -rf ~"}});
  EXPECT_NE(hostile.find("--expect 'AVX2; rm -rf ~' libdnnl.so.2"), std::string::npos) << hostile;
}

}  // namespace
}  // namespace tune::tuner
