#pragma once
// The highest request rate a scenario serves within an SLO (p99 TTFT and p99 TPOT), found by
// doubling then bisecting over generated arrivals with a fixed seed, and the GPUs a target rate needs.
#include <cstdint>
#include <string>
#include <vector>

#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {

// One simulation of the search: the offered rate, whether it met the SLO, and its result (every
// probe is kept, so the latency percentiles can be drawn against the rate: the knee).
struct RateProbe {
  double rate = 0;
  bool meets_slo = false;
  ServeResult result;
  int band_end = 0;  // 0: the predicted step times; +1 / -1: every step at its band's slow / fast end
};

struct RateSearch {
  double max_rate = 0;  // requests per second per replica (0: not even the lowest rate meets the SLO)
  ServeResult at_max;   // the simulation at that rate
  int simulations = 0;
  std::vector<RateProbe> probes;  // in the order simulated
  // Why not even the lowest rate meets the SLO, in words (max_rate 0); empty when a rate does.
  std::string slo_unmet;
  // The step model's band carried through: the highest rate within the SLO when every step takes the
  // slow end of its band, and the fast end (searched on the same arrivals; 0 when max_rate is 0).
  double rate_slow_end = 0, rate_fast_end = 0;
  // Replicas of the scenario (each `tp` GPUs) needed for `target_rate`, in GPUs; 0 when none suffice
  // (slo_unmet says why).
  [[nodiscard]] std::int64_t gpusFor(double target_rate, int tp) const;
};

// Meets the SLO: p99 TTFT and p99 TPOT within it, and nothing rejected.
bool meetsSlo(const ServeResult& r, const ServeSlo& slo);
// What a simulation at `rate` broke of the SLO, in words: requests that never fit the KV pool of
// `kv_tokens` (at any rate), or the p99 TTFT or TPOT over their limits.
std::string whySloUnmet(const ServeResult& r, const ServeSlo& slo, std::int64_t kv_tokens, double rate);

// `arrivals` gives the lengths, process, request count and seed; its rate is searched in
// [min_rate, max_rate] to a relative precision of about 1%, then at the band's two ends (from the
// found rate: at most it at the slow end, at least it at the fast end).
RateSearch searchRate(ServeSession& session, const ArrivalSpec& arrivals, const ServeSlo& slo, double min_rate = 0.05,
                      double max_rate = 10000);

}  // namespace attnsim
