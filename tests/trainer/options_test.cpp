// parse_options: defaults the tuner and the probes rely on, both flag spellings, and one clear
// error line per kind of mistake.
#include <gtest/gtest.h>

#include "trainer/options.h"

namespace tune::trainer {
namespace {

std::expected<Options, std::string> parse(std::vector<std::string> args) {
  return parse_options(args);
}

TEST(Options, DefaultsMatchWhatTheProbesPredict) {
  auto o = parse({"--out", "/tmp/x", "--synthetic", "100"});
  ASSERT_TRUE(o) << o.error();
  EXPECT_EQ(o->iterator_workers, 2);
  EXPECT_EQ(o->omp_threads, 0);  // library default left alone
  EXPECT_EQ(o->blas_threads, 0);
  EXPECT_EQ(o->opencv_threads, -1);
  EXPECT_EQ(o->batch_size, 100);
  EXPECT_EQ(o->hidden, (std::vector<int>{1000, 1000}));
  EXPECT_EQ(o->allreduce, Algorithm::mpi);
  EXPECT_EQ(o->grad_dtype, GradDtype::fp32);
  EXPECT_FLOAT_EQ(o->lr, 0.05f);
  EXPECT_FLOAT_EQ(o->momentum, 0.9f);
}

TEST(Options, QuickstartFlagsParse) {
  auto o = parse({"--out=/tmp/t1", "--data-dir=/usr/share/datasets/fashion-mnist",
                  "--train-samples=12000", "--epochs=1", "--batch-size=100", "--benchmark",
                  "--iterator-workers=0", "--augment=light", "--allreduce=rabenseifner",
                  "--grad-dtype=fp16", "--bucket-mb=0.75"});
  ASSERT_TRUE(o) << o.error();
  EXPECT_EQ(o->out_dir, "/tmp/t1");
  EXPECT_EQ(o->train_samples, 12000);
  EXPECT_TRUE(o->benchmark);
  EXPECT_EQ(o->iterator_workers, 0);
  EXPECT_EQ(o->augment, Augment::light);
  EXPECT_EQ(o->allreduce, Algorithm::rabenseifner);
  EXPECT_EQ(o->grad_dtype, GradDtype::fp16);
  EXPECT_DOUBLE_EQ(o->bucket_mb, 0.75);
}

TEST(Options, SpaceSeparatedValuesAndLists) {
  auto o =
      parse({"--out", "d", "--synthetic", "10", "--hidden", "64,32,16", "--grad-dtype", "1bit",
             "--model", "cnn", "--optimizer", "adam", "--warm-start", "500", "--double-buffering"});
  ASSERT_TRUE(o) << o.error();
  EXPECT_EQ(o->hidden, (std::vector<int>{64, 32, 16}));
  EXPECT_EQ(o->grad_dtype, GradDtype::one_bit);
  EXPECT_EQ(o->model, ModelKind::cnn);
  EXPECT_EQ(o->optimizer, OptimizerKind::adam);
  EXPECT_EQ(o->warm_start, 500);
  EXPECT_TRUE(o->double_buffering);
  EXPECT_FLOAT_EQ(o->momentum, 0.5f);  // the compressed-gradient default (1bit)
  auto explicit_momentum =
      parse({"--out", "d", "--synthetic", "10", "--grad-dtype=1bit", "--momentum", "0.8"});
  ASSERT_TRUE(explicit_momentum);
  EXPECT_FLOAT_EQ(explicit_momentum->momentum, 0.8f);
  // The pipeline compensates its one-step delay (sync.h), so it keeps the usual momentum.
  auto pipelined = parse({"--out", "d", "--synthetic", "10", "--double-buffering"});
  ASSERT_TRUE(pipelined);
  EXPECT_FLOAT_EQ(pipelined->momentum, 0.9f);
}

TEST(Options, BlockMomentumFlags) {
  auto defaults = parse({"--out", "d", "--synthetic", "10"});
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->sync, SyncKind::sgd);
  EXPECT_LT(defaults->block_momentum, 0.f);  // 1 - 1/ranks, decided once the rank count is known
  auto o = parse({"--out", "d", "--synthetic", "10", "--sync", "block", "--block-steps=16",
                  "--block-momentum", "0.75", "--block-lr=0.5", "--block-nesterov"});
  ASSERT_TRUE(o) << o.error();
  EXPECT_EQ(o->sync, SyncKind::block);
  EXPECT_EQ(o->block_steps, 16);
  EXPECT_FLOAT_EQ(o->block_momentum, 0.75f);
  EXPECT_FLOAT_EQ(o->block_lr, 0.5f);
  EXPECT_TRUE(o->block_nesterov);
}

struct BadCase {
  std::vector<std::string> args;
  std::string expected;  // a substring of the one-line error
};

// Shown in test names and failures as the arguments, not as raw bytes.
void PrintTo(const BadCase& c, std::ostream* os) {
  for (const auto& a : c.args) *os << a << ' ';
}

class OptionsError : public testing::TestWithParam<BadCase> {};

TEST_P(OptionsError, NamesTheFlagAndTheFix) {
  auto o = parse(GetParam().args);
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().find(GetParam().expected), std::string::npos) << o.error();
  EXPECT_EQ(o.error().find('\n'), std::string::npos) << "one line: " << o.error();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OptionsError,
    testing::Values(
        BadCase{{"--synthetic", "10"}, "--out DIR is required"},
        BadCase{{"--out", "d"}, "--data-dir DIR or --synthetic N"},
        BadCase{{"--out", "d", "--synthetic", "5", "--data-dir", "x"}, "exclude each other"},
        BadCase{{"--out", "d", "--synthetic", "5", "--batch-size", "0"},
                "--batch-size: invalid value '0'"},
        BadCase{{"--out", "d", "--synthetic", "5", "--batch-size=12x"}, "an integer >= 1"},
        BadCase{{"--out", "d", "--synthetic", "5", "--lr", "-1"}, "--lr: invalid value '-1'"},
        BadCase{{"--out", "d", "--synthetic", "5", "--bucket-mb", "abc"}, "--bucket-mb"},
        BadCase{{"--out", "d", "--synthetic", "5", "--allreduce", "tree"},
                "expected hierarchical|mpi|nccl|rabenseifner|ring"},
        BadCase{{"--out", "d", "--synthetic", "5", "--grad-dtype", "int8"}, "fp16|fp32"},
        BadCase{{"--out", "d", "--synthetic", "5", "--hidden", "10,,3"}, "comma-separated"},
        BadCase{{"--out", "d", "--synthetic", "5", "--epochs"}, "--epochs needs a value"},
        BadCase{{"--out", "d", "--synthetic", "5", "--benchmark=1"}, "--benchmark takes no value"},
        BadCase{{"--out", "d", "--synthetic", "5", "--frobnicate", "1"},
                "unknown flag --frobnicate"},
        BadCase{{"--out", "d", "--synthetic", "5", "stray"}, "unexpected argument 'stray'"},
        BadCase{{"--out", "d", "--synthetic", "5", "--allreduce", "nccl"}, "needs --device cuda"},
        BadCase{{"--out", "d", "--synthetic", "5", "--sync", "local"}, "expected block|sgd"},
        BadCase{{"--out", "d", "--synthetic", "5", "--block-steps", "0"}, "--block-steps"},
        BadCase{{"--out", "d", "--synthetic", "5", "--block-momentum", "1"}, "must be < 1"},
        BadCase{{"--out", "d", "--synthetic", "5", "--block-lr", "0"}, "--block-lr"},
        BadCase{{"--out", "d", "--synthetic", "5", "--sync=block", "--double-buffering"},
                "use it with --sync sgd"}));

TEST(Options, HelpIsNotAnError) {
  auto o = parse({"--help"});
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error(), "help");
  EXPECT_NE(usage().find("--iterator-workers"), std::string::npos);
}

}  // namespace
}  // namespace tune::trainer
