#include "search/sampler.h"

#include <fmt/format.h>

#include "search/gp_sampler.h"
#include "search/grid_sampler.h"
#include "search/random_sampler.h"
#include "search/tpe.h"

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

std::expected<std::unique_ptr<Sampler>, std::string> make_sampler(const nlohmann::json& config,
                                                                  const SearchSpace& space,
                                                                  std::size_t n_objectives) {
  if (!config.is_object() && !config.is_null()) {
    return std::unexpected("sampler: must be a mapping such as {type: tpe, seed: 1}");
  }
  const nlohmann::json cfg = config.is_null() ? nlohmann::json::object() : config;
  // The default is the sampler bench/search measured best at 20 to 50 trials
  // (docs/samplers-and-noise.md); the GP models one objective, so a multi-objective study gets
  // MOTPE.
  const bool multi = n_objectives > 1;
  std::string type = multi ? "tpe" : "gp";
  if (auto it = cfg.find("type"); it != cfg.end()) {
    if (!it->is_string())
      return std::unexpected("sampler.type: must be one of tpe, gp, random, grid");
    type = it->get<std::string>();
  }
  if (type == "tpe") {
    auto options = tpe_options_from_json(cfg);
    if (!options) return std::unexpected(options.error());
    return make_tpe_sampler(*options);
  }
  if (type == "gp" && multi) {
    return std::unexpected(fmt::format(
        "sampler.type: gp models one objective and this study has {}; use tpe (the default for "
        "several objectives: multi-objective TPE), random or grid",
        n_objectives));
  }
  if (type == "gp") {
    auto options = gp_options_from_json(cfg);
    if (!options) return std::unexpected(options.error());
    return make_gp_sampler(*options);
  }
  if (type == "grid") return make_grid_sampler(cfg, space);
  if (type == "random") {
    std::optional<std::uint64_t> seed;
    for (const auto& [key, value] : cfg.items()) {
      if (key == "type") continue;
      if (key != "seed") {
        return std::unexpected(
            fmt::format("sampler.{}: unknown option for the random sampler (known: seed)", key));
      }
      auto parsed = seed_from_json(value);
      if (!parsed) return std::unexpected(parsed.error());
      seed = *parsed;
    }
    return make_random_sampler(seed);
  }
  return std::unexpected(
      fmt::format("sampler.type: unknown sampler '{}' (known: tpe, gp, random, grid)", type));
}

}  // namespace tune::search
