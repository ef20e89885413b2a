#include "tuner/study/yaml_reader.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tune::tuner {

using search::ParamValue;

void YamlReader::fail(const YAML::Node& node, const std::string& key,
                      const std::string& what) const {
  const int line = node.IsDefined() && node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  throw SpecError{fmt::format("{}:{}: key '{}': {}", m_file, line, key, what)};
}

void YamlReader::check_keys(const YAML::Node& map, const std::string& where,
                            const std::set<std::string>& allowed) const {
  if (!map.IsMap()) fail(map, where, "expected a mapping");
  for (const auto& kv : map) {
    const auto key = kv.first.as<std::string>();
    if (!allowed.contains(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(kv.first, join(where, key), fmt::format("unknown key (allowed: {})", list));
    }
  }
}

void YamlReader::fail_in(const YAML::Node& root, const std::string& section,
                         const std::string& error) const {
  const auto colon = error.find(": ");
  std::string key = section;
  std::string what = error;
  if (colon != std::string::npos && error.starts_with(section) &&
      error.substr(0, colon).find(' ') == std::string::npos) {
    key = error.substr(0, colon);
    what = error.substr(colon + 2);
  }
  // The deepest node of the key's path that the file has.
  // (reset(), not operator=: assigning a YAML::Node overwrites the node it refers to.)
  YAML::Node node = root[section];
  std::size_t pos = section.size();
  while (pos < key.size() && key[pos] == '.' && node.IsMap()) {
    const auto end = std::min(key.find('.', pos + 1), key.size());
    const YAML::Node& parent = node;
    const YAML::Node child = parent[key.substr(pos + 1, end - pos - 1)];
    if (!child) break;
    node.reset(child);
    pos = end;
  }
  fail(node, key, what);
}

std::string YamlReader::join(const std::string& a, const std::string& b) {
  return a.empty() ? b : a + "." + b;
}

std::string YamlReader::string(const YAML::Node& n, const std::string& key) const {
  if (!n.IsScalar()) fail(n, key, "expected a string");
  return n.Scalar();
}

bool YamlReader::boolean(const YAML::Node& n, const std::string& key) const {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) fail(n, key, "expected true or false");
  return v;
}

double YamlReader::number(const YAML::Node& n, const std::string& key) const {
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v)) {
    fail(n, key, "expected a finite number");
  }
  return v;
}

std::int64_t YamlReader::integer(const YAML::Node& n, const std::string& key) const {
  long long v = 0;
  if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v)) fail(n, key, "expected an integer");
  return v;
}

std::string YamlReader::scalar_text(const YAML::Node& n, const std::string& key) const {
  if (!n.IsScalar()) fail(n, key, "expected a scalar value");
  return n.Scalar();
}

ParamValue YamlReader::value(const YAML::Node& n, const std::string& key) const {
  if (n.IsNull()) return std::monostate{};
  if (!n.IsScalar()) fail(n, key, "expected a scalar value (null, bool, number or string)");
  if (n.Tag() == "!") return n.Scalar();  // quoted: always a string
  long long i = 0;
  if (YAML::convert<long long>::decode(n, i)) return static_cast<std::int64_t>(i);
  double d = 0;
  if (YAML::convert<double>::decode(n, d)) return d;
  bool b = false;
  if (YAML::convert<bool>::decode(n, b)) return b;
  return n.Scalar();
}

search::Distribution YamlReader::param(const YAML::Node& n, const std::string& key) const {
  if (n.IsSequence()) {  // shorthand: a list of choices
    search::CategoricalDistribution c;
    for (std::size_t i = 0; i < n.size(); ++i) c.choices.push_back(value(n[i], key));
    return checked(c, n, key);
  }
  check_keys(n, key, {"type", "low", "high", "log", "step", "choices"});
  if (!n["type"]) fail(n, key, "missing 'type' (int, float or categorical)");
  const auto type = string(n["type"], join(key, "type"));
  auto require = [&](const char* k) {
    if (!n[k]) fail(n, join(key, k), fmt::format("required for type {}", type));
    return n[k];
  };
  auto forbid = [&](const char* k) {
    if (n[k]) fail(n[k], join(key, k), fmt::format("not allowed for type {}", type));
  };
  // int and float: the same keys, read as integers or as numbers.
  auto range = [&](auto d, auto read) {
    forbid("choices");
    d.low = (this->*read)(require("low"), join(key, "low"));
    d.high = (this->*read)(require("high"), join(key, "high"));
    if (n["log"]) d.log = boolean(n["log"], join(key, "log"));
    if (n["step"]) d.step = (this->*read)(n["step"], join(key, "step"));
    return checked(d, n, key);
  };
  if (type == "int") return range(search::IntDistribution{}, &YamlReader::integer);
  if (type == "float") return range(search::FloatDistribution{}, &YamlReader::number);
  if (type == "categorical") {
    for (const char* k : {"low", "high", "log", "step"}) forbid(k);
    const auto& ch = require("choices");
    if (!ch.IsSequence()) fail(ch, join(key, "choices"), "expected a list");
    search::CategoricalDistribution c;
    for (std::size_t i = 0; i < ch.size(); ++i) c.choices.push_back(value(ch[i], key));
    return checked(c, n, key);
  }
  fail(n["type"], join(key, "type"),
       fmt::format("unknown type '{}' (int, float, categorical)", type));
}

search::Distribution YamlReader::checked(search::Distribution d, const YAML::Node& n,
                                         const std::string& key) const {
  if (auto ok = search::validate(d); !ok) fail(n, key, ok.error());
  return d;
}

nlohmann::json YamlReader::to_json(const YAML::Node& n, const std::string& key) const {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : n) {
      const auto k = kv.first.as<std::string>();
      j[k] = to_json(kv.second, join(key, k));
    }
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (std::size_t i = 0; i < n.size(); ++i) j.push_back(to_json(n[i], key));
    return j;
  }
  return search::param_value_to_json(value(n, key));
}

}  // namespace tune::tuner
