#include "simulator/CapacitySearch.hpp"

#include <cmath>

namespace attnsim {

bool meetsSlo(const ServeResult& r, const ServeSlo& slo) {
  return r.rejected == 0 && r.ttft.p99 <= slo.ttft_s && r.tpot.p99 <= slo.tpot_s;
}

std::int64_t RateSearch::gpusFor(double target_rate, int tp) const {
  if (max_rate <= 0) return 0;
  return static_cast<std::int64_t>(std::ceil(target_rate / max_rate - 1e-9)) * tp;
}

RateSearch searchRate(ServeSession& session, ArrivalSpec arrivals, const ServeSlo& slo, double min_rate,
                      double max_rate) {
  RateSearch out;
  auto attempt = [&](double rate) {
    arrivals.rate = rate;
    ++out.simulations;
    ServeResult r = session.run(generateRequests(arrivals), slo);
    const bool ok = meetsSlo(r, slo);
    if (ok && rate > out.max_rate) {
      out.max_rate = rate;
      out.at_max = r;
    }
    out.probes.push_back({rate, ok, std::move(r)});
    return ok;
  };
  if (!attempt(min_rate)) return out;
  double good = min_rate;
  double bad = 0;
  for (double rate = min_rate * 2; rate <= max_rate; rate *= 2) {
    if (!attempt(rate)) {
      bad = rate;
      break;
    }
    good = rate;
  }
  if (bad == 0) return out;  // meets the SLO up to max_rate
  while (bad / good > 1.01) {
    const double mid = std::sqrt(good * bad);
    (attempt(mid) ? good : bad) = mid;
  }
  return out;
}

}  // namespace attnsim
