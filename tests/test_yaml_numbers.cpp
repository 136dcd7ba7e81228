// unit: YamlReader::getNumbers reads a list of numbers written as a YAML list or as one text, and
// refuses what is not a number in range, naming the value.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/YamlReader.hpp"

namespace attnsim::test {
namespace {

std::vector<double> numbersOf(const std::string& document, double min = 0, double max = 10) {
  const YamlReader r = YamlReader::parseDocument(document, "grid.yaml");
  return r.getNumbers("grid", min, max);
}

std::string errorOf(const std::string& document, double min = 0, double max = 10) {
  try {
    (void)numbersOf(document, min, max);
  } catch (const CatalogError& e) {
    return e.what();
  }
  return "no error";
}

TEST(YamlNumbers, AListAndATextOfTheSameNumbersReadAlike) {
  const std::vector<double> want{0.5, 1, 2.25, 3e-3};
  EXPECT_EQ(numbersOf("grid: [0.5, 1, 2.25, 3e-3]\n"), want);
  EXPECT_EQ(numbersOf("grid: \"0.5 1 2.25 3e-3\"\n"), want);
  EXPECT_EQ(numbersOf("grid: |\n  0.5 1\n  2.25, 3e-3\n"), want);
}

TEST(YamlNumbers, WhatIsNotANumberInRangeIsRefusedNamingTheValue) {
  {
    const std::string e = errorOf("grid: |\n  0.5 1\n  2.2x 3\n");
    EXPECT_NE(e.find("grid.yaml:1"), std::string::npos) << e;
    EXPECT_NE(e.find("value 3 ('2.2x') is not a number"), std::string::npos) << e;
  }
  EXPECT_NE(errorOf("grid: [1, two]\n").find("value 2 ('two') is not a number"), std::string::npos);
  EXPECT_NE(errorOf("grid: \"1 nan\"\n").find("value 2 ('nan') is not a number"), std::string::npos);
  EXPECT_NE(errorOf("grid: \"1 12\"\n").find("value 2 (12) is outside [0, 10]"), std::string::npos);
  EXPECT_NE(errorOf("grid: \" , \"\n").find("expected at least one number"), std::string::npos);
  EXPECT_NE(errorOf("grid: {a: 1}\n").find("expected a list of numbers"), std::string::npos);
  EXPECT_NE(errorOf("other: 1\n").find("grid"), std::string::npos);
}

}  // namespace
}  // namespace attnsim::test
