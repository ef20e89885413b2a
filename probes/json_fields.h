// Reading the probes' stored JSON back, for the readers beside each writer (prediction_from_json,
// verdict_from_json): typed fields, and the key path and reason of the first that is wrong.
// Internal to probes/. Not thread-safe (one reader, one object).
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/predict.h"  // JsonReadError
#include "probes/topology.h"

namespace tune::probes {

// Reads the fields of one JSON object into typed values, noting the first one that is there but
// of another type (a missing one keeps its default).
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string path)
      : m_object(object), m_path(std::move(path)) {}

  template <typename T>
  void get(const char* key, T& into) {
    const auto it = m_object.find(key);
    if (it == m_object.end() || it->is_null()) return;
    if constexpr (std::is_same_v<T, bool>) {
      if (it->is_boolean()) return void(into = it->get<bool>());
    } else if constexpr (std::is_integral_v<T>) {
      if (it->is_number_integer()) return void(into = it->get<T>());
    } else if constexpr (std::is_floating_point_v<T>) {
      if (it->is_number()) return void(into = it->get<T>());
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (it->is_string()) return void(into = it->get<std::string>());
    } else {  // a list of strings or of whole numbers
      if (it->is_array()) {
        T out;
        for (const auto& e : *it) {
          using E = typename T::value_type;
          if constexpr (std::is_same_v<E, std::string>) {
            if (!e.is_string()) return fail(key, "is not a list of strings");
            out.push_back(e.get<std::string>());
          } else {
            if (!e.is_number_integer()) return fail(key, "is not a list of whole numbers");
            out.push_back(e.get<E>());
          }
        }
        return void(into = std::move(out));
      }
    }
    fail(key, "is not of the type tune's probes write");
  }
  // A number written as null where it was not measured: whether it was.
  bool measured(const char* key, double& into) {
    const auto it = m_object.find(key);
    if (it == m_object.end() || it->is_null()) return false;
    if (!it->is_number()) {
      fail(key, "is not a number");
      return false;
    }
    into = it->get<double>();
    return true;
  }
  void cpus(const char* key, std::vector<int>& into) {
    std::string text;
    get(key, text);
    if (!text.empty()) into = parse_cpu_list(text);
  }
  void fail(const std::string& key, std::string why) {
    if (!m_error) m_error = JsonReadError{m_path + "." + key, std::move(why)};
  }
  const std::optional<JsonReadError>& error() const { return m_error; }

 private:
  const nlohmann::json& m_object;
  std::string m_path;
  std::optional<JsonReadError> m_error;
};

using ReadResult = std::optional<JsonReadError>;

// An array of objects at `key` of `j`, each read by `read(object, path)`; a missing key is none.
template <typename Read>
inline ReadResult each_object(const nlohmann::json& j, const std::string& path, const char* key,
                              Read read) {
  const auto list = j.find(key);
  if (list == j.end() || list->is_null()) return std::nullopt;
  if (!list->is_array()) return JsonReadError{path + "." + key, "is not a list"};
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string at = path + "." + key + "[" + std::to_string(i) + "]";
    if (!(*list)[i].is_object()) return JsonReadError{at, "is not a JSON object"};
    if (auto error = read((*list)[i], at)) return error;
  }
  return std::nullopt;
}

}  // namespace tune::probes
