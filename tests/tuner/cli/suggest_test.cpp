// tuner/cli/suggest.h: the edit distance behind "did you mean 'report'?" and its threshold.
#include "tuner/cli/suggest.h"

#include <gtest/gtest.h>

namespace tune::tuner {
namespace {

const std::vector<std::string> k_commands = {"best",   "trials", "report", "confirm",
                                             "export", "probe",  "init",   "help"};

TEST(EditDistance, CountsInsertDeleteSubstituteAndSwap) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("report", "report"), 0u);
  EXPECT_EQ(edit_distance("reprot", "report"), 1u);  // two neighbours swapped: one edit
  EXPECT_EQ(edit_distance("repot", "report"), 1u);
  EXPECT_EQ(edit_distance("reporrt", "report"), 1u);
  EXPECT_EQ(edit_distance("rexort", "report"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // optimal string alignment: no edit of a swap
  EXPECT_EQ(edit_distance("abc", "ca"), edit_distance("ca", "abc"));
}

TEST(NearestName, SuggestsTheCommandMeant) {
  EXPECT_EQ(nearest_name("reprot", k_commands), "report");
  EXPECT_EQ(nearest_name("tirals", k_commands), "trials");
  EXPECT_EQ(nearest_name("exprot", k_commands), "export");
  EXPECT_EQ(nearest_name("confrim", k_commands), "confirm");
  EXPECT_EQ(nearest_name("bset", k_commands), "best");
  EXPECT_EQ(nearest_name("Report", k_commands), "report");  // case is no distance
  EXPECT_EQ(nearest_name("conf", k_commands), "confirm");   // the start of one
  EXPECT_EQ(nearest_name("probes", k_commands), "probe");
}

TEST(NearestName, NothingWhenNoneIsNear) {
  EXPECT_EQ(nearest_name("frobnicate", k_commands), std::nullopt);
  EXPECT_EQ(nearest_name("", k_commands), std::nullopt);
  EXPECT_EQ(nearest_name("ab", k_commands), std::nullopt);
  EXPECT_EQ(nearest_name("xyz", k_commands), std::nullopt);
  EXPECT_EQ(nearest_name("quickstart", k_commands), std::nullopt);
  EXPECT_EQ(nearest_name("bxxt", k_commands), std::nullopt);  // 2 edits of a short word
  EXPECT_EQ(nearest_name("reprot", {}), std::nullopt);
}

}  // namespace
}  // namespace tune::tuner
