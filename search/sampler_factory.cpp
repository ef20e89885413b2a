#include "search/sampler_factory.h"

#include <fmt/format.h>

#include <optional>

#include "search/gp_sampler.h"
#include "search/grid_sampler.h"
#include "search/random_sampler.h"
#include "search/tpe.h"

namespace tune::search {

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
