// unit: suggestions for a mistyped id prefer the ids that start with what was typed.
#include <gtest/gtest.h>

#include "core/Strings.hpp"

namespace attnsim::test {
namespace {

const std::vector<std::string> kHardware{"a100-sxm-80g", "h100-pcie", "h100-sxm", "h20", "h200", "b200"};

TEST(Strings, APrefixSuggestsEveryIdItStarts) {
  EXPECT_EQ(suggestions("h100", kHardware), (std::vector<std::string>{"h100-pcie", "h100-sxm"}));
  EXPECT_EQ(didYouMean("h100", kHardware), " (did you mean 'h100-pcie' or 'h100-sxm'?)");
  EXPECT_EQ(didYouMean("a100", kHardware), " (did you mean 'a100-sxm-80g'?)");
}

TEST(Strings, WithoutAPrefixTheClosestTypoIsSuggested) {
  EXPECT_EQ(didYouMean("h2000", kHardware), " (did you mean 'h200'?)");
  EXPECT_EQ(didYouMean("b20O", kHardware), " (did you mean 'b200'?)");
  EXPECT_EQ(didYouMean("tpu-v5", kHardware), "");
}

TEST(Strings, APrefixOfMostOfTheListSaysNothingUseful) {
  const std::vector<std::string> many{"h1", "h2", "h3", "h4", "h5", "h6", "h7"};
  EXPECT_EQ(suggestions("h", many).size(), 1U);  // the closest typo, not all seven
  EXPECT_EQ(suggestions("", many).size(), 1U);
}

}  // namespace
}  // namespace attnsim::test
