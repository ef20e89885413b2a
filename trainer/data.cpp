#include "trainer/data.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

namespace tune::trainer {
namespace {

std::expected<std::vector<std::uint8_t>, std::string> read_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    return std::unexpected(path +
                           ": cannot open (install dataset-fashion-mnist or fix --data-dir)");
  std::vector<std::uint8_t> out;
  std::uint8_t buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  bool failed = n < 0;
  gzclose(f);
  if (failed) return std::unexpected(path + ": corrupt gzip stream");
  return out;
}

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         p[3];
}

// splitmix64: a per-sample seed from (seed, epoch, index) so augmentation does not depend on
// which thread builds the sample.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void augment_image(const std::uint8_t* src, std::uint8_t* dst, Augment mode, std::uint64_t seed) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::uniform_real_distribution<float> u(0.f, 1.f);
  cv::Mat in(k_image_side, k_image_side, CV_8UC1, const_cast<std::uint8_t*>(src));
  cv::Mat out(k_image_side, k_image_side, CV_8UC1, dst);
  const bool flip = u(rng) < 0.5f;
  if (mode == Augment::light) {
    // Random crop with 2 px padding (a shift) and a horizontal flip.
    const float dx = std::floor(u(rng) * 5.f) - 2.f, dy = std::floor(u(rng) * 5.f) - 2.f;
    cv::Mat m = (cv::Mat_<double>(2, 3) << (flip ? -1 : 1), 0, (flip ? k_image_side - 1 : 0) + dx,
                 0, 1, dy);
    cv::warpAffine(in, out, m, out.size(), cv::INTER_NEAREST, cv::BORDER_CONSTANT, 0);
    return;
  }
  // Heavy: rotation, scale, shift and flip in one bilinear affine, then blur and noise.
  const double angle = (u(rng) - 0.5) * 30.0, scale = 0.9 + 0.2 * u(rng);
  cv::Mat m = cv::getRotationMatrix2D(cv::Point2f(13.5f, 13.5f), angle, scale);
  m.at<double>(0, 2) += (u(rng) - 0.5) * 6.0;
  m.at<double>(1, 2) += (u(rng) - 0.5) * 6.0;
  if (flip) {  // mirror the output: x' = 27 - x
    for (int c = 0; c < 3; ++c) m.at<double>(0, c) = -m.at<double>(0, c);
    m.at<double>(0, 2) += k_image_side - 1;
  }
  cv::Mat warped;
  cv::warpAffine(in, warped, m, in.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, 0);
  cv::GaussianBlur(warped, warped, cv::Size(3, 3), 0.5 + u(rng));
  cv::Mat noise(in.size(), CV_16SC1);
  cv::randn(noise, 0, 8);  // cv::theRNG is per thread; reseed it for reproducibility
  cv::Mat sum;
  warped.convertTo(sum, CV_16SC1);
  sum += noise;
  sum.convertTo(out, CV_8UC1);
}

}  // namespace

std::expected<Dataset, std::string> load_fashion_mnist(const std::string& dir, bool train) {
  const std::string prefix = dir + (train ? "/train" : "/t10k");
  auto images = read_gzip(prefix + "-images-idx3-ubyte.gz");
  if (!images) return std::unexpected(images.error());
  auto labels = read_gzip(prefix + "-labels-idx1-ubyte.gz");
  if (!labels) return std::unexpected(labels.error());
  auto& im = *images;
  auto& lb = *labels;
  if (im.size() < 16 || be32(im.data()) != 0x803 || be32(im.data() + 8) != k_image_side ||
      be32(im.data() + 12) != k_image_side)
    return std::unexpected(prefix + "-images-idx3-ubyte.gz: not a 28x28 IDX3 image file");
  if (lb.size() < 8 || be32(lb.data()) != 0x801)
    return std::unexpected(prefix + "-labels-idx1-ubyte.gz: not an IDX1 label file");
  const std::uint32_t n = be32(im.data() + 4);
  if (be32(lb.data() + 4) != n || im.size() != 16 + std::size_t(n) * k_image_pixels ||
      lb.size() != 8 + n)
    return std::unexpected(prefix + ": image and label files disagree on the sample count");
  Dataset d;
  d.images.assign(im.begin() + 16, im.end());
  d.labels.assign(lb.begin() + 8, lb.end());
  return d;
}

Dataset make_synthetic(std::int64_t n, std::uint64_t seed) {
  Dataset d;
  d.images.resize(std::size_t(n) * k_image_pixels);
  d.labels.resize(std::size_t(n));
  std::mt19937 proto_rng(static_cast<std::uint32_t>(mix(seed)));
  std::vector<std::uint8_t> protos(k_classes * k_image_pixels);
  for (auto& p : protos) p = (proto_rng() % 4 == 0) ? 200 : 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::mt19937 rng(static_cast<std::uint32_t>(mix(seed ^ mix(std::uint64_t(i)))));
    const int label = static_cast<int>(rng() % k_classes);
    d.labels[i] = static_cast<std::uint8_t>(label);
    for (int p = 0; p < k_image_pixels; ++p) {
      int v = protos[label * k_image_pixels + p] + static_cast<int>(rng() % 96) - 32;
      d.images[i * k_image_pixels + p] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return d;
}

void truncate(Dataset& d, std::int64_t n) {
  if (n <= 0 || n >= d.size()) return;
  d.labels.resize(std::size_t(n));
  d.images.resize(std::size_t(n) * k_image_pixels);
}

void normalise(const std::uint8_t* src, float* dst) {
  constexpr float k_mean = 0.2860f, k_inv_std = 1.0f / 0.3530f;
  for (int p = 0; p < k_image_pixels; ++p) dst[p] = (src[p] * (1.0f / 255.0f) - k_mean) * k_inv_std;
}

DataIterator::DataIterator(const Dataset& data, int batch, int rank, int world, int workers,
                           int prefetch, Augment augment, std::uint64_t seed)
    : m_data(data),
      m_batch(batch),
      m_rank(rank),
      m_world(world),
      m_workers(workers),
      m_augment(augment),
      m_seed(seed),
      m_per_epoch(data.size() / (std::int64_t(batch) * world)) {
  if (m_workers == 0) {
    m_inline.x.resize(std::size_t(batch) * k_image_pixels);
    m_inline.y.resize(std::size_t(batch));
    return;
  }
  const int slots = std::max(prefetch > 0 ? prefetch : 2 * workers, workers);
  m_slots.resize(std::size_t(slots));
  for (auto& s : m_slots) {
    s.batch.x.resize(std::size_t(batch) * k_image_pixels);
    s.batch.y.resize(std::size_t(batch));
  }
  for (int w = 0; w < workers; ++w) m_threads.emplace_back([this, w] { worker_loop(w); });
}

DataIterator::~DataIterator() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  for (auto& t : m_threads) t.join();
}

const std::vector<std::uint32_t>& DataIterator::permutation(std::int64_t epoch) {
  // Two cached epochs: workers run ahead across an epoch boundary while the consumer finishes.
  std::lock_guard lock(m_perm_mutex);
  const int k = static_cast<int>(epoch & 1);
  if (m_perm_epoch[k] != epoch) {
    m_perm[k].resize(std::size_t(m_data.size()));
    std::iota(m_perm[k].begin(), m_perm[k].end(), 0u);
    std::mt19937_64 rng(mix(m_seed * 1000003ULL + std::uint64_t(epoch)));
    std::shuffle(m_perm[k].begin(), m_perm[k].end(), rng);
    m_perm_epoch[k] = epoch;
  }
  return m_perm[k];
}

void DataIterator::build(std::int64_t batch_number, Batch& out) {
  const std::int64_t epoch = batch_number / m_per_epoch, in_epoch = batch_number % m_per_epoch;
  const std::uint32_t* perm = permutation(epoch).data();
  const std::int64_t first = (in_epoch * m_world + m_rank) * m_batch;
  std::uint8_t scratch[k_image_pixels];
  for (int i = 0; i < m_batch; ++i) {
    const std::uint32_t idx = perm[first + i];
    const std::uint8_t* src = m_data.images.data() + std::size_t(idx) * k_image_pixels;
    if (m_augment != Augment::none) {
      const std::uint64_t s = mix(m_seed ^ mix(std::uint64_t(epoch) << 32 ^ idx));
      if (m_augment == Augment::heavy) cv::theRNG().state = s | 1;
      augment_image(src, scratch, m_augment, s);
      src = scratch;
    }
    normalise(src, out.x.data() + std::size_t(i) * k_image_pixels);
    out.y[i] = m_data.labels[idx];
  }
}

void DataIterator::worker_loop(int worker) {
  const auto slots = static_cast<std::int64_t>(m_slots.size());
  for (std::int64_t n = worker;; n += m_workers) {
    Slot* slot = &m_slots[std::size_t(n % slots)];
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [&] { return m_stop || (slot->index == -1 && n < m_consumed + slots); });
      if (m_stop) return;
      slot->index = -2;  // being filled
    }
    build(n, slot->batch);
    {
      std::lock_guard lock(m_mutex);
      slot->index = n;
    }
    m_cv.notify_all();
  }
}

const Batch& DataIterator::next() {
  const std::int64_t n = m_consumed;
  if (m_workers == 0) {
    build(n, m_inline);
    ++m_consumed;
    return m_inline;
  }
  const auto slots = static_cast<std::int64_t>(m_slots.size());
  Slot& slot = m_slots[std::size_t(n % slots)];
  {
    std::unique_lock lock(m_mutex);
    if (m_released >= 0) m_slots[std::size_t(m_released % slots)].index = -1;
    m_cv.notify_all();
    m_cv.wait(lock, [&] { return slot.index == n; });
    m_released = n;
    ++m_consumed;
  }
  m_cv.notify_all();
  return slot.batch;
}

std::expected<std::pair<Dataset, Dataset>, std::string> load_datasets(const Options& o) {
  Dataset train, val;
  if (o.synthetic > 0) {
    train = make_synthetic(o.synthetic, o.seed);
    val = make_synthetic(std::max<std::int64_t>(1000, o.synthetic / 5), o.seed + 0x5eed);
  } else {
    auto t = load_fashion_mnist(o.data_dir, true);
    if (!t) return std::unexpected(t.error());
    auto v = load_fashion_mnist(o.data_dir, false);
    if (!v) return std::unexpected(v.error());
    train = std::move(*t);
    val = std::move(*v);
  }
  truncate(train, o.train_samples);
  truncate(val, o.val_samples);
  return std::pair{std::move(train), std::move(val)};
}

}  // namespace tune::trainer
