#include "search/sampler.h"

#include <fmt/format.h>

namespace tune::search {

std::expected<std::uint64_t, std::string> seed_from_json(const nlohmann::json& value) {
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0) {
    return std::unexpected("sampler.seed: must be an integer >= 0");
  }
  return value.get<std::uint64_t>();
}

std::map<std::string, double> suggest_all(Sampler& sampler, const StudyView& study,
                                          FrozenTrial& trial, const SearchSpace& space) {
  std::map<std::string, double> out;
  const SearchSpace relative_space = sampler.infer_relative_search_space(study, trial);
  const auto relative = relative_space.empty()
                            ? std::map<std::string, double>{}
                            : sampler.sample_relative(study, trial, relative_space);
  for (const auto& [name, dist] : space) {
    double value;
    if (auto fixed = trial.params.find(name); fixed != trial.params.end()) {
      value = fixed->second;
    } else if (auto rel = relative.find(name);
               rel != relative.end() && contains(dist, rel->second)) {
      value = rel->second;
    } else {
      value = sampler.sample_independent(study, trial, name, dist);
    }
    // Later parameters of the same trial may depend on earlier ones (conditional spaces).
    trial.params[name] = value;
    trial.distributions[name] = dist;
    out[name] = value;
  }
  return out;
}

}  // namespace tune::search
