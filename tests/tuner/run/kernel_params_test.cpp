// A study's `type: kernel` parameter (study_file.h StudySpec::KernelParam): read and checked as
// the file loads, its null leaving OPENBLAS_CORETYPE as the environment has it, and its choices
// taken from the study when it stored them (tuner/run/kernel_params.h, open_study.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "tuner/launch/rendered_launch.h"
#include "tuner/run/kernel_params.h"
#include "tuner/study/open_study.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

constexpr const char* k_study = R"y(name: k
command: [sh, -c, "echo time: 1"]
objective: {regex: "time: ([0-9.]+)"}
env:
  OPENBLAS_CORETYPE: "{core}"
  OMP_NUM_THREADS: "{omp}"
params:
  core: {type: kernel}
  omp: [null, 1]
)y";

const search::CategoricalDistribution& choices_of(const StudySpec& spec, const std::string& name) {
  for (const auto& [n, d] : spec.space)
    if (n == name) return std::get<search::CategoricalDistribution>(d);
  throw std::runtime_error("no such parameter");
}

TEST(KernelParam, ReadWithNullFirstAndItsChoicesFoundAtCreation) {
  const auto spec = parse_study_spec(k_study, "k.yaml");
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_EQ(spec->kernel_params.size(), 1u);
  EXPECT_FALSE(spec->kernel_params[0].resolved);
  EXPECT_TRUE(spec->is_kernel_param("core"));
  EXPECT_EQ(choices_of(*spec, "core").choices.size(), 1u);  // [null] until the study checks
}

TEST(KernelParam, GivenChoicesMustBeOpenBlasCoreTypes) {
  std::string text = k_study;
  text.replace(text.find("core: {type: kernel}"), 20,
               "core: {type: kernel, choices: [SkylakeX, Pentium4]}");
  const auto spec = parse_study_spec(text, "k.yaml");
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().find("k.yaml:8"), std::string::npos) << spec.error();
  EXPECT_NE(spec.error().find("'Pentium4' is not an OpenBLAS core type"), std::string::npos)
      << spec.error();
  text = k_study;
  text.replace(text.find("core: {type: kernel}"), 20, "core: {type: kernel, library: mkl}");
  const auto mkl = parse_study_spec(text, "k.yaml");
  ASSERT_FALSE(mkl);
  EXPECT_NE(mkl.error().find("unknown library 'mkl' (openblas, onednn)"), std::string::npos)
      << mkl.error();
}

// oneDNN's parameter takes its instruction sets (ONEDNN_MAX_CPU_ISA's values), not core types,
// and its stored choices are read as such.
TEST(KernelParam, OneDnnsChoicesAreItsInstructionSets) {
  std::string text = k_study;
  text.replace(text.find("core: {type: kernel}"), 20,
               "core: {type: kernel, library: onednn, choices: [AVX2, SkylakeX]}");
  const auto bad = parse_study_spec(text, "k.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("'SkylakeX' is not an oneDNN instruction set"), std::string::npos)
      << bad.error();
  text = k_study;
  text.replace(text.find("core: {type: kernel}"), 20,
               "core: {type: kernel, library: onednn, choices: [avx2, AVX512_CORE]}");
  auto spec = parse_study_spec(text, "k.yaml");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->kernel_params[0].library, "onednn");
  EXPECT_EQ(spec->kernel_params[0].candidates, (std::vector<std::string>{"avx2", "AVX512_CORE"}));
  const auto resolved = resolve_kernel_params(*spec, nlohmann::json{{"core", {"AVX2"}}});
  ASSERT_TRUE(resolved) << resolved.error();
  ASSERT_EQ(choices_of(*spec, "core").choices.size(), 2u);
  auto other = parse_study_spec(text, "k.yaml");
  const auto wrong = resolve_kernel_params(*other, nlohmann::json{{"core", {"Haswell"}}});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().find("are not oneDNN instruction sets"), std::string::npos)
      << wrong.error();
}

// Choices written in the file are what is checked, not what is offered unchecked.
TEST(KernelParam, GivenChoicesAreCheckedToo) {
  std::string text = k_study;
  text.replace(text.find("core: {type: kernel}"), 20,
               "core: {type: kernel, choices: [Prescott, Nehalem]}");
  auto spec = parse_study_spec(text, "k.yaml");
  ASSERT_TRUE(spec) << spec.error();
  ASSERT_EQ(spec->kernel_params.size(), 1u);
  EXPECT_FALSE(spec->kernel_params[0].resolved);
  EXPECT_EQ(spec->kernel_params[0].candidates, (std::vector<std::string>{"Prescott", "Nehalem"}));
  EXPECT_EQ(choices_of(*spec, "core").choices.size(), 1u);
}

TEST(KernelParam, NullLeavesTheVariableAsTheEnvironmentHasIt) {
  auto spec = parse_study_spec(k_study, "k.yaml");
  ASSERT_TRUE(spec);
  TemplateValues values = {{"core", search::ParamValue{}}, {"omp", search::ParamValue{}}};
  auto rendered = render_launch(*spec, values, false);
  ASSERT_TRUE(rendered) << rendered.error();
  EXPECT_FALSE(rendered->env_set.contains("OPENBLAS_CORETYPE"));
  EXPECT_EQ(std::ranges::count(rendered->env_unset, "OPENBLAS_CORETYPE"), 0);
  EXPECT_EQ(std::ranges::count(rendered->env_unset, "OMP_NUM_THREADS"), 1);  // a pool's null
  values["core"] = std::string("SkylakeX");
  rendered = render_launch(*spec, values, false);
  ASSERT_TRUE(rendered);
  EXPECT_EQ(rendered->env_set.at("OPENBLAS_CORETYPE"), "SkylakeX");
}

TEST(KernelParam, TheStudysStoredChoicesAreUsedWithoutChecking) {
  auto spec = parse_study_spec(k_study, "k.yaml");
  ASSERT_TRUE(spec);
  const nlohmann::json stored = {{"core", {"SkylakeX", "Haswell"}}};
  const auto resolved = resolve_kernel_params(*spec, stored);
  ASSERT_TRUE(resolved) << resolved.error();
  EXPECT_TRUE(resolved->lines.empty());  // nothing was run
  const auto& c = choices_of(*spec, "core");
  ASSERT_EQ(c.choices.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(c.choices[0]));
  EXPECT_EQ(std::get<std::string>(c.choices[1]), "SkylakeX");
  // Stored choices that are not core types are an error naming the parameter.
  auto other = parse_study_spec(k_study, "k.yaml");
  const auto bad = resolve_kernel_params(*other, nlohmann::json{{"core", {"Pentium4"}}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("kernel parameter 'core'"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace tune::tuner
