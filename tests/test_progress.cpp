// unit: the progress reporter draws done/total, rate and time left on a terminal, nothing elsewhere.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/Progress.hpp"

namespace attnsim::test {
namespace {

TEST(Progress, LineHasDoneTotalRateAndEta) {
  const Progress p("check", "pairs", nullptr);
  EXPECT_EQ(p.line(30, 120, 10.0), "check: 30/120 pairs (25%), 3.0/s, ETA 30s");
  EXPECT_EQ(p.line(1, 1000, 1.0), "check: 1/1000 pairs (0%), 1.0/s, ETA 16m39s");
  EXPECT_EQ(p.line(120, 120, 40.0), "check: 120/120 pairs (100%), 3.0/s, ETA --");
  EXPECT_EQ(p.line(0, 10, 0.0), "check: 0/10 pairs (0%), 0.0/s, ETA --");
}

TEST(Progress, WritesNothingWhenTheStreamIsNotATerminal) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  Progress p("check", "pairs", file);
  EXPECT_FALSE(p.enabled());
  p.update(1, 2);
  p.update(2, 2);
  EXPECT_EQ(std::ftell(file), 0L);
  std::fclose(file);
}

}  // namespace
}  // namespace attnsim::test
