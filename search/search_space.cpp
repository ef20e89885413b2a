#include "search/search_space.h"

#include <cmath>

namespace tune::search {

bool same_distribution(const Distribution& a, const Distribution& b) {
  if (a.index() != b.index()) return false;
  if (const auto* fa = std::get_if<FloatDistribution>(&a)) {
    const auto& fb = std::get<FloatDistribution>(b);
    return fa->low == fb.low && fa->high == fb.high && fa->log == fb.log && fa->step == fb.step;
  }
  if (const auto* ia = std::get_if<IntDistribution>(&a)) {
    const auto& ib = std::get<IntDistribution>(b);
    return ia->low == ib.low && ia->high == ib.high && ia->log == ib.log && ia->step == ib.step;
  }
  return std::get<CategoricalDistribution>(a).choices ==
         std::get<CategoricalDistribution>(b).choices;
}

bool usable_value(const Distribution& dist, double v) {
  if (std::isnan(v)) return false;
  if (const auto* f = std::get_if<FloatDistribution>(&dist)) return v >= f->low && v <= f->high;
  if (const auto* i = std::get_if<IntDistribution>(&dist)) {
    return v >= static_cast<double>(i->low) && v <= static_cast<double>(i->high);
  }
  const auto& c = std::get<CategoricalDistribution>(dist);
  return v >= 0.0 && v < static_cast<double>(c.choices.size()) && v == std::floor(v);
}

void IntersectionSearchSpace::update(const StudyView& study) {
  const auto& trials = study.trials();
  for (const std::size_t position : take_changes(study, m_cursor).positions) {
    const FrozenTrial& t = trials[position];
    if (t.state != TrialState::complete && t.state != TrialState::pruned) continue;
    if (t.number < 0) continue;
    const auto number = static_cast<std::size_t>(t.number);
    if (m_seen.size() <= number) m_seen.resize(number + 1, false);
    if (m_seen[number]) continue;
    m_seen[number] = true;
    if (!m_intersection) {
      m_intersection = t.distributions;
      continue;
    }
    for (auto it = m_intersection->begin(); it != m_intersection->end();) {
      auto other = t.distributions.find(it->first);
      if (other == t.distributions.end() || !same_distribution(other->second, it->second)) {
        it = m_intersection->erase(it);
      } else {
        ++it;
      }
    }
  }
}

SearchSpace IntersectionSearchSpace::get() const {
  SearchSpace space;
  if (!m_intersection) return space;
  for (const auto& [name, dist] : *m_intersection) {
    if (!is_single(dist)) space.emplace_back(name, dist);
  }
  return space;
}

}  // namespace tune::search
