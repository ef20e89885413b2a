// Distributions: the value types that describe one parameter's domain, stored as Optuna's
// internal doubles (to_external()/to_internal() convert at the edges; JSON as Optuna 3.1's).
// Plain values: copyable, no shared state, safe to use from any thread.
// Design: docs/design-notes.md#searchdistributionh
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tune::search {

// A categorical choice or an external parameter value: None, bool, int, float or string,
// the same set Optuna's CategoricalDistribution accepts.
using ParamValue = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

struct FloatDistribution {
  double low = 0.0;
  double high = 0.0;
  bool log = false;            // sample uniformly in log space (low must be > 0)
  std::optional<double> step;  // grid spacing from low; none = continuous
};

struct IntDistribution {
  std::int64_t low = 0;
  std::int64_t high = 0;
  bool log = false;       // log sampling; then step must be 1
  std::int64_t step = 1;  // values are low, low+step, ... <= high
};

struct CategoricalDistribution {
  std::vector<ParamValue> choices;  // internal value = index into choices
};

using Distribution = std::variant<FloatDistribution, IntDistribution, CategoricalDistribution>;

// A visitor made of one lambda per alternative: std::visit(Overloaded{[](const FloatDistribution&)
// {...}, ...}, dist).
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

// Checks the invariants Optuna checks (low <= high, log needs low > 0, step > 0, non-empty
// choices); the message names what is wrong.
std::expected<void, std::string> validate(const Distribution& dist);

// True when the distribution has exactly one possible value.
bool is_single(const Distribution& dist);

// True when an internal value lies in the distribution (on the step grid, index in range).
bool contains(const Distribution& dist, double internal);

// External <-> internal conversions. to_internal fails for a value outside the domain.
std::expected<double, std::string> to_internal(const Distribution& dist, const ParamValue& value);
ParamValue to_external(const Distribution& dist, double internal);

// Optuna's JSON form: {"name": "FloatDistribution", "attributes": {...}}.
nlohmann::json to_json(const Distribution& dist);
std::expected<Distribution, std::string> distribution_from_json(const nlohmann::json& j);

// Value as JSON (null, bool, int, float, string) and as display text ("4", "0.001", "ring").
nlohmann::json param_value_to_json(const ParamValue& value);
ParamValue param_value_from_json(const nlohmann::json& j);
std::string param_value_to_string(const ParamValue& value);

}  // namespace tune::search
