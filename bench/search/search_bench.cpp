// The C++ half of the search benchmarks; bench/search/run.py runs it next to the Python half
// (python3-optuna) and prints the comparison tables.
//
//   search_bench check N                      objective values at N shared points per objective
//   search_bench efficiency SEEDS TRIALS      best-so-far per objective / method / seed (CSV)
//   search_bench fstar                        best known value per objective (search, CSV)
//   search_bench overhead SIZES REPS          CPU ms per suggestion with SIZES complete trials
//   (CSV)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/search/objectives.h"
#include "search/gp_sampler.h"
#include "search/random_sampler.h"
#include "search/rng.h"
#include "search/sampler.h"
#include "search/tpe.h"

namespace tune::bench {
namespace {

using search::Distribution;

// Same LCG and mapping as objectives.py's check_points.
double point_value(const Distribution& d, double u) {
  if (const auto* c = std::get_if<search::CategoricalDistribution>(&d)) {
    const auto n = static_cast<int>(c->choices.size());
    return static_cast<double>(std::min(static_cast<int>(u * n), n - 1));
  }
  if (const auto* i = std::get_if<search::IntDistribution>(&d)) {
    const std::int64_t n = (i->high - i->low) / i->step;
    return static_cast<double>(
        i->low + std::min(static_cast<std::int64_t>(u * static_cast<double>(n + 1)), n) * i->step);
  }
  const auto& f = std::get<search::FloatDistribution>(d);
  if (f.log) return std::exp(std::log(f.low) + u * (std::log(f.high) - std::log(f.low)));
  return f.low + u * (f.high - f.low);
}

int check(int n) {
  std::uint64_t state = 12345;
  for (const auto& obj : objectives()) {
    for (int k = 0; k < n; ++k) {
      Params p;
      for (const auto& [name, dist] : obj.space) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
        p[name] = point_value(dist, u);
      }
      fmt::print("{},{:.17g}\n", obj.name, obj.f(p));
    }
  }
  return 0;
}

// TUNE_BENCH_TPE='{"n_ei_candidates": 48}' tries other TPE options (the sampler's JSON form),
// TUNE_BENCH_GP='{"n_startup_trials": 5}' other GP options.
std::unique_ptr<search::Sampler> make(const std::string& method, std::uint64_t seed) {
  if (method == "ours_random") return search::make_random_sampler(seed);
  if (method == "ours_gp") {
    auto parsed = search::gp_options_from_json(
        nlohmann::json::parse(std::getenv("TUNE_BENCH_GP") ? std::getenv("TUNE_BENCH_GP") : "{}"));
    if (!parsed) {
      std::fprintf(stderr, "TUNE_BENCH_GP: %s\n", parsed.error().c_str());
      std::exit(2);
    }
    parsed->seed = seed;
    return search::make_gp_sampler(*parsed);
  }
  search::TpeOptions o;
  if (const char* env = std::getenv("TUNE_BENCH_TPE")) {
    auto parsed = search::tpe_options_from_json(nlohmann::json::parse(env));
    if (!parsed) {
      std::fprintf(stderr, "TUNE_BENCH_TPE: %s\n", parsed.error().c_str());
      std::exit(2);
    }
    o = *parsed;
  }
  o.seed = seed;
  o.multivariate = o.multivariate || method == "ours_tpe_mv";
  return search::make_tpe_sampler(o);
}

// TUNE_BENCH_METHODS=ours_gp,ours_tpe runs only those methods; TUNE_BENCH_OBJECTIVES likewise.
std::vector<std::string> selected(const char* env, std::vector<std::string> all) {
  if (const char* value = std::getenv(env)) {
    std::vector<std::string> out;
    std::string s = value;
    for (std::size_t pos = 0; pos <= s.size();) {
      const auto comma = std::min(s.find(',', pos), s.size());
      out.push_back(s.substr(pos, comma - pos));
      pos = comma + 1;
    }
    return out;
  }
  return all;
}

int efficiency(int seeds, int trials) {
  // Budgets up to TRIALS (run.py asks for 100: the first four).
  std::vector<int> budgets;
  for (int b : {10, 20, 50, 100, 200, 300, 500, 1000, 2000}) {
    if (b <= trials) budgets.push_back(b);
  }
  const auto methods =
      selected("TUNE_BENCH_METHODS", {"ours_random", "ours_tpe", "ours_tpe_mv", "ours_gp"});
  const auto names = selected("TUNE_BENCH_OBJECTIVES", {});
  for (const auto& obj : objectives()) {
    if (!names.empty() && std::find(names.begin(), names.end(), obj.name) == names.end()) continue;
    for (const std::string& method : methods) {
      for (int seed = 0; seed < seeds; ++seed) {
        auto sampler = make(method, static_cast<std::uint64_t>(seed));
        search::VectorStudyView study(search::Direction::minimize);
        double best = 0.0;
        std::string line = fmt::format("{},{},{}", obj.name, method, seed);
        for (int i = 0; i < trials; ++i) {
          search::FrozenTrial t;
          t.number = i;
          t.trial_id = i;
          sampler->before_trial(study, t);
          search::suggest_all(*sampler, study, t, obj.space);
          const double v = obj.f(t.params);
          t.state = search::TrialState::complete;
          t.value = v;
          study.mutable_trials().push_back(std::move(t));
          sampler->after_trial(study, study.trials().back());
          if (i == 0 || v < best) best = v;
          if (std::find(budgets.begin(), budgets.end(), i + 1) != budgets.end()) {
            line += fmt::format(",{:.17g}", best);
          }
        }
        fmt::print("{}\n", line);
      }
    }
  }
  return 0;
}

// Best known value: random search, then coordinate descent from the best points (each int and
// categorical exhaustively, floats on a fine log/linear grid).
int fstar() {
  for (const auto& obj : objectives()) {
    search::Rng rng(2024);
    std::vector<std::pair<double, Params>> pool;
    for (int k = 0; k < 200000; ++k) {
      Params p;
      for (const auto& [name, dist] : obj.space) p[name] = search::sample_uniform(rng, dist);
      pool.emplace_back(obj.f(p), std::move(p));
    }
    std::partial_sort(pool.begin(), pool.begin() + 30, pool.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; });
    double best = pool[0].first;
    for (int start = 0; start < 30; ++start) {
      Params p = pool[static_cast<std::size_t>(start)].second;
      double v = pool[static_cast<std::size_t>(start)].first;
      for (int round = 0; round < 20; ++round) {
        bool improved = false;
        for (const auto& [name, dist] : obj.space) {
          std::vector<double> values;
          if (const auto* c = std::get_if<search::CategoricalDistribution>(&dist)) {
            for (std::size_t i = 0; i < c->choices.size(); ++i)
              values.push_back(static_cast<double>(i));
          } else if (const auto* i = std::get_if<search::IntDistribution>(&dist)) {
            for (auto x = i->low; x <= i->high; x += i->step)
              values.push_back(static_cast<double>(x));
          } else {
            const auto& f = std::get<search::FloatDistribution>(dist);
            for (int k = 0; k <= 2000; ++k) values.push_back(point_value(f, k / 2000.0));
          }
          for (double x : values) {
            Params q = p;
            q[name] = x;
            const double w = obj.f(q);
            if (w < v - 1e-12) {
              v = w;
              p = std::move(q);
              improved = true;
            }
          }
        }
        if (!improved) break;
      }
      best = std::min(best, v);
    }
    fmt::print("{},{:.17g}\n", obj.name, best);
  }
  return 0;
}

// CPU time of this thread: on a shared, loaded machine wall time counts other processes' turns.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

int overhead(const std::vector<int>& sizes, int reps) {
  const Objective obj = objectives()[0];  // 8 parameters: ints, log ints, floats, categoricals
  for (const std::string& method :
       selected("TUNE_BENCH_METHODS", {"ours_tpe", "ours_tpe_mv", "ours_gp"})) {
    for (int n : sizes) {
      auto history_sampler = search::make_random_sampler(1);
      search::VectorStudyView study(search::Direction::minimize);
      for (int i = 0; i < n; ++i) {
        search::FrozenTrial t;
        t.number = i;
        search::suggest_all(*history_sampler, study, t, obj.space);
        t.state = search::TrialState::complete;
        t.value = obj.f(t.params);
        study.add(std::move(t));
      }
      auto sampler = make(method, 7);
      std::vector<double> ms;
      // Every repetition adds its trial to the history, as a sequential study does, so no cache
      // sees the same history twice.
      for (int r = 0; r < reps; ++r) {
        search::FrozenTrial t;
        t.number = static_cast<int>(study.trials().size());
        t.state = search::TrialState::running;
        const double start = thread_cpu_ms();
        sampler->before_trial(study, t);
        search::suggest_all(*sampler, study, t, obj.space);
        ms.push_back(thread_cpu_ms() - start);
        t.state = search::TrialState::complete;
        t.value = obj.f(t.params);
        study.add(std::move(t));  // logged: samplers that follow the log read this trial alone
      }
      std::sort(ms.begin(), ms.end());
      fmt::print("{},{},{:.6f}\n", method, n, ms[ms.size() / 2]);
    }
  }
  return 0;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const auto comma = s.find(',', pos);
    out.push_back(std::atoi(s.substr(pos, comma - pos).c_str()));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace
}  // namespace tune::bench

int main(int argc, char** argv) {
  using namespace tune::bench;
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "check" && argc == 3) return check(std::atoi(argv[2]));
  if (cmd == "efficiency" && argc == 4) return efficiency(std::atoi(argv[2]), std::atoi(argv[3]));
  if (cmd == "fstar" && argc == 2) return fstar();
  if (cmd == "overhead" && argc == 4) return overhead(parse_list(argv[2]), std::atoi(argv[3]));
  std::fprintf(stderr,
               "usage: search_bench check N | efficiency SEEDS TRIALS | fstar | overhead "
               "SIZES REPS\n(run bench/search/run.py for the tables)\n");
  return 2;
}
