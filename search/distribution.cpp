#include "search/distribution.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tune::search {
namespace {

// Optuna's tolerance for "on the step grid" (FloatDistribution._contains).
constexpr double k_grid_tolerance = 1e-8;

std::optional<double> as_number(const ParamValue& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&value)) return *d;
  return std::nullopt;
}

// Choices compare as Python's == does for the types a study file can hold: numbers by value
// (1 == 1.0), everything else by type and value.
bool same_choice(const ParamValue& a, const ParamValue& b) {
  const auto na = as_number(a);
  const auto nb = as_number(b);
  if (na && nb) return *na == *nb;
  return a == b;
}

}  // namespace

std::expected<void, std::string> validate(const Distribution& dist) {
  return std::visit(
      Overloaded{
          [](const FloatDistribution& d) -> std::expected<void, std::string> {
            if (!std::isfinite(d.low) || !std::isfinite(d.high)) {
              return std::unexpected("low and high must be finite numbers");
            }
            if (d.low > d.high) {
              return std::unexpected(fmt::format("low ({}) must be <= high ({})", d.low, d.high));
            }
            if (d.log && d.low <= 0.0) {
              return std::unexpected(fmt::format("a log range needs low > 0 (got {})", d.low));
            }
            if (d.step) {
              if (d.log) return std::unexpected("step cannot be combined with log");
              if (!(*d.step > 0.0)) {
                return std::unexpected(fmt::format("step must be > 0 (got {})", *d.step));
              }
            }
            return {};
          },
          [](const IntDistribution& d) -> std::expected<void, std::string> {
            if (d.low > d.high) {
              return std::unexpected(fmt::format("low ({}) must be <= high ({})", d.low, d.high));
            }
            if (d.log && d.low < 1) {
              return std::unexpected(fmt::format("a log range needs low >= 1 (got {})", d.low));
            }
            if (d.step < 1)
              return std::unexpected(fmt::format("step must be >= 1 (got {})", d.step));
            if (d.log && d.step != 1) return std::unexpected("step must be 1 for a log range");
            return {};
          },
          [](const CategoricalDistribution& d) -> std::expected<void, std::string> {
            // Repeated choices are allowed, as in Optuna: they weight a value for random draws.
            if (d.choices.empty()) return std::unexpected("choices must not be empty");
            return {};
          },
      },
      dist);
}

bool is_single(const Distribution& dist) {
  return std::visit(
      Overloaded{
          [](const FloatDistribution& d) {
            if (d.low == d.high) return true;
            return d.step && (d.high - d.low) < *d.step;
          },
          [](const IntDistribution& d) { return d.low == d.high || (d.high - d.low) < d.step; },
          [](const CategoricalDistribution& d) { return d.choices.size() == 1; },
      },
      dist);
}

bool contains(const Distribution& dist, double internal) {
  if (std::isnan(internal)) return false;
  return std::visit(
      Overloaded{
          [&](const FloatDistribution& d) {
            if (internal < d.low || internal > d.high) return false;
            if (!d.step) return true;
            const double k = (internal - d.low) / *d.step;
            return std::abs(k - std::round(k)) < k_grid_tolerance;
          },
          [&](const IntDistribution& d) {
            if (internal != std::floor(internal)) return false;
            if (internal < static_cast<double>(d.low) || internal > static_cast<double>(d.high)) {
              return false;
            }
            return (static_cast<std::int64_t>(internal) - d.low) % d.step == 0;
          },
          [&](const CategoricalDistribution& d) {
            return internal == std::floor(internal) && internal >= 0.0 &&
                   internal < static_cast<double>(d.choices.size());
          },
      },
      dist);
}

std::expected<double, std::string> to_internal(const Distribution& dist, const ParamValue& value) {
  std::expected<double, std::string> internal = std::visit(
      Overloaded{
          [&](const FloatDistribution&) -> std::expected<double, std::string> {
            if (auto n = as_number(value)) return *n;
            return std::unexpected(fmt::format("{} is not a number", param_value_to_string(value)));
          },
          [&](const IntDistribution&) -> std::expected<double, std::string> {
            auto n = as_number(value);
            if (!n || *n != std::floor(*n)) {
              return std::unexpected(
                  fmt::format("{} is not an integer", param_value_to_string(value)));
            }
            return *n;
          },
          [&](const CategoricalDistribution& d) -> std::expected<double, std::string> {
            for (std::size_t i = 0; i < d.choices.size(); ++i) {
              if (same_choice(d.choices[i], value)) return static_cast<double>(i);
            }
            return std::unexpected(
                fmt::format("{} is not one of the choices", param_value_to_string(value)));
          },
      },
      dist);
  if (internal && !contains(dist, *internal)) {
    return std::unexpected(
        fmt::format("{} is outside the parameter's range", param_value_to_string(value)));
  }
  return internal;
}

ParamValue to_external(const Distribution& dist, double internal) {
  return std::visit(Overloaded{
                        [&](const FloatDistribution&) -> ParamValue { return internal; },
                        [&](const IntDistribution&) -> ParamValue {
                          return static_cast<std::int64_t>(std::llround(internal));
                        },
                        [&](const CategoricalDistribution& d) -> ParamValue {
                          const auto i = static_cast<std::size_t>(std::llround(internal));
                          return i < d.choices.size() ? d.choices[i] : ParamValue{};
                        },
                    },
                    dist);
}

nlohmann::json to_json(const Distribution& dist) {
  return std::visit(
      Overloaded{
          [](const FloatDistribution& d) {
            return nlohmann::json{
                {"name", "FloatDistribution"},
                {"attributes",
                 {{"step", d.step ? nlohmann::json(*d.step) : nlohmann::json(nullptr)},
                  {"low", d.low},
                  {"high", d.high},
                  {"log", d.log}}}};
          },
          [](const IntDistribution& d) {
            return nlohmann::json{
                {"name", "IntDistribution"},
                {"attributes",
                 {{"log", d.log}, {"step", d.step}, {"low", d.low}, {"high", d.high}}}};
          },
          [](const CategoricalDistribution& d) {
            nlohmann::json choices = nlohmann::json::array();
            for (const auto& c : d.choices) choices.push_back(param_value_to_json(c));
            return nlohmann::json{{"name", "CategoricalDistribution"},
                                  {"attributes", {{"choices", choices}}}};
          },
      },
      dist);
}

std::expected<Distribution, std::string> distribution_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() ||
      !j.contains("attributes") || !j["attributes"].is_object()) {
    return std::unexpected("a distribution needs a string 'name' and an object 'attributes'");
  }
  const std::string name = j["name"].get<std::string>();
  const nlohmann::json& a = j["attributes"];
  auto number = [&](const char* key) -> std::expected<double, std::string> {
    if (!a.contains(key) || !a[key].is_number()) {
      return std::unexpected(fmt::format("{}: attribute '{}' must be a number", name, key));
    }
    return a[key].get<double>();
  };
  auto integer = [&](const char* key) -> std::expected<std::int64_t, std::string> {
    if (!a.contains(key) || !a[key].is_number_integer()) {
      return std::unexpected(fmt::format("{}: attribute '{}' must be an integer", name, key));
    }
    return a[key].get<std::int64_t>();
  };
  auto flag = [&](const char* key) { return a.value(key, false); };

  Distribution dist;
  // The legacy names are what Optuna < 3.0 wrote; Optuna 3.1 still reads them.
  if (name == "FloatDistribution" || name == "UniformDistribution" ||
      name == "LogUniformDistribution" || name == "DiscreteUniformDistribution") {
    auto low = number("low");
    auto high = number("high");
    if (!low) return std::unexpected(low.error());
    if (!high) return std::unexpected(high.error());
    FloatDistribution d;
    d.low = *low;
    d.high = *high;
    d.log = name == "LogUniformDistribution" || (name == "FloatDistribution" && flag("log"));
    const char* step_key = name == "DiscreteUniformDistribution" ? "q" : "step";
    if (a.contains(step_key) && !a[step_key].is_null()) {
      auto step = number(step_key);
      if (!step) return std::unexpected(step.error());
      d.step = *step;
    }
    dist = d;
  } else if (name == "IntDistribution" || name == "IntUniformDistribution" ||
             name == "IntLogUniformDistribution") {
    auto low = integer("low");
    auto high = integer("high");
    if (!low) return std::unexpected(low.error());
    if (!high) return std::unexpected(high.error());
    IntDistribution d;
    d.low = *low;
    d.high = *high;
    d.log = name == "IntLogUniformDistribution" || (name == "IntDistribution" && flag("log"));
    if (a.contains("step") && !a["step"].is_null()) {
      auto step = integer("step");
      if (!step) return std::unexpected(step.error());
      d.step = *step;
    }
    dist = d;
  } else if (name == "CategoricalDistribution") {
    if (!a.contains("choices") || !a["choices"].is_array()) {
      return std::unexpected("CategoricalDistribution: attribute 'choices' must be an array");
    }
    CategoricalDistribution d;
    for (const auto& c : a["choices"]) d.choices.push_back(param_value_from_json(c));
    dist = d;
  } else {
    return std::unexpected(fmt::format("unknown distribution '{}'", name));
  }
  if (auto ok = validate(dist); !ok)
    return std::unexpected(fmt::format("{}: {}", name, ok.error()));
  return dist;
}

nlohmann::json param_value_to_json(const ParamValue& value) {
  return std::visit(Overloaded{
                        [](std::monostate) { return nlohmann::json(nullptr); },
                        [](bool b) { return nlohmann::json(b); },
                        [](std::int64_t i) { return nlohmann::json(i); },
                        [](double d) { return nlohmann::json(d); },
                        [](const std::string& s) { return nlohmann::json(s); },
                    },
                    value);
}

ParamValue param_value_from_json(const nlohmann::json& j) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  return std::monostate{};
}

std::string param_value_to_string(const ParamValue& value) {
  return std::visit(Overloaded{
                        [](std::monostate) { return std::string("null"); },
                        [](bool b) { return std::string(b ? "true" : "false"); },
                        [](std::int64_t i) { return fmt::format("{}", i); },
                        [](double d) { return fmt::format("{}", d); },
                        [](const std::string& s) { return s; },
                    },
                    value);
}

}  // namespace tune::search
