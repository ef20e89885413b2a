// TPESampler (Optuna 3.1's algorithm; see tpe.h and parzen_estimator.h for the deliberate
// differences). Per suggestion the history is scanned once: what depends only on finished trials
// (their scores, parameter values, the intersection / group search space) is cached by trial
// number, since finished trials never change, and the good/bad split is reused for every
// parameter of the same suggestion.
#include "search/tpe.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <span>
#include <unordered_map>
#include <variant>

#include <fmt/format.h>

#include "search/motpe.h"
#include "search/parzen_estimator.h"
#include "search/random_sampler.h"
#include "search/rng.h"
#include "search/search_space.h"

namespace tune::search {
namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();
constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

double single_value(const Distribution& dist) {
  if (const auto* f = std::get_if<FloatDistribution>(&dist)) return f->low;
  if (const auto* i = std::get_if<IntDistribution>(&dist)) return static_cast<double>(i->low);
  return 0.0;
}

// Optuna's default_gamma: min(ceil(0.1 n), 25), with the same floating-point product.
std::size_t default_gamma(std::size_t n) {
  return static_cast<std::size_t>(std::min(std::ceil(0.1 * static_cast<double>(n)), 25.0));
}

// An observation's rank key, compared lexicographically: COMPLETE trials first by value, then
// PRUNED ones by how far they got (-last step) and their last intermediate value, then PRUNED
// ones with no report, then RUNNING ones (constant liar) -- Optuna's (-step, value) pairs.
struct Score {
  double step;
  double value;
  bool operator<(const Score& o) const {
    return step < o.step || (step == o.step && value < o.value);
  }
};

// Optuna 3.1's _split_observation_pairs (single objective): indices of the n_below best and of
// the rest, each in chronological order. With violations, feasible trials come first.
void split_observations(std::span<const Score> scores, std::size_t n_below,
                        std::span<const double> violations, std::vector<std::size_t>& below,
                        std::vector<std::size_t>& above) {
  const std::size_t n = scores.size();
  below.clear();
  above.clear();
  if (!violations.empty()) {
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return violations[a] < violations[b]; });
    if (n_below >= n || violations[idx[n_below]] > 0.0) {
      below.assign(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(std::min(n_below, n)));
      above.assign(idx.begin() + static_cast<std::ptrdiff_t>(std::min(n_below, n)), idx.end());
    } else {
      std::vector<std::size_t> feasible, infeasible;
      for (std::size_t i = 0; i < n; ++i)
        (violations[i] == 0.0 ? feasible : infeasible).push_back(i);
      std::vector<Score> feasible_scores;
      feasible_scores.reserve(feasible.size());
      for (auto i : feasible) feasible_scores.push_back(scores[i]);
      std::vector<std::size_t> fb, fa;
      split_observations(feasible_scores, n_below, {}, fb, fa);
      for (auto i : fb) below.push_back(feasible[i]);
      for (auto i : fa) above.push_back(feasible[i]);
      above.insert(above.end(), infeasible.begin(), infeasible.end());
    }
  } else {
    // The n_below best by (score, index), as a stable sort would put first, found by a partial
    // sort (n_below is at most 25): O(n) where sorting every observation was O(n log n).
    const std::size_t cut = std::min(n_below, n);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(cut), order.end(),
                      [&](std::size_t a, std::size_t b) {
                        return scores[a] < scores[b] || (!(scores[b] < scores[a]) && a < b);
                      });
    below.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(cut));
    std::sort(below.begin(), below.end());
    above.reserve(n - cut);
    for (std::size_t i = 0, k = 0; i < n; ++i) {
      if (k < below.size() && below[k] == i) {
        ++k;
      } else {
        above.push_back(i);
      }
    }
    return;
  }
  std::sort(below.begin(), below.end());
  std::sort(above.begin(), above.end());
}

// Which bad-side observations g(x) is built from, and their weights, when there are more than
// `cap` of them (positions into `above`, chronological): the newest cap/2 as they are, weighted
// as default_weights(n) weighs them; the older ones cut into cap - cap/2 runs of consecutive
// trials, each run kept as its newest trial with the run's summed weight. The mixture's total
// weight, and so the prior's share, stays that of all n observations; its cost is O(cap).
void thin_bad_side(std::size_t n, std::size_t cap, std::vector<double>& full_weights,
                   std::vector<std::size_t>& keep, std::vector<double>& weights) {
  detail::default_weights(n, full_weights);
  keep.clear();
  weights.clear();
  const std::size_t recent = cap / 2;
  const std::size_t old = n - recent;
  const std::size_t runs = cap - recent;
  for (std::size_t r = 0; r < runs; ++r) {
    const std::size_t lo = r * old / runs;
    const std::size_t hi = (r + 1) * old / runs;
    if (hi <= lo) continue;
    double w = 0.0;
    for (std::size_t i = lo; i < hi; ++i) w += full_weights[i];
    keep.push_back(hi - 1);
    weights.push_back(w);
  }
  for (std::size_t i = old; i < n; ++i) {
    keep.push_back(i);
    weights.push_back(full_weights[i]);
  }
}

class TpeSampler final : public Sampler {
 public:
  explicit TpeSampler(const TpeOptions& options)
      : m_options(options),
        m_streams(options.seed, "tpe.candidates"),
        m_random(make_random_sampler(options.seed)) {
    m_parzen.consider_prior = options.consider_prior;
    m_parzen.prior_weight = options.prior_weight;
    m_parzen.consider_magic_clip = options.consider_magic_clip;
    m_parzen.consider_endpoints = options.consider_endpoints;
    m_parzen.multivariate = options.multivariate;
    m_parzen.normalized_kernels = options.normalized_kernels;
  }

  SearchSpace infer_relative_search_space(const StudyView& study, const FrozenTrial&) override {
    if (!m_options.multivariate) return {};
    update_spaces(study);
    SearchSpace space;
    if (m_options.group) {
      for (const auto& group : m_groups) {
        for (const auto& [name, dist] : group) {
          if (!is_single(dist)) space.emplace_back(name, dist);
        }
      }
      return space;
    }
    return m_intersection.get();
  }

  std::map<std::string, double> sample_relative(const StudyView& study, const FrozenTrial& trial,
                                                const SearchSpace& space) override {
    std::map<std::string, double> out;
    if (space.empty()) return out;
    if (m_options.group) {
      for (const auto& group : m_groups) {
        SearchSpace sub;
        for (const auto& [name, dist] : group) {
          if (!is_single(dist)) sub.emplace_back(name, dist);
        }
        if (!sub.empty()) sample_joint(study, trial, sub, out);
      }
      return out;
    }
    sample_joint(study, trial, space, out);
    return out;
  }

  double sample_independent(const StudyView& study, const FrozenTrial& trial,
                            const std::string& name, const Distribution& dist) override {
    if (is_single(dist)) return single_value(dist);
    collect(study);
    if (m_n_finished < static_cast<std::size_t>(std::max(m_options.n_startup_trials, 0))) {
      return m_random->sample_independent(study, trial, name, dist);
    }
    std::map<std::string, double> out;
    sample_joint(study, trial, SearchSpace{{name, dist}}, out);
    if (auto it = out.find(name); it != out.end()) return it->second;
    return m_random->sample_independent(study, trial, name, dist);
  }

  void after_trial(const StudyView& study, const FrozenTrial& trial) override {
    m_random->after_trial(study, trial);
  }

 private:
  // A single-objective trial's rank key, or nullopt for a trial TPE does not learn from.
  std::optional<Score> score_of(const FrozenTrial& t, double sign) const {
    switch (t.state) {
      case TrialState::complete:
        if (!t.value) return std::nullopt;
        return Score{-k_inf, std::isnan(*t.value) ? k_inf : sign * *t.value};
      case TrialState::pruned:
        if (t.intermediate_values.empty()) return Score{1.0, 0.0};
        {
          const auto& [step, v] = *t.intermediate_values.rbegin();
          return Score{-static_cast<double>(step), std::isnan(v) ? k_inf : sign * v};
        }
      case TrialState::running:
        if (!m_options.constant_liar) return std::nullopt;
        return Score{k_inf, k_inf};
      default:
        return std::nullopt;  // FAIL and WAITING trials teach nothing
    }
  }

  // Reads trial `position` into its slot: whether TPE learns from it and its rank key.
  void refresh(const StudyView& study, std::size_t position) {
    if (m_slots.size() <= position) m_slots.resize(position + 1);
    Slot& slot = m_slots[position];
    slot = Slot{};
    const FrozenTrial& t = study.trials()[position];
    if (t.system_attrs.contains(k_repeat_of_attr)) return;
    if (m_slot_directions.size() > 1) {
      if (t.state != TrialState::complete || t.values.size() != m_slot_directions.size()) return;
      slot.losses = to_losses(t.values, m_slot_directions);
    } else if (auto single = score_of(t, m_slot_sign)) {
      slot.score = *single;
    } else {
      return;
    }
    slot.observed = true;
    slot.number = t.number;
    slot.state = t.state;
    slot.has_constraints = !t.constraints.empty();
  }

  // Observations: the trials TPE learns from, in number order, with their rank keys.
  // A multi-objective study learns from COMPLETE trials only (as Optuna 3.1's MOTPE: no
  // pruning, no constant liar), ranked by their losses instead of a score. What each trial is
  // (an observation, its key) is kept by position and refreshed from the study's change log, so
  // only the changed trials are looked at again; the pass below reads the kept slots.
  void collect(const StudyView& study) {
    const auto& trials = study.trials();
    const double sign = study.direction() == Direction::minimize ? 1.0 : -1.0;
    const auto directions = study.directions();
    const bool multi = directions.size() > 1;
    ChangedTrials changes = take_changes(study, m_cursor);
    // Nothing changed since the last pass (the next parameter of the same suggestion): the
    // observations, their keys and the split are still those.
    if (m_collected && !changes.from_scratch && changes.positions.empty() && sign == m_slot_sign &&
        directions == m_slot_directions && m_slots.size() == trials.size() &&
        m_collected_from == trials.data()) {
      return;
    }
    m_collected = true;
    m_collected_from = trials.data();
    if (changes.from_scratch || sign != m_slot_sign || directions != m_slot_directions ||
        m_slots.size() > trials.size()) {
      m_slot_sign = sign;
      m_slot_directions = directions;
      m_slots.clear();
      for (std::size_t i = 0; i < trials.size(); ++i) refresh(study, i);
    } else {
      for (const std::size_t position : changes.positions) refresh(study, position);
    }
    m_obs.clear();
    m_scores.clear();
    m_losses.clear();
    m_violations.clear();
    m_n_finished = 0;
    bool any_constraints = false;
    std::uint64_t signature = 1469598103934665603ULL;
    auto mix = [&](std::uint64_t v) { signature = (signature ^ v) * 1099511628211ULL; };
    m_obs_number.clear();
    m_obs_running.clear();
    // The slots alone: no trial is touched (each is hundreds of bytes away from the next).
    for (std::size_t i = 0; i < trials.size(); ++i) {
      const Slot& slot = m_slots[i];
      if (!slot.observed) continue;
      if (multi) m_losses.push_back(slot.losses);
      const bool running = slot.state == TrialState::running;
      if (!running) {
        ++m_n_finished;
        if (slot.has_constraints) any_constraints = true;
      }
      m_obs.push_back(&trials[i]);
      m_obs_number.push_back(slot.number);
      m_obs_running.push_back(running);
      m_scores.push_back(slot.score);
      mix(static_cast<std::uint64_t>(slot.number) * 8 + static_cast<std::uint64_t>(slot.state));
      // A finished trial's value may still be replaced (tune confirm): the split follows it.
      mix(std::bit_cast<std::uint64_t>(slot.score.value));
      for (double loss : slot.losses) mix(std::bit_cast<std::uint64_t>(loss));
    }
    if (m_options.constraints && any_constraints) {
      // Optuna: the sum of the positive constraint values; a trial without constraint values
      // (pruned, running) ranks after every trial that has them.
      m_violations.reserve(m_obs.size());
      for (const FrozenTrial* t : m_obs) {
        double violation = 0.0;
        if (t->state == TrialState::running || t->constraints.empty()) {
          violation = k_inf;
        } else {
          for (double c : t->constraints) {
            if (std::isnan(c))
              violation = k_inf;
            else if (c > 0.0)
              violation += c;
          }
        }
        m_violations.push_back(violation);
      }
      mix(0xC0FFEE);
    }
    if (multi) mix(0x30U);
    if (signature != m_split_signature) {
      m_split_signature = signature;
      if (multi) {
        detail::split_multi_objective(m_losses, default_gamma(m_n_finished), m_violations, m_below,
                                      m_above);
        m_below_weights = detail::below_weights(m_losses, m_below, m_violations);
      } else {
        split_observations(m_scores, default_gamma(m_n_finished), m_violations, m_below, m_above);
        m_below_weights.clear();
      }
    }
  }

  // Value of `name` in observation i, NaN when missing. Finished trials are frozen, so their
  // values are cached by trial number.
  using ValueCache = std::vector<std::pair<bool, double>>;  // by trial number: (known, value)
  double value_of(const std::string& name, const Distribution& dist, ValueCache& cache,
                  std::size_t i) {
    auto lookup = [&] {
      const FrozenTrial& t = *m_obs[i];
      auto it = t.params.find(name);
      return it == t.params.end() ? k_nan : it->second;
    };
    if (m_obs_running[i] || m_obs_number[i] < 0) {
      const double v = lookup();
      return usable_value(dist, v) ? v : k_nan;
    }
    const auto number = static_cast<std::size_t>(m_obs_number[i]);
    if (cache.size() <= number) cache.resize(number + 1, std::make_pair(false, k_nan));
    auto& slot = cache[number];
    if (!slot.first) slot = {true, lookup()};
    return usable_value(dist, slot.second) ? slot.second : k_nan;
  }

  // Samples n_ei_candidates joint points from l(x) (the good trials' estimator) and writes the
  // one with the largest l(x)/g(x) into out. Needs collect() first (done here). The candidates
  // come from the stream of (seed, trial number, the space's names), so concurrent workers and
  // resumed runs, whose trials have new numbers, try new candidates even on the same history.
  void sample_joint(const StudyView& study, const FrozenTrial& trial, const SearchSpace& space,
                    std::map<std::string, double>& out) {
    collect(study);
    if (m_n_finished < static_cast<std::size_t>(std::max(m_options.n_startup_trials, 0))) {
      return;
    }
    const std::size_t n_params = space.size();
    m_values.resize(n_params);
    std::vector<const Distribution*> dists(n_params);
    for (std::size_t p = 0; p < n_params; ++p) dists[p] = &space[p].second;
    // One cache look-up per parameter, not per trial and parameter.
    std::vector<ValueCache*> caches(n_params);
    for (std::size_t p = 0; p < n_params; ++p) caches[p] = &m_value_cache[space[p].first];
    // The observations of one side, with their weights where the side has its own (empty
    // `given`: default_weights over those gathered). m_obs[idx[k]] is observation k.
    auto gather = [&](std::span<const std::size_t> idx, std::span<const double> given,
                      std::vector<std::vector<double>>& cols, std::vector<double>& weights) {
      cols.assign(n_params, {});
      weights.clear();
      for (auto& c : cols) c.reserve(idx.size());
      for (std::size_t k = 0; k < idx.size(); ++k) {
        const std::size_t i = idx[k];
        bool all = true;
        for (std::size_t p = 0; p < n_params && all; ++p) {
          m_values[p] = value_of(space[p].first, space[p].second, *caches[p], i);
          all = !std::isnan(m_values[p]);
        }
        if (!all) continue;  // the parameter did not exist in this trial
        for (std::size_t p = 0; p < n_params; ++p) cols[p].push_back(m_values[p]);
        if (!given.empty()) weights.push_back(given[k]);
      }
    };
    gather(m_below, m_below_weights, m_below_cols, m_below_gathered_weights);
    const auto cap = static_cast<std::size_t>(std::max(m_options.max_observations, 0));
    if (cap > 0 && m_above.size() > cap) {
      if (m_thin_signature != m_split_signature || m_thin_cap != cap) {
        thin_bad_side(m_above.size(), cap, m_thin_full_weights, m_thin_keep, m_thin_weights);
        m_thin_idx.clear();
        for (std::size_t k : m_thin_keep) m_thin_idx.push_back(m_above[k]);
        m_thin_signature = m_split_signature;
        m_thin_cap = cap;
      }
      gather(m_thin_idx, m_thin_weights, m_above_cols, m_above_gathered_weights);
    } else {
      gather(m_above, {}, m_above_cols, m_above_gathered_weights);
    }
    std::vector<std::span<const double>> below_spans(m_below_cols.begin(), m_below_cols.end());
    std::vector<std::span<const double>> above_spans(m_above_cols.begin(), m_above_cols.end());
    const detail::ParzenEstimator l(dists, below_spans, m_parzen, m_below_gathered_weights);
    const detail::ParzenEstimator g(dists, above_spans, m_parzen, m_above_gathered_weights);
    const auto n_candidates = static_cast<std::size_t>(std::max(m_options.n_ei_candidates, 1));
    std::string key;
    for (const auto& [name, dist] : space) {
      key += name;
      key += '\0';
    }
    Rng rng = m_streams.stream(trial.number, key);
    l.sample(rng, n_candidates, m_candidates);
    l.log_pdf(m_candidates, m_log_l);
    g.log_pdf(m_candidates, m_log_g);
    std::size_t best = 0;
    double best_score = -k_inf;
    for (std::size_t j = 0; j < n_candidates; ++j) {
      const double score = m_log_l[j] - m_log_g[j];
      if (score > best_score) {  // first maximum, as numpy.argmax
        best_score = score;
        best = j;
      }
    }
    for (std::size_t p = 0; p < n_params; ++p) out[space[p].first] = m_candidates[p][best];
  }

  // The intersection space, or the group-decomposed one; each trial is folded in once.
  void update_spaces(const StudyView& study) {
    if (!m_options.group) {
      m_intersection.update(study);
      return;
    }
    const auto& trials = study.trials();
    for (const std::size_t position : take_changes(study, m_space_cursor).positions) {
      const FrozenTrial& t = trials[position];
      if (t.state != TrialState::complete && t.state != TrialState::pruned) continue;
      if (t.number < 0) continue;
      const auto number = static_cast<std::size_t>(t.number);
      if (m_space_seen.size() <= number) m_space_seen.resize(number + 1, false);
      if (m_space_seen[number]) continue;
      m_space_seen[number] = true;
      add_to_groups(t.distributions);
    }
  }

  // Optuna's _SearchSpaceGroup.add_distributions: split every group by the new trial's names.
  void add_to_groups(const std::map<std::string, Distribution>& dists) {
    std::set<std::string> keys;
    for (const auto& [name, d] : dists) keys.insert(name);
    std::vector<std::map<std::string, Distribution>> next;
    for (const auto& group : m_groups) {
      std::map<std::string, Distribution> inside, outside;
      for (const auto& [name, d] : group) {
        (keys.count(name) ? inside : outside).emplace(name, d);
      }
      for (const auto& [name, d] : group) keys.erase(name);
      if (!inside.empty()) next.push_back(std::move(inside));
      if (!outside.empty()) next.push_back(std::move(outside));
    }
    std::map<std::string, Distribution> rest;
    for (const auto& name : keys) rest.emplace(name, dists.at(name));
    if (!rest.empty()) next.push_back(std::move(rest));
    m_groups = std::move(next);
  }

  TpeOptions m_options;
  detail::ParzenParameters m_parzen;
  TrialStreams m_streams;             // EI candidates, per trial (rng.h)
  std::unique_ptr<Sampler> m_random;  // startup trials, per-trial streams of its own

  // What each trial is to TPE, by position in the study's trials (collect()).
  struct Slot {
    bool observed = false;
    bool has_constraints = false;
    int number = -1;
    TrialState state = TrialState::running;
    Score score{};
    std::vector<double> losses;  // multi-objective
  };
  std::vector<Slot> m_slots;
  ChangeCursor m_cursor;
  double m_slot_sign = 0.0;  // the direction the slots were read for
  std::vector<Direction> m_slot_directions;

  // Per-suggestion scan of the history (collect()).
  std::vector<const FrozenTrial*> m_obs;
  std::vector<int> m_obs_number;    // each observation's trial number
  std::vector<char> m_obs_running;  // ... and whether it runs (its params may still change)
  std::vector<Score> m_scores;
  Losses m_losses;                      // multi-objective: per observation
  std::vector<double> m_below_weights;  // multi-objective: per m_below entry
  std::vector<double> m_violations;
  std::size_t m_n_finished = 0;
  std::uint64_t m_split_signature = 0;
  bool m_collected = false;                       // collect() has run once
  const FrozenTrial* m_collected_from = nullptr;  // the trials m_obs points into
  std::vector<std::size_t> m_below, m_above;
  std::unordered_map<std::string, ValueCache> m_value_cache;

  // Scratch buffers kept between calls to avoid reallocating.
  std::vector<double> m_values;
  std::vector<std::vector<double>> m_below_cols, m_above_cols, m_candidates;
  std::vector<double> m_below_gathered_weights, m_above_gathered_weights;
  std::vector<double> m_thin_full_weights, m_thin_weights;  // thin_bad_side()
  std::vector<std::size_t> m_thin_keep, m_thin_idx;
  std::uint64_t m_thin_signature = 0;  // the split m_thin_idx was made for
  std::size_t m_thin_cap = 0;
  std::vector<double> m_log_l, m_log_g;

  std::vector<bool> m_space_seen;
  ChangeCursor m_space_cursor;  // update_spaces() read the change log up to here
  IntersectionSearchSpace m_intersection;
  std::vector<std::map<std::string, Distribution>> m_groups;
};

}  // namespace

std::expected<TpeOptions, std::string> tpe_options_from_json(const nlohmann::json& config) {
  TpeOptions o;
  if (config.is_null()) return o;
  if (!config.is_object()) return std::unexpected("sampler: must be a mapping such as {type: tpe}");
  auto boolean = [](const std::string& key, const nlohmann::json& v,
                    bool& out) -> std::expected<void, std::string> {
    if (!v.is_boolean())
      return std::unexpected(fmt::format("sampler.{}: must be true or false", key));
    out = v.get<bool>();
    return {};
  };
  auto integer = [](const std::string& key, const nlohmann::json& v, int min,
                    int& out) -> std::expected<void, std::string> {
    if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > 1000000) {
      return std::unexpected(fmt::format("sampler.{}: must be an integer >= {}", key, min));
    }
    out = static_cast<int>(v.get<std::int64_t>());
    return {};
  };
  for (const auto& [key, value] : config.items()) {
    std::expected<void, std::string> ok;
    if (key == "type") {
      if (!value.is_string() || value.get<std::string>() != "tpe") {
        return std::unexpected("sampler.type: the TPE options need type: tpe");
      }
    } else if (key == "seed") {
      auto parsed = seed_from_json(value);
      if (!parsed) return std::unexpected(parsed.error());
      o.seed = *parsed;
    } else if (key == "prior_weight") {
      if (!value.is_number() || !(value.get<double>() > 0.0) ||
          !std::isfinite(value.get<double>())) {
        return std::unexpected("sampler.prior_weight: must be a number > 0");
      }
      o.prior_weight = value.get<double>();
    } else if (key == "consider_prior") {
      ok = boolean(key, value, o.consider_prior);
    } else if (key == "consider_magic_clip") {
      ok = boolean(key, value, o.consider_magic_clip);
    } else if (key == "consider_endpoints") {
      ok = boolean(key, value, o.consider_endpoints);
    } else if (key == "normalized_kernels") {
      ok = boolean(key, value, o.normalized_kernels);
    } else if (key == "multivariate") {
      ok = boolean(key, value, o.multivariate);
    } else if (key == "group") {
      ok = boolean(key, value, o.group);
    } else if (key == "constant_liar") {
      ok = boolean(key, value, o.constant_liar);
    } else if (key == "constraints") {
      ok = boolean(key, value, o.constraints);
    } else if (key == "n_startup_trials") {
      ok = integer(key, value, 0, o.n_startup_trials);
    } else if (key == "n_ei_candidates") {
      ok = integer(key, value, 1, o.n_ei_candidates);
    } else if (key == "max_observations") {
      ok = integer(key, value, 0, o.max_observations);
      if (ok && o.max_observations > 0 && o.max_observations < 50) {
        return std::unexpected("sampler.max_observations: must be 0 (no cap) or at least 50");
      }
    } else {
      return std::unexpected(fmt::format(
          "sampler.{}: unknown option for the TPE sampler (known: seed, n_startup_trials, "
          "n_ei_candidates, max_observations, multivariate, group, constant_liar, constraints, "
          "consider_prior, prior_weight, consider_magic_clip, consider_endpoints, "
          "normalized_kernels)",
          key));
    }
    if (!ok) return std::unexpected(ok.error());
  }
  if (o.group && !o.multivariate) {
    return std::unexpected("sampler.group: needs multivariate: true (as in Optuna)");
  }
  return o;
}

std::unique_ptr<Sampler> make_tpe_sampler(const TpeOptions& options) {
  return std::make_unique<TpeSampler>(options);
}

}  // namespace tune::search
