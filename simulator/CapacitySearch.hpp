#pragma once
// The highest request rate a scenario serves within an SLO (p99 TTFT and p99 TPOT), found by
// doubling then bisecting over generated arrivals with a fixed seed, and the GPUs a target rate needs.
#include <cstdint>
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
};

struct RateSearch {
  double max_rate = 0;  // requests per second per replica (0: not even the lowest rate meets the SLO)
  ServeResult at_max;   // the simulation at that rate
  int simulations = 0;
  std::vector<RateProbe> probes;  // in the order simulated
  // Replicas of the scenario (each `tp` GPUs) needed for `target_rate`, in GPUs; 0 when none suffice.
  [[nodiscard]] std::int64_t gpusFor(double target_rate, int tp) const;
};

// Meets the SLO: p99 TTFT and p99 TPOT within it, and nothing rejected.
bool meetsSlo(const ServeResult& r, const ServeSlo& slo);

// `arrivals` gives the lengths, process, request count and seed; its rate is searched in
// [min_rate, max_rate] to a relative precision of about 1%.
RateSearch searchRate(ServeSession& session, ArrivalSpec arrivals, const ServeSlo& slo, double min_rate = 0.05,
                      double max_rate = 10000);

}  // namespace attnsim
