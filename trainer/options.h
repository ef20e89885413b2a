// Command-line options of tune-trainer: one plain value struct, parsed once in main and passed by
// const reference everywhere else. parse_options never exits or prints; it returns a one-line
// error that names the flag and what would fix it. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "trainer/knob_defaults.h"  // generated from probes/knobs.yaml at build time

namespace tune::trainer {

enum class ModelKind { mlp, cnn };
enum class OptimizerKind { momentum, adam };
enum class Augment { none, light, heavy };
// Algorithm, GradDtype and SyncKind list their values in the knob catalog's choice order, so the
// catalog's default index names the enum value (tests/trainer/knob_defaults_test.cpp checks).
enum class Algorithm { mpi, ring, rabenseifner, hierarchical, nccl };
enum class GradDtype { fp32, fp16, one_bit };
enum class Device { cpu, cuda };
enum class SyncKind { sgd, block };

struct Options {
  std::string out_dir;                     // --out, required; rank 0 writes out_dir/log
  std::string data_dir;                    // --data-dir: Fashion-MNIST gzip IDX files
  std::int64_t synthetic = 0;              // --synthetic N: N deterministic samples instead
  ModelKind model = ModelKind::mlp;        // --model
  std::vector<int> hidden = {1000, 1000};  // --hidden: MLP hidden widths (CNN: dense head)
  int batch_size = 100;                    // --batch-size, per rank
  float lr = 0.05f;                        // --lr
  OptimizerKind optimizer = OptimizerKind::momentum;  // --optimizer
  float momentum = 0.9f;                              // --momentum
  int epochs = 1;                                     // --epochs
  std::int64_t max_iterations = 0;                    // --max-iterations, 0 = no cap
  std::int64_t train_samples = 0;                     // --train-samples, 0 = whole training set
  std::int64_t val_samples = 0;                       // --val-samples, 0 = whole test set
  std::int64_t log_interval = 100;                    // --log-interval (iterations)
  bool benchmark = false;                             // --benchmark: no evaluation, one final entry
  // --progress-interval N (iterations; 0 = none): rank 0 prints "tune-trainer: iteration N
  // elapsed T s" (its own clock, since training began) every N iterations, flushed, with no
  // evaluation and nothing collective, for tune's window objective to follow.
  std::int64_t progress_interval = 0;
  // The thread and communication flags below take their defaults from the knob catalog
  // (probes/knobs.yaml, which says why each is what it is).
  int iterator_workers = knob_defaults::k_iterator_workers;  // --iterator-workers, 0 = main loads
  int prefetch = knob_defaults::k_prefetch;        // --prefetch batches queued, 0 = 2 per worker
  Augment augment = Augment::none;                 // --augment
  int omp_threads = knob_defaults::k_omp_threads;  // --omp-threads, 0 = OMP_NUM_THREADS or default
  int blas_threads = knob_defaults::k_blas_threads;  // --blas-threads, 0 = OPENBLAS_NUM_THREADS..
  int opencv_threads = knob_defaults::k_opencv_threads;  // --opencv-threads, -1 = env or default
  Algorithm allreduce = static_cast<Algorithm>(knob_defaults::k_allreduce_index);    // --allreduce
  GradDtype grad_dtype = static_cast<GradDtype>(knob_defaults::k_grad_dtype_index);  // --grad-dtype
  std::int64_t warm_start = knob_defaults::k_warm_start;  // --warm-start: samples before 1-bit
  double bucket_mb = knob_defaults::k_bucket_mb;          // --bucket-mb: gradient fusion size (MB)
  bool double_buffering = knob_defaults::k_double_buffering;           // --double-buffering
  SyncKind sync = static_cast<SyncKind>(knob_defaults::k_sync_index);  // --sync: sgd | block
  int block_steps = knob_defaults::k_block_steps;  // --block-steps: local steps per block
  float block_momentum = -1.f;  // --block-momentum, < 0 = 1 - 1/ranks (Chen & Huo)
  float block_lr = -1.f;        // --block-lr, < 0 = 1 - block momentum (unit gain)
  bool block_nesterov = false;  // --block-nesterov: next block starts from lookahead
  Device device = Device::cpu;  // --device
  std::uint64_t seed = 1;       // --seed
};

// Parses argv[1..]; accepts "--flag value" and "--flag=value".
std::expected<Options, std::string> parse_options(const std::vector<std::string>& args);

std::string usage();

}  // namespace tune::trainer
