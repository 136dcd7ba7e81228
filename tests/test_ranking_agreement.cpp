// unit: the validation report's ranking agreement (study/RankingAgreement) on a small constructed
// table: an agreement, measured ties (by p20-p80 spreads and by the repeat spread of rows that keep
// only a mean), a stated tie, a stated tie the measurement contradicts, and clear misses; and
// repeated measurements of one call, which are one entry of the ranking rather than two.
#include <gtest/gtest.h>

#include <cmath>

#include "catalog/Catalog.hpp"
#include "reports/StepValidation.hpp"
#include "reports/ValidationReport.hpp"
#include "study/Measurements.hpp"
#include "study/RankingAgreement.hpp"
#include "study/Validation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

RankedEntry entry(const std::string& impl, double measured, double predicted, double band) {
  RankedEntry e;
  e.impl = impl;
  e.measured_us = measured;
  e.predicted_us = predicted;
  e.band = band;
  return e;
}

RankedEntry spread(RankedEntry e, double p20, double p80) {
  e.p20_us = p20;
  e.p80_us = p80;
  return e;
}

RankedEntry repeats(RankedEntry e, double repeat_spread) {
  e.repeat_spread = repeat_spread;
  return e;
}

RankedEntry twice(RankedEntry e) {
  e.repeats = 2;
  return e;
}

RankingProblem problem(const std::string& name, std::vector<RankedEntry> entries) {
  return {"h100-sxm", name, std::move(entries)};
}

// Each problem: A and B; the comment says what the measurement and the prediction claim.
std::vector<RankingProblem> table() {
  return {
      // A measured and predicted fastest, far apart: agree, and decided (10 × 1.1 < 20 / 1.1).
      problem("agree", {entry("A", 10, 10, 0.1), entry("B", 20, 20, 0.1)}),
      // B predicted clearly fastest, A measured 3% faster but their p20-p80 spreads overlap.
      problem("spreads overlap",
              {spread(entry("A", 10, 12, 0.05), 9.5, 10.5), spread(entry("B", 10.3, 8, 0.05), 9.8, 10.8)}),
      // Only means kept: 2% apart, within the GPU's 3% repeat spread.
      problem("within repeats", {repeats(entry("A", 100, 120, 0.05), 0.03), repeats(entry("B", 102, 80, 0.05), 0.03)}),
      // The same times with a 1% repeat spread, and the ranking orders B first: a miss.
      problem("beyond repeats", {repeats(entry("A", 100, 120, 0.05), 0.01), repeats(entry("B", 102, 80, 0.05), 0.01)}),
      // Predictions within each other's 10% bands (10.5 × 1.1 ≥ 11 / 1.1), measured 15% apart, within them too.
      problem("stated tie", {entry("A", 10, 11, 0.1), entry("B", 11.5, 10.5, 0.1)}),
      // Stated tied, but B measures twice A: the measurement is outside the bands, a miss.
      problem("tie contradicted", {entry("A", 10, 11, 0.1), entry("B", 20, 10.5, 0.1)}),
      // B predicted 4× faster, measured 3× slower.
      problem("clear miss", {entry("A", 10, 40, 0.1), entry("B", 30, 10, 0.1)}),
      // One implementation alone ranks nothing, measured once or twice.
      problem("alone", {entry("A", 10, 10, 0.1)}),
      problem("alone, measured twice", {twice(entry("A", 10, 10, 0.1))}),
  };
}

TEST(RankingAgreement, CountsTiesApartFromMissesAndKeepsTheStrictFigure) {
  const RankingAgreement r = rankingAgreement(table());
  EXPECT_EQ(r.shapes, 7);
  EXPECT_EQ(r.agree, 1);
  EXPECT_EQ(r.measured_ties, 2);
  EXPECT_EQ(r.stated_ties, 1);
  EXPECT_EQ(r.misses, 3);
  EXPECT_DOUBLE_EQ(r.top1, 1.0 / 7);
  EXPECT_DOUBLE_EQ(r.top1_tie_aware, 4.0 / 7);
  // Decided: every problem but the two whose predictions lie within each other's bands.
  EXPECT_EQ(r.decided, 5);
  EXPECT_DOUBLE_EQ(r.top1_decided, 1.0 / 5);
  EXPECT_NEAR(r.worst_regret, 2.0, 1e-12);  // the clear miss: B takes 30 µs against 10
  EXPECT_NEAR(r.mean_regret, (0 + 0.03 + 0.02 + 0.02 + 0.15 + 1.0 + 2.0) / 7, 1e-12);
  EXPECT_NEAR(r.mean_kendall_tau, (1.0 - 6.0) / 7, 1e-12);  // two entries: +1 in order, -1 reversed
  EXPECT_EQ(r.merged_repeats, 1);
  EXPECT_EQ(r.repeats_only, 1);
}

TEST(RankingAgreement, ListsEveryDisagreementWithItsVerdict) {
  const RankingAgreement r = rankingAgreement(table());
  ASSERT_EQ(r.disagreements.size(), 6U);
  const std::vector<std::pair<std::string, RankingVerdict>> expected{
      {"spreads overlap", RankingVerdict::MeasuredTie}, {"within repeats", RankingVerdict::MeasuredTie},
      {"beyond repeats", RankingVerdict::Miss},         {"stated tie", RankingVerdict::StatedTie},
      {"tie contradicted", RankingVerdict::Miss},       {"clear miss", RankingVerdict::Miss}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.disagreements[i].problem, expected[i].first);
    EXPECT_EQ(r.disagreements[i].verdict, expected[i].second) << expected[i].first;
    EXPECT_EQ(r.disagreements[i].measured_fastest.impl, "A") << expected[i].first;
    EXPECT_EQ(r.disagreements[i].predicted_fastest.impl, "B") << expected[i].first;
  }
  EXPECT_EQ(rankingVerdictName(RankingVerdict::StatedTie), "stated tie");
}

TEST(RankingAgreement, SpreadsDecideOverTheRepeatSpreadWhereBothRowsHaveThem) {
  // 5% apart with a 10% repeat spread, but the p20-p80 spreads do not overlap: not a tie.
  const RankedEntry a = repeats(spread(entry("A", 10, 12, 0.05), 9.9, 10.1), 0.1);
  const RankedEntry b = repeats(spread(entry("B", 10.5, 8, 0.05), 10.4, 10.6), 0.1);
  EXPECT_EQ(rankingVerdict(a, b), RankingVerdict::Miss);
  // Without B's spread the repeat spread applies.
  EXPECT_EQ(rankingVerdict(a, repeats(entry("B", 10.5, 8, 0.05), 0.1)), RankingVerdict::MeasuredTie);
  EXPECT_EQ(rankingVerdict(a, a), RankingVerdict::Agree);
}

TEST(RankingAgreement, TheReportStatesBothFiguresAndTheMisses) {
  Validation v;
  v.ranking = rankingAgreement(table());
  v.ranking.repeat_spreads = {{"h100-sxm", 0.026, 1343}};
  const std::string md = validationMarkdown(v, StepValidation{});
  EXPECT_NE(md.find("ties counted as agreement (\"Ranking agreement\"): 57.1%, missed (strict 14.3%)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("h100-sxm 2.6% (1343 calls)"), std::string::npos) << md;
  EXPECT_NE(md.find("| stated tie | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| h100-sxm | clear miss | A | 10.0 | 40.0 | ±10% | B | 30.0 | 10.0 | ±10% |"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("| h100-sxm | stated tie | A |"), std::string::npos) << "ties are not listed as misses\n" << md;
  const std::string csv = validationRankingCsv(v);
  EXPECT_NE(csv.find("h100-sxm,stated tie,stated tie,A,10.000,11.000,0.1000,B,11.500,10.500,0.1000,+0.1500"),
            std::string::npos)
      << csv;
}

// The committed sample with every attention row measured twice, the second 1% slower, both keeping
// only a mean: the ranking is over the same problems, each implementation one entry, and the repeats
// give the GPU's repeat spread (1%).
TEST(RankingAgreement, RepeatedRowsOfOneCallAreOneEntry) {
  const std::string sample = std::string(ATTNSIM_TEST_DATA) + "/measurements_sample.csv";
  std::vector<MeasurementRow> rows = readMeasurementCsv(sample, defaultCatalog());
  for (auto& r : rows) r.p20_us = r.p80_us = 0;
  const Validation once = runValidation(defaultCatalog(), rows, {{2048, 8192}});
  std::vector<MeasurementRow> twice = rows;
  int attention = 0;
  for (const auto& r : rows) {
    if (r.kind != "attention") continue;
    twice.push_back(r);
    twice.back().median_us *= 1.01;
    ++attention;
  }
  ASSERT_GT(once.ranking.shapes, 0);
  EXPECT_EQ(once.ranking.merged_repeats, 0);
  EXPECT_TRUE(once.ranking.repeat_spreads.empty()) << "no call measured twice";
  const Validation repeated = runValidation(defaultCatalog(), twice, {{2048, 8192}});
  EXPECT_EQ(repeated.ranking.shapes, once.ranking.shapes);
  EXPECT_GT(repeated.ranking.merged_repeats, 0);
  EXPECT_LT(repeated.ranking.merged_repeats, attention);  // held-out rows of ranked problems only
  ASSERT_EQ(repeated.ranking.repeat_spreads.size(), 1U);
  EXPECT_EQ(repeated.ranking.repeat_spreads[0].hardware, "h100-sxm");
  EXPECT_EQ(repeated.ranking.repeat_spreads[0].calls, attention);
  EXPECT_NEAR(repeated.ranking.repeat_spreads[0].p90, 0.01, 1e-9);
}

}  // namespace
}  // namespace attnsim::test
