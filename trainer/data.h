// Training data: a Dataset (Fashion-MNIST or generated images and labels) and a DataIterator
// that turns it into normalised float batches for one rank, on the caller's thread or N workers.
// A DataIterator has one consumer thread; the Dataset is read-only and must outlive it.
// Design: docs/design-notes.md#trainerdatah
#pragma once

#include <condition_variable>
#include <cstdint>
#include <expected>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "trainer/options.h"

namespace tune::trainer {

inline constexpr int k_image_side = 28;
inline constexpr int k_image_pixels = k_image_side * k_image_side;
inline constexpr int k_classes = 10;

struct Dataset {
  std::vector<std::uint8_t> images;  // size() * k_image_pixels, row-major
  std::vector<std::uint8_t> labels;
  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
};

// Reads DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz: the first `limit` samples only
// (limit <= 0: all), decompressing no further than those, since a trial's start-up pays for every
// byte inflated. The same first samples as reading everything and truncating.
std::expected<Dataset, std::string> load_fashion_mnist(const std::string& dir, bool train,
                                                       std::int64_t limit = 0);

// Learnable, deterministic: each class is a fixed random stroke pattern plus per-sample noise.
Dataset make_synthetic(std::int64_t n, std::uint64_t seed);

// The training and validation sets --data-dir or --synthetic names, cut to --train-samples and
// --val-samples (synthetic validation: max(1000, N/5) samples from another seed). With
// --benchmark nothing is evaluated, so the validation set is left empty and not read at all.
std::expected<std::pair<Dataset, Dataset>, std::string> load_datasets(const Options& options);

// Keeps the first n samples (n <= 0 or n >= size: unchanged).
void truncate(Dataset& d, std::int64_t n);

struct Batch {
  std::vector<float> x;  // batch * k_image_pixels, normalised
  std::vector<int> y;
};

// Normalises one image the same way for training and validation (Fashion-MNIST mean/std).
void normalise(const std::uint8_t* src, float* dst);

class DataIterator {
 public:
  // Each global batch takes batch*world consecutive indices of the epoch's permutation (shared by
  // all ranks, seeded by seed+epoch); this rank reads its slice of batch samples.
  DataIterator(const Dataset& data, int batch, int rank, int world, int workers, int prefetch,
               Augment augment, std::uint64_t seed);
  ~DataIterator();
  DataIterator(const DataIterator&) = delete;
  DataIterator& operator=(const DataIterator&) = delete;

  std::int64_t batches_per_epoch() const { return m_per_epoch; }
  // The next batch; the reference stays valid until the following next() call.
  const Batch& next();

 private:
  struct Slot {
    Batch batch;
    std::int64_t index = -1;  // which global batch number it holds, -1 = free
  };
  void build(std::int64_t batch_number, Batch& out);
  void worker_loop(int worker);
  // Copies this rank's m_batch indices of the epoch's permutation, from `first`, to `out`.
  void permutation_slice(std::int64_t epoch, std::int64_t first, std::uint32_t* out);

  const Dataset& m_data;
  int m_batch, m_rank, m_world, m_workers;
  Augment m_augment;
  std::uint64_t m_seed;
  std::int64_t m_per_epoch;
  std::int64_t m_consumed = 0;

  std::mutex m_perm_mutex;
  std::int64_t m_perm_epoch[2] = {-1, -1};
  std::vector<std::uint32_t> m_perm[2];

  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = false;
  std::vector<Slot> m_slots;
  Batch m_inline;
  std::int64_t m_released = -1;  // slot of the batch handed out last, freed on the next call
  std::vector<std::thread> m_threads;
};

}  // namespace tune::trainer
