// GpSampler (see gp_sampler.h): the history turned into encoded observations, the models, and
// the options parser. The maths lives in gp.cpp and gp_acquisition.cpp.
#include "search/gp_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "search/gp.h"
#include "search/gp_acquisition.h"
#include "search/normal_math.h"
#include "search/rng.h"
#include "search/search_space.h"
#include "search/tpe.h"

namespace tune::search {
namespace {

using detail::EncodedDim;
using detail::GaussianProcess;
using detail::GpData;

constexpr double k_inf = std::numeric_limits<double>::infinity();
constexpr std::size_t k_incumbents = 5;

// One trial as the model sees it. y is minimised; +inf stands for "the worst value seen" (a
// PRUNED trial, a RUNNING one under the constant liar, a NaN result).
struct Observation {
  std::vector<double> x;
  double y = k_inf;
  bool measured = false;  // COMPLETE with a finite value: may be the incumbent
  const std::vector<double>* constraints = nullptr;
  bool feasible() const {
    return std::all_of(constraints->begin(), constraints->end(), [](double c) { return c <= 0.0; });
  }
};

// Shapes (options.warp) and standardises the values in place; +inf becomes the largest finite
// value. Returns false when no value is finite.
bool standardise(std::vector<double>& v, const std::string& warp) {
  std::vector<double> finite;
  for (double y : v) {
    if (std::isfinite(y)) finite.push_back(y);
  }
  if (finite.empty()) return false;
  std::sort(finite.begin(), finite.end());
  const double best = finite.front(), worst = finite.back();
  for (double& y : v) y = std::isfinite(y) ? y : worst;
  if (warp == "rank") {
    // Normal scores of the mid-ranks (ties share one score).
    const auto n = static_cast<double>(v.size());
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (double& y : v) {
      const auto lo = std::lower_bound(sorted.begin(), sorted.end(), y) - sorted.begin();
      const auto hi = std::upper_bound(sorted.begin(), sorted.end(), y) - sorted.begin();
      y = detail::ndtri((0.5 * static_cast<double>(lo + hi)) / n);
    }
  } else if (warp == "log") {
    double scale = finite[finite.size() / 4] - best;
    if (!(scale > 0.0)) scale = worst > best ? worst - best : 1.0;
    for (double& y : v) y = std::log1p((y - best) / scale);
  }
  double mean = 0.0;
  for (double y : v) mean += y;
  mean /= static_cast<double>(v.size());
  double ss = 0.0;
  for (double y : v) ss += (y - mean) * (y - mean);
  double sd = std::sqrt(ss / static_cast<double>(v.size()));
  if (!(sd > 1e-12 * (1.0 + std::abs(mean)))) sd = 1.0;
  for (double& y : v) y = (y - mean) / sd;
  return true;
}

class GpSampler final : public Sampler {
 public:
  explicit GpSampler(const GpOptions& options)
      : m_options(options), m_streams(options.seed, "gp.acquisition") {
    TpeOptions tpe;
    tpe.seed = options.seed;
    tpe.n_startup_trials = options.n_startup_trials;
    tpe.constant_liar = options.constant_liar;
    tpe.constraints = options.constraints;
    m_independent = make_tpe_sampler(tpe);
  }

  SearchSpace infer_relative_search_space(const StudyView& study, const FrozenTrial&) override {
    m_space.update(study);
    return m_space.get();
  }

  std::map<std::string, double> sample_relative(const StudyView& study, const FrozenTrial& trial,
                                                const SearchSpace& space) override {
    std::map<std::string, double> out;
    std::vector<EncodedDim> dims;
    for (const auto& [name, dist] : space) dims.push_back(detail::encoded_dim(dist));
    std::size_t n_finished = 0;
    std::vector<Observation> obs = collect(study, trial, space, dims, n_finished);
    if (space.empty() || n_finished < static_cast<std::size_t>(m_options.n_startup_trials)) {
      return out;
    }
    if (m_options.tpe_after > 0 && n_finished >= static_cast<std::size_t>(m_options.tpe_after)) {
      return out;  // handed over: sample_independent (TPE) draws every parameter
    }
    GpData data = make_data(dims, obs, [](const Observation& o) { return o.y; });
    if (!standardise(data.y, m_options.warp))
      return out;  // nothing measured yet: independent sampling
    const GaussianProcess objective(data);
    detail::Acquisition acquisition;
    acquisition.objective = &objective;
    std::vector<std::size_t> order(obs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Feasible measured trials first, then by value: the incumbent and the local-search starts.
    auto rank = [&](std::size_t i) {
      return std::make_tuple(!obs[i].measured, !obs[i].feasible(), data.y[i]);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
    if (obs[order[0]].measured && obs[order[0]].feasible()) {
      acquisition.has_best = true;
      acquisition.best = data.y[order[0]];
    }
    std::vector<GaussianProcess> constraint_models;
    if (m_options.constraints) constraint_models = fit_constraints(dims, obs, acquisition);
    for (const auto& model : constraint_models) acquisition.constraints.push_back(&model);
    std::vector<std::vector<double>> incumbents;
    for (std::size_t k = 0; k < std::min(k_incumbents, order.size()); ++k) {
      if (obs[order[k]].measured) incumbents.push_back(obs[order[k]].x);
    }
    Rng rng = m_streams.stream(trial.number);
    const std::vector<double> best =
        detail::maximise_acquisition(acquisition, dims, incumbents, rng, {});
    for (std::size_t j = 0; j < dims.size(); ++j) {
      out[space[j].first] = detail::decode(dims[j], best[j]);
    }
    return out;
  }

  double sample_independent(const StudyView& study, const FrozenTrial& trial,
                            const std::string& name, const Distribution& dist) override {
    return m_independent->sample_independent(study, trial, name, dist);
  }

  void after_trial(const StudyView& study, const FrozenTrial& trial) override {
    m_independent->after_trial(study, trial);
  }

 private:
  // One trial as the sampler last read it (by position in trials()): whether and how it is an
  // observation of the modelled space. Kept across suggestions and refreshed from the study's
  // change log, so a suggestion reads only the trials that changed since the last one.
  struct Slot {
    int number = -1;
    bool counted = false;   // COMPLETE with a value, or PRUNED: counts towards n_startup_trials
    bool eligible = false;  // an observation: its state teaches and it has every parameter
    Observation obs;        // x and y when eligible (constraints: looked up when used)
  };

  // Reads trial `position` into its slot, keeping the counts and orders in step.
  void refresh(const StudyView& study, std::size_t position) {
    if (m_slots.size() <= position) m_slots.resize(position + 1);
    Slot& slot = m_slots[position];
    if (slot.eligible) {
      m_by_y.erase({slot.obs.y, position});
      m_eligible.erase(position);
    }
    if (slot.counted) --m_counted;
    slot = Slot{};
    const FrozenTrial& t = study.trials()[position];
    slot.number = t.number;
    if (t.system_attrs.contains(k_repeat_of_attr)) return;
    Observation& o = slot.obs;
    if (t.state == TrialState::complete && t.value) {
      o.measured = std::isfinite(*t.value);
      o.y = o.measured ? m_sign * *t.value : k_inf;
    } else if (t.state != TrialState::pruned &&
               !(t.state == TrialState::running && m_options.constant_liar)) {
      return;  // FAIL and WAITING trials teach nothing
    }
    slot.counted = t.state == TrialState::complete || t.state == TrialState::pruned;
    if (slot.counted) ++m_counted;
    o.x.resize(m_dims.size());
    for (std::size_t j = 0; j < m_dims.size(); ++j) {
      auto it = t.params.find(m_slots_space[j].first);
      if (it == t.params.end() || !usable_value(m_slots_space[j].second, it->second)) return;
      o.x[j] = detail::encode(m_dims[j], it->second);
    }
    slot.eligible = true;
    m_by_y.insert({o.y, position});
    m_eligible.insert(position);
  }

  // Brings the slots up to `study` for `space`: the changed trials alone, or every trial when
  // the space, the direction or the study's log is new.
  void catch_up(const StudyView& study, const SearchSpace& space,
                const std::vector<EncodedDim>& dims) {
    const double sign = study.direction() == Direction::minimize ? 1.0 : -1.0;
    ChangedTrials changes = take_changes(study, m_cursor);
    bool same_space = space.size() == m_slots_space.size() && sign == m_sign;
    for (std::size_t j = 0; same_space && j < space.size(); ++j) {
      same_space = space[j].first == m_slots_space[j].first &&
                   same_distribution(space[j].second, m_slots_space[j].second);
    }
    if (changes.from_scratch || !same_space) {
      m_slots.clear();
      m_by_y.clear();
      m_eligible.clear();
      m_counted = 0;
      m_slots_space = space;
      m_dims = dims;
      m_sign = sign;
      for (std::size_t i = 0; i < study.trials().size(); ++i) refresh(study, i);
      return;
    }
    for (const std::size_t position : changes.positions) refresh(study, position);
  }

  // The trials the model learns from, in number order, the trial being sampled left out; over
  // max_trials observations, the best half by value and the most recent others (ties by number,
  // as a stable sort of the number-ordered list). n_finished counts COMPLETE (with a value) and
  // PRUNED trials, parameters or not. O(max_trials log n) once caught up.
  std::vector<Observation> collect(const StudyView& study, const FrozenTrial& trial,
                                   const SearchSpace& space, const std::vector<EncodedDim>& dims,
                                   std::size_t& n_finished) {
    catch_up(study, space, dims);
    // The trial being sampled, when the study holds it already (RUNNING, as the runner syncs).
    std::optional<std::size_t> self;
    for (std::size_t i = m_slots.size(); i-- > 0;) {
      if (m_slots[i].number == trial.number) {
        self = i;
        break;
      }
      if (m_slots[i].number >= 0 && m_slots[i].number < trial.number) break;
    }
    n_finished = m_counted - (self && m_slots[*self].counted ? 1 : 0);
    const auto cap = static_cast<std::size_t>(std::max(m_options.max_trials, 2));
    const std::size_t n_eligible = m_eligible.size() - (self && m_slots[*self].eligible ? 1 : 0);
    std::vector<std::size_t> kept;
    if (n_eligible <= cap) {
      for (const std::size_t i : m_eligible)
        if (i != self) kept.push_back(i);
    } else {
      std::set<std::size_t> keep;
      for (auto it = m_by_y.begin(); it != m_by_y.end() && keep.size() < cap / 2; ++it)
        if (it->second != self) keep.insert(it->second);
      std::size_t n = keep.size();
      for (auto it = m_eligible.rbegin(); it != m_eligible.rend() && n < cap; ++it) {
        if (*it == self || keep.contains(*it)) continue;
        keep.insert(*it);
        ++n;
      }
      kept.assign(keep.begin(), keep.end());
    }
    std::vector<Observation> obs;
    obs.reserve(kept.size());
    for (const std::size_t i : kept) {
      obs.push_back(m_slots[i].obs);
      obs.back().constraints = &study.trials()[i].constraints;
    }
    return obs;
  }

  template <class Target>
  static GpData make_data(const std::vector<EncodedDim>& dims, const std::vector<Observation>& obs,
                          Target target) {
    GpData data;
    data.d = dims.size();
    for (const auto& dim : dims) data.categorical.push_back(dim.categorical);
    for (const auto& o : obs) {
      const double y = target(o);
      if (std::isnan(y)) continue;
      data.x.insert(data.x.end(), o.x.begin(), o.x.end());
      data.y.push_back(y);
    }
    return data;
  }

  // One model per constraint over the trials that report it; the threshold 0 is standardised
  // with the values.
  std::vector<GaussianProcess> fit_constraints(const std::vector<EncodedDim>& dims,
                                               const std::vector<Observation>& obs,
                                               detail::Acquisition& acquisition) const {
    std::size_t n_constraints = 0;
    for (const auto& o : obs) n_constraints = std::max(n_constraints, o.constraints->size());
    std::vector<GaussianProcess> models;
    models.reserve(n_constraints);
    for (std::size_t c = 0; c < n_constraints; ++c) {
      GpData data = make_data(dims, obs, [&](const Observation& o) {
        const bool has = o.constraints->size() > c && std::isfinite((*o.constraints)[c]);
        return has ? (*o.constraints)[c] : std::numeric_limits<double>::quiet_NaN();
      });
      if (data.size() == 0) continue;
      const double mean =
          std::accumulate(data.y.begin(), data.y.end(), 0.0) / static_cast<double>(data.size());
      double ss = 0.0;
      for (double y : data.y) ss += (y - mean) * (y - mean);
      double sd = std::sqrt(ss / static_cast<double>(data.size()));
      if (!(sd > 1e-12 * (1.0 + std::abs(mean)))) sd = 1.0;
      for (double& y : data.y) y = (y - mean) / sd;
      acquisition.thresholds.push_back(-mean / sd);
      models.emplace_back(std::move(data));
    }
    return models;
  }

  GpOptions m_options;
  TrialStreams m_streams;  // acquisition search, per trial (rng.h)
  std::unique_ptr<Sampler> m_independent;
  IntersectionSearchSpace m_space;

  // The observations, by position in the study's trials (collect()).
  ChangeCursor m_cursor;
  SearchSpace m_slots_space;  // the space the slots are encoded in
  std::vector<EncodedDim> m_dims;
  double m_sign = 1.0;  // +1 minimising, -1 maximising
  std::vector<Slot> m_slots;
  std::set<std::pair<double, std::size_t>> m_by_y;  // eligible slots by (y, position)
  std::set<std::size_t> m_eligible;                 // eligible positions
  std::size_t m_counted = 0;                        // slots with `counted`
};

}  // namespace

std::expected<GpOptions, std::string> gp_options_from_json(const nlohmann::json& config) {
  GpOptions o;
  if (config.is_null()) return o;
  if (!config.is_object()) return std::unexpected("sampler: must be a mapping such as {type: gp}");
  for (const auto& [key, value] : config.items()) {
    if (key == "type") {
      if (!value.is_string() || value.get<std::string>() != "gp") {
        return std::unexpected("sampler.type: the GP options need type: gp");
      }
    } else if (key == "seed") {
      auto parsed = seed_from_json(value);
      if (!parsed) return std::unexpected(parsed.error());
      o.seed = *parsed;
    } else if (key == "warp") {
      if (!value.is_string() || (value != "none" && value != "log" && value != "rank")) {
        return std::unexpected("sampler.warp: must be none, log or rank");
      }
      o.warp = value.get<std::string>();
    } else if (key == "constant_liar" || key == "constraints") {
      if (!value.is_boolean()) {
        return std::unexpected(fmt::format("sampler.{}: must be true or false", key));
      }
      (key == "constant_liar" ? o.constant_liar : o.constraints) = value.get<bool>();
    } else if (key == "n_startup_trials" || key == "max_trials" || key == "tpe_after") {
      const int min = key == "max_trials" ? 2 : 0;
      const std::int64_t max = key == "tpe_after" ? 10000000 : 100000;
      if (!value.is_number_integer() || value.get<std::int64_t>() < min ||
          value.get<std::int64_t>() > max) {
        return std::unexpected(
            fmt::format("sampler.{}: must be an integer from {} to {}", key, min, max));
      }
      (key == "max_trials"  ? o.max_trials
       : key == "tpe_after" ? o.tpe_after
                            : o.n_startup_trials) = static_cast<int>(value.get<std::int64_t>());
    } else {
      return std::unexpected(
          fmt::format("sampler.{}: unknown option for the GP sampler (known: seed, "
                      "n_startup_trials, constant_liar, constraints, max_trials, warp, tpe_after)",
                      key));
    }
  }
  return o;
}

std::unique_ptr<Sampler> make_gp_sampler(const GpOptions& options) {
  return std::make_unique<GpSampler>(options);
}

}  // namespace tune::search
