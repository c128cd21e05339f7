// util/suggest.h: "did you mean" for mistyped names.
#include <gtest/gtest.h>

#include "util/suggest.h"

namespace {

using kopt::util::closest_match;
using kopt::util::did_you_mean;
using kopt::util::edit_distance;

TEST(Suggest, EditDistanceCountsSingleCharacterEdits) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("budget", "budget"), 0u);
  EXPECT_EQ(edit_distance("budgte", "budget"), 2u);  // a swap is two edits
  EXPECT_EQ(edit_distance("optimze", "optimize"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(Suggest, ClosestMatchTakesTyposAndPrefixesOnly) {
  const std::vector<std::string> subs = {"devices", "evaluate", "optimize", "generate"};
  EXPECT_EQ(closest_match("optimze", subs), "optimize");
  EXPECT_EQ(closest_match("gen", subs), "generate");  // a prefix of 3 or more characters
  EXPECT_EQ(closest_match("replay", subs), "");
  EXPECT_EQ(closest_match("ge", subs), "");  // too short to be a prefix, too far to be a typo
  EXPECT_EQ(did_you_mean("--budgte", {"--spec", "--budget"}), " (did you mean '--budget'?)");
  EXPECT_EQ(did_you_mean("--frobnicate", {"--spec", "--budget"}), "");
}

}  // namespace
