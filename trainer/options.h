// Command-line options of tune-trainer: one plain value struct, parsed once in main and passed by
// const reference everywhere else. parse_options never exits or prints; it returns a one-line
// error that names the flag and what would fix it. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

namespace tune::trainer {

enum class ModelKind { mlp, cnn };
enum class OptimizerKind { momentum, adam };
enum class Augment { none, light, heavy };
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
  int iterator_workers = 2;                           // --iterator-workers, 0 = main thread loads
  int prefetch = 0;                                   // --prefetch batches queued, 0 = 2 per worker
  Augment augment = Augment::none;                    // --augment
  int omp_threads = 0;                   // --omp-threads, 0 = OMP_NUM_THREADS or default
  int blas_threads = 0;                  // --blas-threads, 0 = OPENBLAS_NUM_THREADS or default
  int opencv_threads = -1;               // --opencv-threads, -1 = OPENCV_FOR_THREADS_NUM or default
  Algorithm allreduce = Algorithm::mpi;  // --allreduce
  GradDtype grad_dtype = GradDtype::fp32;  // --grad-dtype
  std::int64_t warm_start = 0;             // --warm-start: samples trained before 1-bit starts
  double bucket_mb = 4.0;                  // --bucket-mb: gradient fusion size
  bool double_buffering = false;           // --double-buffering
  SyncKind sync = SyncKind::sgd;           // --sync: gradients every step, or block momentum
  int block_steps = 8;                     // --block-steps: local steps per block (--sync block)
  float block_momentum = -1.f;             // --block-momentum, < 0 = 1 - 1/ranks (Chen & Huo)
  float block_lr = -1.f;                   // --block-lr, < 0 = 1 - block momentum (unit gain)
  bool block_nesterov = false;             // --block-nesterov: next block starts from lookahead
  Device device = Device::cpu;             // --device
  std::uint64_t seed = 1;                  // --seed
};

// Parses argv[1..]; accepts "--flag value" and "--flag=value".
std::expected<Options, std::string> parse_options(const std::vector<std::string>& args);

std::string usage();

}  // namespace tune::trainer
