// Distributions: Optuna 3.1's exact JSON form (strings produced by optuna.distributions.
// distribution_to_json), round trips, contains / to_internal errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/distribution.h"

namespace tune::search {
namespace {

struct JsonCase {
  const char* optuna_json;
  Distribution dist;
};

TEST(Distribution, OptunaJsonRoundTrip) {
  const std::vector<JsonCase> cases = {
      {R"({"name": "IntDistribution", "attributes": {"log": false, "step": 1, "low": 1, "high": 64}})",
       IntDistribution{1, 64, false, 1}},
      {R"({"name": "IntDistribution", "attributes": {"log": true, "step": 1, "low": 1, "high": 1024}})",
       IntDistribution{1, 1024, true, 1}},
      {R"({"name": "IntDistribution", "attributes": {"log": false, "step": 5, "low": 0, "high": 100}})",
       IntDistribution{0, 100, false, 5}},
      {R"({"name": "FloatDistribution", "attributes": {"step": null, "low": 0.0, "high": 1.0, "log": false}})",
       FloatDistribution{0.0, 1.0, false, std::nullopt}},
      {R"({"name": "FloatDistribution", "attributes": {"step": null, "low": 0.0001, "high": 1.0, "log": true}})",
       FloatDistribution{1e-4, 1.0, true, std::nullopt}},
      {R"({"name": "FloatDistribution", "attributes": {"step": 0.25, "low": 0.5, "high": 2.5, "log": false}})",
       FloatDistribution{0.5, 2.5, false, 0.25}},
      {R"({"name": "CategoricalDistribution", "attributes": {"choices": ["ring", "tree", 3, true, null, 1.5]}})",
       CategoricalDistribution{{std::string("ring"), std::string("tree"), std::int64_t{3}, true,
                                std::monostate{}, 1.5}}},
  };
  for (const auto& c : cases) {
    const auto expected = nlohmann::json::parse(c.optuna_json);
    EXPECT_EQ(to_json(c.dist), expected) << c.optuna_json;
    auto back = distribution_from_json(expected);
    ASSERT_TRUE(back.has_value()) << back.error();
    EXPECT_EQ(to_json(*back), expected);
  }
}

TEST(Distribution, ContainsAndToInternal) {
  const Distribution ints = IntDistribution{0, 100, false, 5};
  EXPECT_TRUE(contains(ints, 35.0));
  EXPECT_FALSE(contains(ints, 36.0));
  EXPECT_FALSE(contains(ints, 105.0));
  EXPECT_FALSE(to_internal(ints, ParamValue{std::int64_t{7}}).has_value());
  EXPECT_EQ(*to_internal(ints, ParamValue{std::int64_t{10}}), 10.0);

  const Distribution cats = CategoricalDistribution{{std::string("ring"), std::string("tree")}};
  EXPECT_EQ(*to_internal(cats, ParamValue{std::string("tree")}), 1.0);
  auto missing = to_internal(cats, ParamValue{std::string("star")});
  ASSERT_FALSE(missing.has_value());
  EXPECT_FALSE(missing.error().empty());
  EXPECT_FALSE(contains(cats, 2.0));
  EXPECT_EQ(std::get<std::string>(to_external(cats, 0.0)), "ring");

  const Distribution logf = FloatDistribution{1e-3, 1.0, true, std::nullopt};
  EXPECT_TRUE(contains(logf, 0.5));
  EXPECT_FALSE(contains(logf, 2.0));
  EXPECT_FALSE(to_internal(logf, ParamValue{1.5}).has_value());
}

TEST(Distribution, ValidationNamesTheProblem) {
  EXPECT_FALSE(validate(IntDistribution{5, 1, false, 1}).has_value());
  EXPECT_FALSE(validate(FloatDistribution{0.0, 1.0, true, std::nullopt}).has_value());
  EXPECT_FALSE(validate(CategoricalDistribution{}).has_value());
  EXPECT_TRUE(validate(FloatDistribution{0.1, 1.0, true, std::nullopt}).has_value());
  EXPECT_TRUE(is_single(IntDistribution{3, 3, false, 1}));
  EXPECT_FALSE(is_single(IntDistribution{3, 4, false, 1}));
}

TEST(Distribution, JsonErrorsNameTheField) {
  auto bad = distribution_from_json(
      nlohmann::json::parse(R"({"name": "BetaDistribution", "attributes": {}})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("BetaDistribution"), std::string::npos);
}

}  // namespace
}  // namespace tune::search
