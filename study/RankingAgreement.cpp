#include "study/RankingAgreement.hpp"

#include <algorithm>

#include "hardware/KernelEfficiency.hpp"

namespace attnsim {

namespace {

bool hasSpread(const RankedEntry& e) { return e.p20_us > 0 && e.p80_us > 0; }

// The two measurements cannot be told apart by the repeats' own spread. With p20-p80 on both rows
// the priorities report's rule (reports/StudyReportsPriorityCheck.cpp): overlapping spreads order
// nothing. Rows that keep only a mean (AIConfigurator's) are within the GPU's repeat spread.
bool measuredTie(const RankedEntry& fast, const RankedEntry& slow) {
  if (hasSpread(fast) && hasSpread(slow)) return fast.p20_us <= slow.p80_us && slow.p20_us <= fast.p80_us;
  const double spread = std::max(fast.repeat_spread, slow.repeat_spread);
  return slow.measured_us <= fast.measured_us * (1 + spread);
}

const RankedEntry& fastestBy(const std::vector<RankedEntry>& entries, double RankedEntry::*time) {
  return *std::min_element(entries.begin(), entries.end(),
                           [time](const RankedEntry& a, const RankedEntry& b) { return a.*time < b.*time; });
}

// No other implementation of the problem within the predicted fastest's bands: the ranking orders it first.
bool decided(const std::vector<RankedEntry>& entries, const RankedEntry& predicted) {
  return std::none_of(entries.begin(), entries.end(), [&](const RankedEntry& e) {
    return &e != &predicted && withinBands(predicted.predicted_us, predicted.band, e.predicted_us, e.band);
  });
}

}  // namespace

std::string_view rankingVerdictName(RankingVerdict verdict) {
  switch (verdict) {
    case RankingVerdict::Agree:
      return "agree";
    case RankingVerdict::MeasuredTie:
      return "measured tie";
    case RankingVerdict::StatedTie:
      return "stated tie";
    case RankingVerdict::Miss:
      break;
  }
  return "miss";
}

RankingVerdict rankingVerdict(const RankedEntry& measured, const RankedEntry& predicted) {
  if (&measured == &predicted) return RankingVerdict::Agree;
  if (measuredTie(measured, predicted)) return RankingVerdict::MeasuredTie;
  // The ranking states a tie (the predictions within each other's bands), and the measurement bears it out.
  if (withinBands(predicted.predicted_us, predicted.band, measured.predicted_us, measured.band) &&
      withinBands(measured.measured_us, measured.band, predicted.measured_us, predicted.band)) {
    return RankingVerdict::StatedTie;
  }
  return RankingVerdict::Miss;
}

double kendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  double concordant = 0, discordant = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double s = (a[i] - a[j]) * (b[i] - b[j]);
      concordant += s > 0 ? 1 : 0;
      discordant += s < 0 ? 1 : 0;
    }
  }
  const double n = concordant + discordant;
  return n > 0 ? (concordant - discordant) / n : 1.0;
}

RankingAgreement rankingAgreement(const std::vector<RankingProblem>& problems) {
  RankingAgreement out;
  double tau_sum = 0, regret_sum = 0;
  int decided_agree = 0;
  for (const auto& p : problems) {
    for (const auto& e : p.entries) out.merged_repeats += e.repeats - 1;
    if (p.entries.size() < 2) {
      out.repeats_only += p.entries.size() == 1 && p.entries[0].repeats > 1 ? 1 : 0;
      continue;
    }
    std::vector<double> measured, predicted;
    for (const auto& e : p.entries) {
      measured.push_back(e.measured_us);
      predicted.push_back(e.predicted_us);
    }
    const RankedEntry& m = fastestBy(p.entries, &RankedEntry::measured_us);
    const RankedEntry& f = fastestBy(p.entries, &RankedEntry::predicted_us);
    const RankingVerdict verdict = rankingVerdict(m, f);
    const bool is_decided = decided(p.entries, f);
    out.decided += is_decided ? 1 : 0;
    decided_agree += is_decided && verdict == RankingVerdict::Agree ? 1 : 0;
    out.agree += verdict == RankingVerdict::Agree ? 1 : 0;
    out.measured_ties += verdict == RankingVerdict::MeasuredTie ? 1 : 0;
    out.stated_ties += verdict == RankingVerdict::StatedTie ? 1 : 0;
    out.misses += verdict == RankingVerdict::Miss ? 1 : 0;
    if (verdict != RankingVerdict::Agree) out.disagreements.push_back({p.hardware, p.problem, verdict, m, f});
    const double regret = f.measured_us / m.measured_us - 1;
    regret_sum += regret;
    out.worst_regret = std::max(out.worst_regret, regret);
    tau_sum += kendallTau(measured, predicted);
    ++out.shapes;
  }
  if (out.shapes == 0) return out;
  const double n = out.shapes;
  out.top1 = out.agree / n;
  out.top1_tie_aware = (out.agree + out.measured_ties + out.stated_ties) / n;
  out.top1_decided = out.decided > 0 ? static_cast<double>(decided_agree) / out.decided : 0;
  out.mean_regret = regret_sum / n;
  out.mean_kendall_tau = tau_sum / n;
  return out;
}

}  // namespace attnsim
