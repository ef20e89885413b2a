#include "trainer/options.h"

#include <charconv>
#include <functional>
#include <map>
#include <sstream>

namespace tune::trainer {
namespace {

using Setter = std::function<std::expected<void, std::string>(const std::string&)>;

std::expected<void, std::string> bad(const std::string& flag, const std::string& value,
                                     const std::string& want) {
  return std::unexpected("--" + flag + ": invalid value '" + value + "' (expected " + want + ")");
}

template <typename T>
Setter integer(const std::string& flag, T& field, T min_value) {
  return [&field, flag, min_value](const std::string& v) -> std::expected<void, std::string> {
    T parsed{};
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
    if (ec != std::errc{} || p != v.data() + v.size() || parsed < min_value)
      return bad(flag, v, "an integer >= " + std::to_string(min_value));
    field = parsed;
    return {};
  };
}

template <typename T>
Setter real(const std::string& flag, T& field, bool positive) {
  return [&field, flag, positive](const std::string& v) -> std::expected<void, std::string> {
    try {
      std::size_t used = 0;
      double parsed = std::stod(v, &used);
      if (used != v.size() || (positive ? parsed <= 0 : parsed < 0))
        return bad(flag, v, positive ? "a number > 0" : "a number >= 0");
      field = static_cast<T>(parsed);
      return {};
    } catch (...) {
      return bad(flag, v, "a number");
    }
  };
}

template <typename E>
Setter choice(const std::string& flag, E& field, std::map<std::string, E> names) {
  return [&field, flag, names](const std::string& v) -> std::expected<void, std::string> {
    auto it = names.find(v);
    if (it == names.end()) {
      std::string want;
      for (auto& [k, _] : names) want += (want.empty() ? "" : "|") + k;
      return bad(flag, v, want);
    }
    field = it->second;
    return {};
  };
}

// The flags that take a value, each writing its field of o (a table, one row a flag).
std::map<std::string, Setter> value_flags(Options& o) {
  return {
      {"out",
       [&](const std::string& v) -> std::expected<void, std::string> {
         if (v.empty()) return bad("out", v, "a directory");
         o.out_dir = v;
         return {};
       }},
      {"data-dir",
       [&](const std::string& v) -> std::expected<void, std::string> {
         o.data_dir = v;
         return {};
       }},
      {"synthetic", integer<std::int64_t>("synthetic", o.synthetic, 1)},
      {"model",
       choice<ModelKind>("model", o.model, {{"mlp", ModelKind::mlp}, {"cnn", ModelKind::cnn}})},
      {"hidden",
       [&](const std::string& v) -> std::expected<void, std::string> {
         std::vector<int> widths;
         std::size_t start = 0;
         while (start <= v.size()) {
           auto end = v.find(',', start);
           if (end == std::string::npos) end = v.size();
           int w = 0;
           auto [p, ec] = std::from_chars(v.data() + start, v.data() + end, w);
           if (ec != std::errc{} || p != v.data() + end || w < 1)
             return bad("hidden", v, "comma-separated positive widths, e.g. 1000,1000");
           widths.push_back(w);
           start = end + 1;
         }
         o.hidden = widths;
         return {};
       }},
      {"batch-size", integer<int>("batch-size", o.batch_size, 1)},
      {"lr", real<float>("lr", o.lr, true)},
      {"momentum", real<float>("momentum", o.momentum, false)},
      {"optimizer", choice<OptimizerKind>(
                        "optimizer", o.optimizer,
                        {{"momentum", OptimizerKind::momentum}, {"adam", OptimizerKind::adam}})},
      {"epochs", integer<int>("epochs", o.epochs, 1)},
      {"max-iterations", integer<std::int64_t>("max-iterations", o.max_iterations, 0)},
      {"train-samples", integer<std::int64_t>("train-samples", o.train_samples, 0)},
      {"val-samples", integer<std::int64_t>("val-samples", o.val_samples, 0)},
      {"log-interval", integer<std::int64_t>("log-interval", o.log_interval, 1)},
      {"progress-interval", integer<std::int64_t>("progress-interval", o.progress_interval, 0)},
      {"iterator-workers", integer<int>("iterator-workers", o.iterator_workers, 0)},
      {"prefetch", integer<int>("prefetch", o.prefetch, 0)},
      {"augment",
       choice<Augment>(
           "augment", o.augment,
           {{"none", Augment::none}, {"light", Augment::light}, {"heavy", Augment::heavy}})},
      {"omp-threads", integer<int>("omp-threads", o.omp_threads, 1)},
      {"blas-threads", integer<int>("blas-threads", o.blas_threads, 1)},
      {"opencv-threads", integer<int>("opencv-threads", o.opencv_threads, 0)},
      {"allreduce", choice<Algorithm>("allreduce", o.allreduce,
                                      {{"mpi", Algorithm::mpi},
                                       {"ring", Algorithm::ring},
                                       {"rabenseifner", Algorithm::rabenseifner},
                                       {"hierarchical", Algorithm::hierarchical},
                                       {"nccl", Algorithm::nccl}})},
      {"grad-dtype",
       choice<GradDtype>(
           "grad-dtype", o.grad_dtype,
           {{"fp32", GradDtype::fp32}, {"fp16", GradDtype::fp16}, {"1bit", GradDtype::one_bit}})},
      {"sync",
       choice<SyncKind>("sync", o.sync, {{"sgd", SyncKind::sgd}, {"block", SyncKind::block}})},
      {"block-steps", integer<int>("block-steps", o.block_steps, 1)},
      {"block-momentum", real<float>("block-momentum", o.block_momentum, false)},
      {"block-lr", real<float>("block-lr", o.block_lr, true)},
      {"warm-start", integer<std::int64_t>("warm-start", o.warm_start, 0)},
      {"bucket-mb", real<double>("bucket-mb", o.bucket_mb, true)},
      {"device",
       choice<Device>("device", o.device, {{"cpu", Device::cpu}, {"cuda", Device::cuda}})},
      {"seed", integer<std::uint64_t>("seed", o.seed, 0)},
  };
}

// Defaults that depend on other flags, then the combinations no run can take.
std::expected<Options, std::string> finish_options(Options o, bool momentum_given) {
  // Sign-compressed gradients (1bit) make momentum 0.9 overshoot: measured on Fashion-MNIST they
  // stall near 62-74% where 0.5 reaches 79-84%. An explicit --momentum wins. (Double buffering
  // needs no such default: its one-step delay is compensated, see sync.h.)
  if (o.grad_dtype == GradDtype::one_bit && !momentum_given) o.momentum = 0.5f;
  if (o.out_dir.empty()) return std::unexpected(std::string("--out DIR is required"));
  if (o.data_dir.empty() && o.synthetic == 0)
    return std::unexpected(std::string("one of --data-dir DIR or --synthetic N is required"));
  if (!o.data_dir.empty() && o.synthetic != 0)
    return std::unexpected(std::string("--data-dir and --synthetic exclude each other; give one"));
  if (o.block_momentum >= 1.f)
    return std::unexpected(std::string("--block-momentum: must be < 1 (the filter diverges at 1)"));
  if (o.sync == SyncKind::block && o.double_buffering)
    return std::unexpected(
        std::string("--double-buffering overlaps per-step gradients: use it with --sync sgd"));
  if (o.allreduce == Algorithm::nccl && o.device != Device::cuda)
    return std::unexpected(std::string("--allreduce nccl needs --device cuda"));
  return o;
}

}  // namespace

std::expected<Options, std::string> parse_options(const std::vector<std::string>& args) {
  Options o;
  const std::map<std::string, Setter> with_value = value_flags(o);
  bool momentum_given = false;
  std::map<std::string, bool*> switches = {{"benchmark", &o.benchmark},
                                           {"double-buffering", &o.double_buffering},
                                           {"block-nesterov", &o.block_nesterov}};

  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return std::unexpected(std::string("help"));
    if (a.rfind("--", 0) != 0)
      return std::unexpected("unexpected argument '" + a + "' (flags start with --)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (auto s = switches.find(name); s != switches.end()) {
      if (has_value) return std::unexpected("--" + name + " takes no value");
      *s->second = true;
      continue;
    }
    auto it = with_value.find(name);
    if (it == with_value.end()) return std::unexpected("unknown flag --" + name + " (see --help)");
    if (!has_value) {
      if (i + 1 >= args.size()) return std::unexpected("--" + name + " needs a value");
      value = args[++i];
    }
    if (auto r = it->second(value); !r) return std::unexpected(r.error());
    if (name == "momentum") momentum_given = true;
  }
  return finish_options(std::move(o), momentum_given);
}

std::string usage() {
  // The thread/communication defaults shown are the knob catalog's (trainer/knob_defaults.h).
  std::ostringstream bucket;
  bucket << knob_defaults::k_bucket_mb;
  return "usage: tune-trainer --out DIR (--data-dir DIR | --synthetic N) [--model mlp|cnn]\n"
         "  [--hidden 1000,1000] [--batch-size 100] [--lr 0.05] "
         "[--optimizer momentum|adam]\n"
         "  [--momentum 0.9 (0.5 with 1bit)] [--epochs 1] [--max-iterations N] [--train-samples N] "
         "[--val-samples N]\n"
         "  [--log-interval 100] [--benchmark] [--progress-interval N] [--iterator-workers " +
         std::to_string(knob_defaults::k_iterator_workers) +
         "] [--prefetch N]\n"
         "  [--augment none|light|heavy] [--omp-threads N] [--blas-threads N] [--opencv-threads "
         "N]\n"
         "  [--allreduce mpi|ring|rabenseifner|hierarchical|nccl] [--grad-dtype fp32|fp16|1bit]\n"
         "  [--warm-start N] [--bucket-mb " +
         bucket.str() +
         "] [--double-buffering] [--device cpu|cuda] [--seed 1]\n"
         "  [--sync sgd|block] [--block-steps " +
         std::to_string(knob_defaults::k_block_steps) +
         "] [--block-momentum 1-1/ranks]\n"
         "  [--block-lr 1-block_momentum]\n"
         "  [--block-nesterov]\n";
}

}  // namespace tune::trainer
