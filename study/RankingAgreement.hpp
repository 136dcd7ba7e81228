#pragma once
// How well the predictions order implementations, per held-out problem measured with two or more
// of them: strict top-1 (the fastest measured is the fastest predicted), and where the two differ,
// whether they are a tie the ranking may not be blamed for or a miss (docs/MEASUREMENTS.md,
// "Ranking agreement"):
// - measured tie: the predicted fastest's measured time lies within the measurement's own spread of
//   the measured fastest's (overlapping p20-p80; rows that keep only a mean: within the relative
//   spread of repeated measurements of one call on that GPU);
// - stated tie: the ranking does not order the two (their predictions within each other's bands,
//   withinBands, the rule `rank` groups ties by) and their measured times lie within the same bands;
// - miss: anything else.
#include <string>
#include <string_view>
#include <vector>

namespace attnsim {

// One implementation at one problem: its repeated measurements averaged into one entry.
struct RankedEntry {
  std::string impl;
  double measured_us = 0, predicted_us = 0;
  double band = 0;                // the prediction's relative band (bandOf its family's fit)
  double p20_us = 0, p80_us = 0;  // spread of the timed runs (both 0: the row keeps only a mean)
  double repeat_spread = 0;       // rows without p20-p80: relative spread of repeated calls (0: none known)
  int repeats = 1;                // measurement rows averaged into this entry
};

struct RankingProblem {
  std::string hardware, problem;
  std::vector<RankedEntry> entries;
};

enum class RankingVerdict { Agree, MeasuredTie, StatedTie, Miss };
std::string_view rankingVerdictName(RankingVerdict verdict);

// A problem whose fastest measured implementation is not the fastest predicted.
struct RankingDisagreement {
  std::string hardware, problem;
  RankingVerdict verdict = RankingVerdict::Miss;
  RankedEntry measured_fastest, predicted_fastest;
};

// The relative spread of repeated measurements of one call on one GPU (rows that keep only a mean).
struct RepeatSpread {
  std::string hardware;
  double p90 = 0;  // nearest-rank 90th percentile of max / min - 1 over the repeated calls
  int calls = 0;   // calls measured more than once
};

// Over the held-out problems measured with two or more implementations.
struct RankingAgreement {
  int shapes = 0;
  double top1 = 0;              // strict: share of problems whose fastest measured is the fastest predicted
  double mean_kendall_tau = 0;  // predicted against measured order
  int agree = 0, measured_ties = 0, stated_ties = 0, misses = 0;
  double top1_tie_aware = 0;  // (agree + measured ties + stated ties) / shapes
  int decided = 0;            // problems whose predicted fastest has no other implementation within its bands
  double top1_decided = 0;    // strict top-1 over the decided problems
  double mean_regret = 0, worst_regret = 0;  // the predicted fastest's measured time over the fastest's, - 1
  int merged_repeats = 0;                    // rows averaged into another row's entry, over every problem
  int repeats_only = 0;                      // problems of one implementation measured more than once: nothing to rank
  std::vector<RepeatSpread> repeat_spreads;
  std::vector<RankingDisagreement> disagreements;  // every problem whose strict top-1 fails, in problem order
};

// The verdict on a problem whose fastest measured (`measured`) and fastest predicted (`predicted`)
// entries are given: Agree when they are the same object, else a tie or a miss.
RankingVerdict rankingVerdict(const RankedEntry& measured, const RankedEntry& predicted);

// Problems with fewer than two entries are skipped.
RankingAgreement rankingAgreement(const std::vector<RankingProblem>& problems);

// Kendall's tau between two orderings of the same items (ties count as neither; no pair: 1).
double kendallTau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace attnsim
