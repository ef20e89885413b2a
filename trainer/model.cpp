#include "trainer/model.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "trainer/data.h"
#include "trainer/softmax_xent.h"

namespace tune::trainer {
namespace {

// OpenMP fork/join costs microseconds; below this much work a loop stays on the calling thread.
constexpr std::size_t k_omp_min_work = 1 << 14;

// dY *= (Y > 0) when relu, and db = column sums of dY; rows x cols row-major. Column blocks run in
// parallel so each thread owns its db entries and inner loops stay contiguous (vectorised).
void relu_backward_bias(float* dy, const float* y, float* db, std::size_t rows, int cols,
                        bool relu) {
  constexpr int k_block = 64;
  const int blocks = (cols + k_block - 1) / k_block;
#pragma omp parallel for schedule(static) if (rows * cols > k_omp_min_work)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * k_block, c1 = std::min(cols, c0 + k_block);
    float acc[k_block] = {};
    for (std::size_t r = 0; r < rows; ++r) {
      float* d = dy + r * cols;
      const float* o = y + r * cols;
      if (relu) {
        for (int c = c0; c < c1; ++c) {
          d[c] = o[c] > 0.f ? d[c] : 0.f;
          acc[c - c0] += d[c];
        }
      } else {
        for (int c = c0; c < c1; ++c) acc[c - c0] += d[c];
      }
    }
    for (int c = c0; c < c1; ++c) db[c] = acc[c - c0];
  }
}

void bias_relu(float* y, const float* b, std::size_t rows, int cols, bool relu) {
#pragma omp parallel for schedule(static) if (rows * cols > k_omp_min_work)
  for (std::size_t r = 0; r < rows; ++r) {
    float* o = y + r * cols;
    if (relu) {
      for (int c = 0; c < cols; ++c) o[c] = std::max(o[c] + b[c], 0.f);
    } else {
      for (int c = 0; c < cols; ++c) o[c] += b[c];
    }
  }
}

}  // namespace

Model::Model(ModelKind kind, const std::vector<int>& hidden, int max_batch, std::uint64_t seed)
    : m_max_batch(max_batch) {
  std::size_t n_params = 0;
  auto add = [&](Layer l) {
    if (l.kind != Kind::pool) {
      const std::size_t fan_in = l.kind == Kind::dense ? l.in : std::size_t(l.k) * l.k * l.in;
      l.w_off = n_params;
      l.b_off = n_params + fan_in * l.out;
      n_params = l.b_off + l.out;
    }
    m_layers.push_back(std::move(l));
  };
  int features = k_image_pixels;
  if (kind == ModelKind::cnn) {
    int side = k_image_side, channels = 1;
    for (int filters : {16, 32}) {
      Layer c;
      c.kind = Kind::conv;
      c.in = channels, c.out = filters, c.h = side, c.w = side, c.k = 5, c.relu = true;
      c.in_size = std::size_t(side) * side * channels,
      c.out_size = std::size_t(side) * side * filters;
      add(c);
      Layer p;
      p.kind = Kind::pool;
      p.in = p.out = filters, p.h = side, p.w = side, p.k = 2;
      p.in_size = c.out_size, p.out_size = std::size_t(side / 2) * (side / 2) * filters;
      add(p);
      side /= 2, channels = filters;
    }
    features = side * side * channels;
  }
  std::vector<int> widths = hidden;
  widths.push_back(k_classes);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    Layer d;
    d.kind = Kind::dense;
    d.in = features, d.out = widths[i], d.relu = i + 1 < widths.size();
    d.in_size = std::size_t(features), d.out_size = std::size_t(widths[i]);
    add(d);
    features = widths[i];
  }
  m_w.params.assign(n_params, 0.f);
  m_w.grads.assign(n_params, 0.f);
  // He initialisation, identical on every rank for a given seed.
  std::mt19937_64 rng(seed * 7919 + 17);
  std::size_t max_act = k_image_pixels, max_col = 0;
  for (auto& l : m_layers) {
    l.act.assign(std::size_t(max_batch) * l.out_size, 0.f);
    max_act = std::max(max_act, l.out_size);
    if (l.kind == Kind::pool) l.argmax.assign(std::size_t(max_batch) * l.out_size, 0);
    if (l.kind == Kind::pool) continue;
    const std::size_t fan_in = l.kind == Kind::dense ? l.in : std::size_t(l.k) * l.k * l.in;
    if (l.kind == Kind::conv) {
      l.col.assign(std::size_t(max_batch) * l.h * l.w * fan_in, 0.f);
      max_col = std::max(max_col, l.col.size());
    }
    std::normal_distribution<float> dist(0.f, std::sqrt(2.f / static_cast<float>(fan_in)));
    for (std::size_t i = 0; i < fan_in * l.out; ++i) m_w.params[l.w_off + i] = dist(rng);
  }
  m_dcol.assign(max_col, 0.f);
  m_d0.assign(std::size_t(max_batch) * max_act, 0.f);
  m_d1.assign(m_d0.size(), 0.f);
}

double Model::flops_per_sample() const {
  double f = 0;
  for (auto& l : m_layers) {
    if (l.kind == Kind::dense) f += 6.0 * l.in * l.out;
    if (l.kind == Kind::conv) f += 6.0 * l.h * l.w * l.k * l.k * l.in * l.out;
  }
  return f;
}

void Model::forward(const float* x, int n) {
  const float* in = x;
  for (auto& l : m_layers) {
    const float* w = m_w.params.data() + l.w_off;
    const float* b = m_w.params.data() + l.b_off;
    float* out = l.act.data();
    if (l.kind == Kind::dense) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, l.out, l.in, 1.f, in, l.in, w,
                  l.out, 0.f, out, l.out);
      bias_relu(out, b, std::size_t(n), l.out, l.relu);
    } else if (l.kind == Kind::conv) {
      const int kk = l.k * l.k * l.in, pad = l.k / 2;
      // im2col: one row per output pixel, [ky][kx][c] columns, zeros outside the image.
#pragma omp parallel for schedule(static)
      for (int s = 0; s < n; ++s) {
        const float* img = in + std::size_t(s) * l.in_size;
        float* col = l.col.data() + std::size_t(s) * l.h * l.w * kk;
        for (int yy = 0; yy < l.h; ++yy)
          for (int xx = 0; xx < l.w; ++xx) {
            float* row = col + (std::size_t(yy) * l.w + xx) * kk;
            for (int ky = 0; ky < l.k; ++ky) {
              const int iy = yy + ky - pad;
              for (int kx = 0; kx < l.k; ++kx) {
                const int ix = xx + kx - pad;
                float* dst = row + (ky * l.k + kx) * l.in;
                if (iy < 0 || iy >= l.h || ix < 0 || ix >= l.w) {
                  std::fill(dst, dst + l.in, 0.f);
                } else {
                  const float* src = img + (std::size_t(iy) * l.w + ix) * l.in;
                  std::copy(src, src + l.in, dst);
                }
              }
            }
          }
      }
      const int rows = n * l.h * l.w;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, l.out, kk, 1.f, l.col.data(), kk,
                  w, l.out, 0.f, out, l.out);
      bias_relu(out, b, std::size_t(rows), l.out, l.relu);
    } else {
      const int oh = l.h / 2, ow = l.w / 2, c = l.in;
#pragma omp parallel for schedule(static)
      for (int s = 0; s < n; ++s) {
        const float* img = in + std::size_t(s) * l.in_size;
        float* o = out + std::size_t(s) * l.out_size;
        int* am = l.argmax.data() + std::size_t(s) * l.out_size;
        for (int yy = 0; yy < oh; ++yy)
          for (int xx = 0; xx < ow; ++xx)
            for (int ch = 0; ch < c; ++ch) {
              int best = ((2 * yy) * l.w + 2 * xx) * c + ch;
              for (int dy = 0; dy < 2; ++dy)
                for (int dx = 0; dx < 2; ++dx) {
                  const int idx = ((2 * yy + dy) * l.w + 2 * xx + dx) * c + ch;
                  if (img[idx] > img[best]) best = idx;
                }
              const std::size_t oi = (std::size_t(yy) * ow + xx) * c + ch;
              o[oi] = img[best];
              am[oi] = best;
            }
      }
    }
    in = out;
  }
}

StepStats Model::loss(const int* y, int n, float grad_scale, bool want_grad) {
  Layer& last = m_layers.back();
  const float* logits = last.act.data();
  double loss_sum = 0, correct = 0;
#pragma omp parallel for reduction(+ : loss_sum, correct) schedule(static) if (n >= 64)
  for (int s = 0; s < n; ++s) {
    float e[k_classes];
    const SoftmaxXent r = softmax_xent_row<k_classes>(logits + std::size_t(s) * k_classes, y[s], e);
    loss_sum += r.loss;
    correct += r.argmax == y[s];
    if (want_grad) {
      float* d = m_d0.data() + std::size_t(s) * k_classes;
      const float inv = grad_scale / r.sum;
      for (int c = 0; c < k_classes; ++c) d[c] = e[c] * inv;
      d[y[s]] -= grad_scale;
    }
  }
  return {loss_sum, correct};
}

void Model::backward(const float* x, int n) {
  // m_d0 holds d(loss)/d(output of layer i); each layer writes d/d(its input) to m_d1, then swap.
  float* dy = m_d0.data();
  float* dx = m_d1.data();
  for (int i = static_cast<int>(m_layers.size()) - 1; i >= 0; --i) {
    Layer& l = m_layers[std::size_t(i)];
    const float* in = i == 0 ? x : m_layers[std::size_t(i) - 1].act.data();
    const bool need_dx = i > 0;
    const float* w = m_w.params.data() + l.w_off;
    float* gw = m_w.grads.data() + l.w_off;
    float* gb = m_w.grads.data() + l.b_off;
    if (l.kind == Kind::dense) {
      relu_backward_bias(dy, l.act.data(), gb, std::size_t(n), l.out, l.relu);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l.in, l.out, n, 1.f, in, l.in, dy, l.out,
                  0.f, gw, l.out);
      if (need_dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, l.in, l.out, 1.f, dy, l.out, w,
                    l.out, 0.f, dx, l.in);
    } else if (l.kind == Kind::conv) {
      const int kk = l.k * l.k * l.in, rows = n * l.h * l.w, pad = l.k / 2;
      relu_backward_bias(dy, l.act.data(), gb, std::size_t(rows), l.out, l.relu);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kk, l.out, rows, 1.f, l.col.data(), kk,
                  dy, l.out, 0.f, gw, l.out);
      if (need_dx) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kk, l.out, 1.f, dy, l.out, w,
                    l.out, 0.f, m_dcol.data(), kk);
#pragma omp parallel for schedule(static)
        for (int s = 0; s < n; ++s) {
          float* img = dx + std::size_t(s) * l.in_size;
          std::fill(img, img + l.in_size, 0.f);
          const float* col = m_dcol.data() + std::size_t(s) * l.h * l.w * kk;
          for (int yy = 0; yy < l.h; ++yy)
            for (int xx = 0; xx < l.w; ++xx) {
              const float* row = col + (std::size_t(yy) * l.w + xx) * kk;
              for (int ky = 0; ky < l.k; ++ky) {
                const int iy = yy + ky - pad;
                if (iy < 0 || iy >= l.h) continue;
                for (int kx = 0; kx < l.k; ++kx) {
                  const int ix = xx + kx - pad;
                  if (ix < 0 || ix >= l.w) continue;
                  float* dst = img + (std::size_t(iy) * l.w + ix) * l.in;
                  const float* src = row + (ky * l.k + kx) * l.in;
                  for (int c = 0; c < l.in; ++c) dst[c] += src[c];
                }
              }
            }
        }
      }
    } else {
#pragma omp parallel for schedule(static)
      for (int s = 0; s < n; ++s) {
        float* img = dx + std::size_t(s) * l.in_size;
        std::fill(img, img + l.in_size, 0.f);
        const float* d = dy + std::size_t(s) * l.out_size;
        const int* am = l.argmax.data() + std::size_t(s) * l.out_size;
        for (std::size_t o = 0; o < l.out_size; ++o) img[am[o]] += d[o];
      }
    }
    std::swap(dy, dx);
  }
}

StepStats Model::train_step(const float* x, const int* y, int n, float grad_scale) {
  forward(x, n);
  StepStats s = loss(y, n, grad_scale, true);
  backward(x, n);
  return s;
}

StepStats Model::evaluate(const float* x, const int* y, int n) {
  forward(x, n);
  return loss(y, n, 0.f, false);
}

Optimizer::Optimizer(OptimizerKind kind, std::size_t n, float lr, float momentum)
    : m_kind(kind), m_lr(lr), m_momentum(momentum), m_m(n, 0.f) {
  if (kind == OptimizerKind::adam) m_v.assign(n, 0.f);
}

void Optimizer::step(float* params, const float* grads) {
  const auto n = static_cast<std::int64_t>(m_m.size());
  float* m = m_m.data();
  if (m_kind == OptimizerKind::momentum) {
    // Chainer's MomentumSGD: v = mu v - lr g; p += v.
    const float lr = m_lr, mu = m_momentum;
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      m[i] = mu * m[i] - lr * grads[i];
      params[i] += m[i];
    }
    return;
  }
  adam_step(params, grads);
}

void Optimizer::step_ahead(float* params, const float* grads, const float* local, float local_scale,
                           float* ahead) {
  const auto n = static_cast<std::int64_t>(m_m.size());
  if (m_kind == OptimizerKind::adam) {
    if (grads) adam_step(params, grads);
    std::copy(params, params + n, ahead);
    return;
  }
  float* m = m_m.data();
  const float lr = m_lr, mu = m_momentum, local_lr = m_lr * local_scale;
  if (grads) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      m[i] = mu * m[i] - lr * grads[i];
      params[i] += m[i];
      ahead[i] = params[i] + mu * m[i] - local_lr * local[i];
    }
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) ahead[i] = params[i] + mu * m[i] - local_lr * local[i];
}

void Optimizer::adam_step(float* params, const float* grads) {
  const auto n = static_cast<std::int64_t>(m_m.size());
  float* m = m_m.data();
  ++m_t;
  constexpr float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const float c1 = 1.f - std::pow(b1, float(m_t)), c2 = 1.f - std::pow(b2, float(m_t));
  const float step = m_lr * std::sqrt(c2) / c1;
  float* v = m_v.data();
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1.f - b1) * grads[i];
    v[i] = b2 * v[i] + (1.f - b2) * grads[i] * grads[i];
    params[i] -= step * m[i] / (std::sqrt(v[i]) + eps);
  }
}

}  // namespace tune::trainer
