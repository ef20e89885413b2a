#include "trainer/data.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <utility>

#include "trainer/thread_names.h"

namespace tune::trainer {
namespace {

// A gzip file read front to back in exactly sized pieces.
class GzipReader {
 public:
  explicit GzipReader(std::string path) : m_path(std::move(path)) {
    m_file = gzopen(m_path.c_str(), "rb");
    if (m_file) gzbuffer(m_file, 1 << 17);
  }
  ~GzipReader() {
    if (m_file) gzclose(m_file);
  }
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  const std::string& path() const { return m_path; }
  std::expected<void, std::string> opened() const {
    if (m_file) return {};
    return std::unexpected(m_path +
                           ": cannot open (install dataset-fashion-mnist or fix --data-dir)");
  }
  // Fills out[0, n) or says why not (a short file, a corrupt stream).
  std::expected<void, std::string> read(std::uint8_t* out, std::size_t n) {
    while (n > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
      const int got = gzread(m_file, out, chunk);
      if (got < 0) return std::unexpected(m_path + ": corrupt gzip stream");
      if (got == 0) return std::unexpected(m_path + ": file ends early");
      out += got;
      n -= static_cast<std::size_t>(got);
    }
    return {};
  }
  // True when nothing follows what was read.
  bool at_end() {
    std::uint8_t extra = 0;
    return gzread(m_file, &extra, 1) == 0;
  }

 private:
  std::string m_path;
  gzFile m_file = nullptr;
};

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

std::expected<Dataset, std::string> load_fashion_mnist(const std::string& dir, bool train,
                                                       std::int64_t limit) {
  const std::string prefix = dir + (train ? "/train" : "/t10k");
  GzipReader images(prefix + "-images-idx3-ubyte.gz"), labels(prefix + "-labels-idx1-ubyte.gz");
  if (auto ok = images.opened(); !ok) return std::unexpected(ok.error());
  if (auto ok = labels.opened(); !ok) return std::unexpected(ok.error());
  std::uint8_t im[16], lb[8];
  if (!images.read(im, sizeof im) || be32(im) != 0x803 || be32(im + 8) != k_image_side ||
      be32(im + 12) != k_image_side)
    return std::unexpected(images.path() + ": not a 28x28 IDX3 image file");
  if (!labels.read(lb, sizeof lb) || be32(lb) != 0x801)
    return std::unexpected(labels.path() + ": not an IDX1 label file");
  const std::uint32_t n = be32(im + 4);
  if (be32(lb + 4) != n)
    return std::unexpected(prefix + ": image and label files disagree on the sample count");
  const bool whole = limit <= 0 || limit >= std::int64_t(n);
  const std::size_t keep = whole ? n : std::size_t(limit);
  Dataset d;
  d.images.resize(keep * k_image_pixels);
  d.labels.resize(keep);
  if (auto ok = images.read(d.images.data(), d.images.size()); !ok)
    return std::unexpected(ok.error() + " (the header promises " + std::to_string(n) + " images)");
  if (auto ok = labels.read(d.labels.data(), d.labels.size()); !ok)
    return std::unexpected(ok.error() + " (the header promises " + std::to_string(n) + " labels)");
  // Trailing bytes can only be seen by reading to the end: checked when everything is wanted.
  if (whole && (!images.at_end() || !labels.at_end()))
    return std::unexpected(prefix + ": image and label files disagree on the sample count");
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

void DataIterator::permutation_slice(std::int64_t epoch, std::int64_t first, std::uint32_t* out) {
  // Two cached epochs: workers run ahead across an epoch boundary while the consumer finishes.
  // The slice is copied under the lock: when the prefetch slots span more than two epochs (few
  // batches per epoch), a worker on epoch e+2 reshuffles the entry a worker on epoch e reads.
  std::lock_guard lock(m_perm_mutex);
  const int k = static_cast<int>(epoch & 1);
  if (m_perm_epoch[k] != epoch) {
    m_perm[k].resize(std::size_t(m_data.size()));
    std::iota(m_perm[k].begin(), m_perm[k].end(), 0u);
    std::mt19937_64 rng(mix(m_seed * 1000003ULL + std::uint64_t(epoch)));
    std::shuffle(m_perm[k].begin(), m_perm[k].end(), rng);
    m_perm_epoch[k] = epoch;
  }
  std::copy_n(m_perm[k].begin() + first, m_batch, out);
}

void DataIterator::build(std::int64_t batch_number, Batch& out) {
  const std::int64_t epoch = batch_number / m_per_epoch, in_epoch = batch_number % m_per_epoch;
  const std::int64_t first = (in_epoch * m_world + m_rank) * m_batch;
  std::vector<std::uint32_t> perm(static_cast<std::size_t>(m_batch));
  permutation_slice(epoch, first, perm.data());
  std::uint8_t scratch[k_image_pixels];
  for (int i = 0; i < m_batch; ++i) {
    const std::uint32_t idx = perm[std::size_t(i)];
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
  name_this_thread("tt-iter");
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
    // Truncation keeps the first samples and the iterator shuffles what is kept, so reading only
    // that prefix gives the same data as loading everything and truncating.
    auto t = load_fashion_mnist(o.data_dir, true, o.train_samples);
    if (!t) return std::unexpected(t.error());
    train = std::move(*t);
    if (!o.benchmark) {
      auto v = load_fashion_mnist(o.data_dir, false, o.val_samples);
      if (!v) return std::unexpected(v.error());
      val = std::move(*v);
    }
  }
  truncate(train, o.train_samples);
  truncate(val, o.val_samples);
  return std::pair{std::move(train), std::move(val)};
}

}  // namespace tune::trainer
