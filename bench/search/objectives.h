// Benchmark objectives shaped like tune's domain: run time (lower is better) of a training step
// as a function of thread/worker counts, binding and algorithm choices, bucket and chunk sizes,
// with interactions, plateaus and cliffs. objectives.py mirrors every formula line by line (the
// driver checks both agree on 200 points before comparing samplers). Parameters arrive as
// internal values: numbers as themselves, categorical choices as their index.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "search/trial.h"

namespace tune::bench {

using Params = std::map<std::string, double>;

struct Objective {
  std::string name;
  search::SearchSpace space;
  std::function<double(const Params&)> f;
};

inline search::Distribution ints(std::int64_t lo, std::int64_t hi, bool log = false,
                                 std::int64_t step = 1) {
  return search::IntDistribution{lo, hi, log, step};
}
inline search::Distribution floats(double lo, double hi, bool log = false) {
  return search::FloatDistribution{lo, hi, log, std::nullopt};
}
inline search::Distribution cats(std::vector<std::string> names) {
  search::CategoricalDistribution c;
  for (auto& n : names) c.choices.emplace_back(std::move(n));
  return c;
}

inline std::vector<Objective> objectives() {
  using std::abs;
  using std::floor;
  using std::log2;
  using std::max;
  using std::min;
  using std::pow;
  using std::sqrt;
  std::vector<Objective> all;

  // 1. Data-parallel step: OpenMP threads compete with loader workers for 32 cores.
  all.push_back({"ddp_allreduce",
                 {{"threads", ints(1, 64)},
                  {"workers", ints(1, 16)},
                  {"bind", cats({"none", "core", "socket", "numa"})},
                  {"algo", cats({"ring", "tree", "rec_doubling", "direct"})},
                  {"bucket_mb", floats(1.0, 1024.0, true)},
                  {"chunk_kb", ints(4, 4096, true)},
                  {"pin_memory", cats({"false", "true"})},
                  {"prefetch", ints(0, 8)}},
                 [](const Params& p) {
                   const double t = p.at("threads"), w = p.at("workers");
                   const double free_cores = max(32.0 - 2.0 * w, 1.0);
                   const double eff = min(t, free_cores);
                   double compute = 100.0 / pow(eff, 0.9) + 3.0 * max(0.0, t - free_cores);
                   const double bind_factor[] = {1.15, 0.95, 1.0, 1.05};
                   const int b = static_cast<int>(p.at("bind"));
                   compute *= bind_factor[b] * ((b == 1 && t > 16.0) ? 1.1 : 1.0);
                   const double loader = 40.0 / (1.0 + w) + 0.5 * w;
                   const double hidden = max(0.0, loader - 5.0 * sqrt(p.at("prefetch")));
                   const int a = static_cast<int>(p.at("algo"));
                   const double base[] = {1.0, 1.3, 1.1, 2.0};
                   const double best_log[] = {5.0, 7.0, 4.0, 3.0};
                   const double comm =
                       base[a] * (5.0 + 0.8 * pow(log2(p.at("bucket_mb")) - best_log[a], 2));
                   const double chunk = 0.5 * floor(abs(log2(p.at("chunk_kb")) - 8.0) / 2.0);
                   const double pin = p.at("pin_memory") == 1.0 ? 0.0 : 1.5;
                   return compute + hidden + comm + chunk + pin;
                 }});

  // 2. OpenMP GEMM: block sizes fall off a cliff beyond the L2 cache; schedule x chunk.
  all.push_back({"omp_gemm",
                 {{"threads", ints(1, 64)},
                  {"schedule", cats({"static", "dynamic", "guided"})},
                  {"chunk", ints(1, 1024, true)},
                  {"block_m", ints(16, 256, false, 16)},
                  {"block_n", ints(16, 256, false, 16)},
                  {"bind", cats({"close", "spread", "master"})},
                  {"nested", cats({"no", "yes"})}},
                 [](const Params& p) {
                   const double t = p.at("threads");
                   const int bind = static_cast<int>(p.at("bind"));
                   const double cores = bind == 2 ? 4.0 : 24.0;
                   double time = 200.0 / min(t, cores) + 1.5 * max(0.0, t - cores);
                   if (bind == 1) time *= 0.92;
                   const double bm = p.at("block_m"), bn = p.at("block_n");
                   const double kb = bm * bn * 8.0 / 1024.0;
                   const double eff = kb > 256.0 ? 2.5 : 1.0 / (0.6 + 0.4 * sqrt(kb / 256.0));
                   time *= eff;
                   const int s = static_cast<int>(p.at("schedule"));
                   const double lc = log2(p.at("chunk"));
                   const double best_chunk[] = {0.0, 4.0, 2.0};
                   time += (s == 0 ? 2.0 : 1.0) + 0.4 * abs(lc - best_chunk[s]);
                   if (p.at("nested") == 1.0) time += 0.1 * t;
                   return time;
                 }});

  // 3. Horovod tensor fusion: fusion buffer x cycle time interaction, hierarchical allreduce
  // only pays off with many ranks per node.
  all.push_back({"horovod_fusion",
                 {{"fusion_mb", floats(0.5, 512.0, true)},
                  {"cycle_ms", floats(0.1, 100.0, true)},
                  {"cache_capacity", ints(16, 4096, true)},
                  {"hierarchical", cats({"no", "yes"})},
                  {"threads", ints(1, 32)},
                  {"ranks_per_node", ints(1, 8)}},
                 [](const Params& p) {
                   const double lf = log2(p.at("fusion_mb")), lc = log2(p.at("cycle_ms"));
                   const double fusion =
                       2.0 * pow(lf - 6.0 + 0.5 * (lc - 2.0), 2) / 4.0 + 0.3 * pow(lc - 2.0, 2);
                   const double cache = p.at("cache_capacity") < 1024.0 ? 2.0 : 0.0;
                   const double r = p.at("ranks_per_node");
                   const double hier = p.at("hierarchical") == 1.0 ? 6.0 - 0.9 * r : 0.0;
                   const double cores_per_rank = 32.0 / r;
                   const double t = p.at("threads");
                   const double compute =
                       80.0 / (r * min(t, cores_per_rank)) + 2.0 * max(0.0, t - cores_per_rank);
                   return 10.0 + fusion + cache + hier + compute;
                 }});

  // 4. Data loader: saturating workers, a shared-memory cliff (workers x batch x prefetch).
  all.push_back({"dataloader",
                 {{"num_workers", ints(0, 32)},
                  {"batch", ints(8, 1024, true)},
                  {"prefetch_factor", ints(1, 16)},
                  {"pin_memory", cats({"false", "true"})},
                  {"persistent", cats({"false", "true"})},
                  {"shm_mb", floats(64.0, 8192.0, true)}},
                 [](const Params& p) {
                   const double w = p.at("num_workers"), b = p.at("batch");
                   const double pf = p.at("prefetch_factor");
                   const double per_sample = 1.0 / min(w + 0.5, 12.0) + 0.002 * max(0.0, w - 12.0);
                   const double gpu = 0.004 + 0.6 / b;
                   double time = max(per_sample * 0.05, gpu) * 1000.0;
                   const double need_mb = w * b * pf * 0.05;
                   if (need_mb > p.at("shm_mb")) time += 50.0;
                   time += 0.002 * p.at("shm_mb") / 64.0;
                   if (p.at("pin_memory") == 0.0) time *= 1.08;
                   if (p.at("persistent") == 0.0) time += 0.5 * w / 8.0;
                   time += 0.3 * abs(log2(b) - 7.0);
                   return time;
                 }});

  // 5. MPI collective tuning: transport x eager limit, algorithm x segment size, placement.
  all.push_back({"mpi_collectives",
                 {{"btl", cats({"tcp", "vader", "openib", "ucx"})},
                  {"eager_kb", ints(1, 1024, true)},
                  {"rndv_kb", ints(4, 4096, true)},
                  {"coll_algo", cats({"a0", "a1", "a2", "a3", "a4", "a5"})},
                  {"segsize_kb", ints(1, 1024, true)},
                  {"ppn", ints(1, 32)},
                  {"bind", cats({"core", "socket", "none"})},
                  {"map", cats({"slot", "node", "numa"})}},
                 [](const Params& p) {
                   const int btl = static_cast<int>(p.at("btl"));
                   const double lat[] = {20.0, 6.0, 4.0, 3.0};
                   const double best_eager[] = {6.0, 12.0, 8.0, 9.0};
                   const double le = log2(p.at("eager_kb"));
                   double time = lat[btl] + 0.6 * abs(le - best_eager[btl]);
                   time += 0.4 * max(0.0, le + 2.0 - log2(p.at("rndv_kb")));
                   const int a = static_cast<int>(p.at("coll_algo"));
                   const double algo_base[] = {8.0, 5.0, 6.0, 4.5, 7.0, 5.5};
                   const double best_seg[] = {0.0, 6.0, 3.0, 8.0, 4.0, 5.0};
                   time +=
                       algo_base[a] + 0.5 * pow(log2(p.at("segsize_kb")) - best_seg[a], 2) / 2.0;
                   const double ppn = p.at("ppn");
                   time += 60.0 / ppn + 0.15 * ppn;
                   const int bind = static_cast<int>(p.at("bind")),
                             map = static_cast<int>(p.at("map"));
                   if (bind == 2) time += 3.0;
                   if (bind == 1 && map == 2) time -= 1.0;
                   if (map == 1 && ppn > 16.0) time += 4.0;
                   return time;
                 }});

  // 6. TensorFlow-style threading: intra x inter ops plus OpenMP threads share the cores.
  all.push_back({"tf_threads",
                 {{"intra_op", ints(1, 64)},
                  {"inter_op", ints(1, 16)},
                  {"omp_threads", ints(1, 64)},
                  {"blocktime_ms", ints(0, 200, false, 10)},
                  {"affinity", cats({"compact", "scatter", "none"})},
                  {"fusion", cats({"off", "on"})},
                  {"batch", ints(16, 2048, true)}},
                 [](const Params& p) {
                   const double intra = p.at("intra_op"), inter = p.at("inter_op");
                   const double omp = p.at("omp_threads");
                   const double busy = intra * min(inter, 2.0) + 0.5 * omp;
                   double time = 120.0 / min(intra, 28.0) + 30.0 / min(omp, 28.0);
                   time += 20.0 / min(inter, 3.0);
                   if (busy > 32.0) time += 0.8 * (busy - 32.0);
                   const double bt = p.at("blocktime_ms");
                   time += bt == 0.0 ? 4.0 : 0.02 * abs(bt - 30.0);
                   const int aff = static_cast<int>(p.at("affinity"));
                   time *= aff == 0 ? 0.95 : (aff == 1 ? 1.0 : 1.1);
                   if (p.at("fusion") == 1.0) time -= 2.0;
                   time += 1.5 * abs(log2(p.at("batch")) - 8.0);
                   return time;
                 }});

  // 7. Pipeline + tensor parallelism: pipeline bubble, memory cliff, ZeRO stages.
  all.push_back({"pipeline_parallel",
                 {{"stages", ints(1, 8)},
                  {"microbatches", ints(1, 256, true)},
                  {"tensor_parallel", cats({"1", "2", "4", "8"})},
                  {"zero_stage", cats({"0", "1", "2", "3"})},
                  {"recompute", cats({"no", "yes"})},
                  {"bucket_mb", floats(1.0, 1024.0, true)},
                  {"overlap", cats({"no", "yes"})},
                  {"grad_accum", ints(1, 16)}},
                 [](const Params& p) {
                   const double s = p.at("stages"), m = p.at("microbatches");
                   const double tp = pow(2.0, p.at("tensor_parallel"));
                   const double z = p.at("zero_stage");
                   const bool recompute = p.at("recompute") == 1.0;
                   double memory =
                       80.0 / (s * tp) * (1.0 - 0.2 * z) * (recompute ? 0.5 : 1.0) + 0.05 * m;
                   double time = 100.0 / (s * tp) * (1.0 + 0.15 * (tp - 1.0));
                   time *= 1.0 + (s - 1.0) / m;
                   time += 0.1 * m;
                   if (memory > 24.0) time += 100.0;
                   if (recompute) time *= 1.3;
                   time += z * 1.5;
                   const double comm = 3.0 + 0.5 * pow(log2(p.at("bucket_mb")) - 5.0, 2) / 3.0;
                   time += p.at("overlap") == 1.0 ? 0.3 * comm : comm;
                   time += 4.0 / p.at("grad_accum") + 0.2 * p.at("grad_accum");
                   return time;
                 }});

  // 8. A rugged one: ten parameters, step plateaus and a narrow good combination of choices.
  all.push_back({"rugged_mixed",
                 {{"i0", ints(0, 31)},
                  {"i1", ints(0, 31)},
                  {"i2", ints(1, 256, true)},
                  {"i3", ints(0, 100, false, 5)},
                  {"f0", floats(1e-3, 1e3, true)},
                  {"f1", floats(1e-3, 1e3, true)},
                  {"f2", floats(0.0, 1.0)},
                  {"c0", cats({"a", "b", "c", "d", "e"})},
                  {"c1", cats({"a", "b", "c", "d", "e"})},
                  {"c2", cats({"a", "b", "c", "d", "e"})}},
                 [](const Params& p) {
                   double v = floor(abs(p.at("i0") - 21.0) / 3.0) + 0.05 * pow(p.at("i1") - 9.0, 2);
                   v += abs(log2(p.at("i2")) - 5.0);
                   v += floor(abs(p.at("i3") - 35.0) / 10.0);
                   const double l0 = std::log10(p.at("f0")), l1 = std::log10(p.at("f1"));
                   v += pow(l0 - 1.0, 2) + pow(l1 + l0 - 0.5, 2);
                   v += 4.0 * pow(p.at("f2") - 0.7, 2);
                   const int c0 = static_cast<int>(p.at("c0")), c1 = static_cast<int>(p.at("c1"));
                   const int c2 = static_cast<int>(p.at("c2"));
                   v += (c0 == 3 ? 0.0 : 2.0) + (c1 == c0 ? 0.0 : 1.5) + (c2 == 1 ? 0.0 : 1.0);
                   return v;
                 }});
  return all;
}

}  // namespace tune::bench
