// Model: analytic gradients match central differences (MLP and CNN), the sizes and FLOP count
// are what the roofline assumes, and the optimisers follow their update rules.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "trainer/data.h"
#include "trainer/model.h"

namespace tune::trainer {
namespace {

struct Inputs {
  std::vector<float> x;
  std::vector<int> y;
};

Inputs random_inputs(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  Inputs in{std::vector<float>(std::size_t(n) * k_image_pixels), std::vector<int>(std::size_t(n))};
  for (auto& v : in.x) v = g(rng);
  for (auto& l : in.y) l = static_cast<int>(rng() % k_classes);
  return in;
}

void check_gradients(ModelKind kind, std::vector<int> hidden, int n, int probes) {
  Model model(kind, hidden, n, 3);
  const Inputs in = random_inputs(n, 4);
  model.train_step(in.x.data(), in.y.data(), n, 1.f);
  const std::vector<float> analytic(model.grads(), model.grads() + model.num_params());
  std::mt19937 rng(9);
  int checked = 0, bad = 0;
  std::string examples;
  for (int k = 0; k < probes; ++k) {
    const std::size_t i = rng() % model.num_params();
    // eps 1e-3: large enough above float noise in the loss sum, small enough that a probe rarely
    // crosses a ReLU kink (at 1e-2 about 8% did).
    const float saved = model.params()[i], eps = 1e-3f;
    model.params()[i] = saved + eps;
    const double up = model.evaluate(in.x.data(), in.y.data(), n).loss_sum;
    model.params()[i] = saved - eps;
    const double down = model.evaluate(in.x.data(), in.y.data(), n).loss_sum;
    model.params()[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    ++checked;
    // A probe may straddle a ReLU kink; allow a few, never many.
    if (std::fabs(numeric - analytic[i]) > 5e-3 + 2e-2 * std::fabs(analytic[i])) {
      ++bad;
      examples += " [param " + std::to_string(i) + ": numeric " + std::to_string(numeric) +
                  ", analytic " + std::to_string(analytic[i]) + "]";
    }
  }
  EXPECT_LE(bad, checked / 50) << bad << " of " << checked
                               << " gradient entries disagree:" << examples;
  double norm = 0;
  for (float g : analytic) norm += g * g;
  EXPECT_GT(norm, 0.0);
}

TEST(Model, MlpGradientsMatchFiniteDifferences) {
  check_gradients(ModelKind::mlp, {24, 16}, 5, 400);
}

TEST(Model, CnnGradientsMatchFiniteDifferences) { check_gradients(ModelKind::cnn, {12}, 2, 100); }

TEST(Model, GradScaleScalesLinearly) {
  Model a(ModelKind::mlp, {8}, 4, 1), b(ModelKind::mlp, {8}, 4, 1);
  const Inputs in = random_inputs(4, 2);
  const StepStats sa = a.train_step(in.x.data(), in.y.data(), 4, 1.f);
  const StepStats sb = b.train_step(in.x.data(), in.y.data(), 4, 0.25f);
  EXPECT_DOUBLE_EQ(sa.loss_sum, sb.loss_sum);
  for (std::size_t i = 0; i < a.num_params(); ++i)
    ASSERT_NEAR(b.grads()[i], 0.25f * a.grads()[i], 1e-6f);
}

TEST(Model, SizesAndFlopsOfTheDefaultMlp) {
  Model m(ModelKind::mlp, {1000, 1000}, 1, 1);
  EXPECT_EQ(m.num_params(), 784u * 1000 + 1000 + 1000u * 1000 + 1000 + 1000u * 10 + 10);
  EXPECT_DOUBLE_EQ(m.flops_per_sample(), 6.0 * (784 * 1000 + 1000 * 1000 + 1000 * 10));
  std::vector<float> other(m.num_params(), 7.f);
  m.weights().grads.swap(other);
  EXPECT_EQ(m.grads()[0], 7.f);
}

TEST(Optimizer, MomentumFollowsChainerRule) {
  Optimizer opt(OptimizerKind::momentum, 2, 0.1f, 0.9f);
  float p[2] = {1.f, -1.f};
  const float g[2] = {0.5f, -2.f};
  opt.step(p, g);  // v = -0.05, 0.2
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -0.8f);
  opt.step(p, g);  // v = 0.9v - lr g = -0.095, 0.38
  EXPECT_FLOAT_EQ(p[0], 0.855f);
  EXPECT_FLOAT_EQ(p[1], -0.42f);
}

TEST(Optimizer, AdamFirstStepIsLrTimesSign) {
  Optimizer opt(OptimizerKind::adam, 2, 0.01f, 0.f);
  float p[2] = {0.f, 0.f};
  const float g[2] = {3.f, -0.5f};
  opt.step(p, g);
  EXPECT_NEAR(p[0], -0.01f, 1e-6f);
  EXPECT_NEAR(p[1], 0.01f, 1e-6f);
}

TEST(Model, LearnsTheSyntheticSet) {
  const Dataset d = make_synthetic(2000, 1);
  Model m(ModelKind::mlp, {64}, 50, 1);
  Optimizer opt(OptimizerKind::momentum, m.num_params(), 0.05f, 0.9f);
  DataIterator it(d, 50, 0, 1, 0, 0, Augment::none, 1);
  double correct_last = 0;
  for (int step = 0; step < 80; ++step) {
    const Batch& b = it.next();
    const StepStats s = m.train_step(b.x.data(), b.y.data(), 50, 1.f / 50);
    opt.step(m.params(), m.grads());
    if (step >= 70) correct_last += s.correct;
  }
  EXPECT_GT(correct_last / (10 * 50), 0.9);
}

}  // namespace
}  // namespace tune::trainer
