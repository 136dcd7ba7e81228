#include "simulator/CapacitySearch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/Strings.hpp"

namespace attnsim {

bool meetsSlo(const ServeResult& r, const ServeSlo& slo) {
  return r.rejected == 0 && r.ttft.p99 <= slo.ttft_s && r.tpot.p99 <= slo.tpot_s;
}

std::string whySloUnmet(const ServeResult& r, const ServeSlo& slo, std::int64_t kv_tokens, double rate) {
  std::int64_t longest = 0;
  double total = 0;
  for (const auto& o : r.requests) {
    longest = std::max(longest, o.prompt_tokens + o.output_tokens);
    total += static_cast<double>(o.prompt_tokens + o.output_tokens);
  }
  if (r.rejected > 0) {
    return fmt::format(
        "{} of {} requests never fit the KV pool of {} tokens (prompt + output up to {} tokens), so the SLO cannot "
        "be met at any rate",
        r.rejected, r.requests.size(), kv_tokens, longest);
  }
  std::vector<std::string> over;
  if (r.ttft.p99 > slo.ttft_s) {
    over.push_back(fmt::format("p99 TTFT {:.0f} ms > {:g} ms", r.ttft.p99 * 1e3, slo.ttft_s * 1e3));
  }
  if (r.tpot.p99 > slo.tpot_s) {
    over.push_back(fmt::format("p99 TPOT {:.1f} ms > {:g} ms", r.tpot.p99 * 1e3, slo.tpot_s * 1e3));
  }
  const double mean = r.requests.empty() ? 0 : total / static_cast<double>(r.requests.size());
  return fmt::format(
      "the SLO is not met at any rate searched: even at {:g} req/s, {}; the KV pool of {} tokens holds {:.0f} "
      "request(s) of {:.0f} tokens (prompt + output, mean) at once",
      rate, join(over, " and "), kv_tokens, mean > 0 ? std::floor(static_cast<double>(kv_tokens) / mean) : 0.0, mean);
}

std::int64_t RateSearch::gpusFor(double target_rate, int tp) const {
  if (max_rate <= 0) return 0;
  return static_cast<std::int64_t>(std::ceil(target_rate / max_rate - 1e-9)) * tp;
}

namespace {

RateSearch searchRange(ServeSession& session, ArrivalSpec arrivals, const ServeSlo& slo, double min_rate,
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
  if (!attempt(min_rate)) {
    out.slo_unmet = whySloUnmet(out.probes.front().result, slo, session.setup().scheduler.kv_tokens, min_rate);
    return out;
  }
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

// Appends a band end's search to the nominal one: its probes (tagged) and simulations.
double keepBandSearch(RateSearch& out, RateSearch&& band, int end) {
  out.simulations += band.simulations;
  for (auto& p : band.probes) {
    p.band_end = end;
    out.probes.push_back(std::move(p));
  }
  return band.max_rate;
}

}  // namespace

RateSearch searchRate(ServeSession& session, const ArrivalSpec& arrivals, const ServeSlo& slo, double min_rate,
                      double max_rate) {
  RateSearch out = searchRange(session, arrivals, slo, min_rate, max_rate);
  if (out.max_rate <= 0) return out;
  const double rate = out.max_rate, from = std::max(min_rate, rate / 4);
  session.setBandEnd(+1);  // slower steps: at most the found rate; below a quarter of it, from the lowest
  double slow = keepBandSearch(out, searchRange(session, arrivals, slo, from, rate), +1);
  if (slow <= 0 && from > min_rate) slow = keepBandSearch(out, searchRange(session, arrivals, slo, min_rate, from), +1);
  session.setBandEnd(-1);  // faster steps: at least the found rate
  const double fast = keepBandSearch(out, searchRange(session, arrivals, slo, rate, max_rate), -1);
  session.setBandEnd(0);
  out.rate_slow_end = std::min(slow, rate);
  out.rate_fast_end = std::max(fast, rate);
  return out;
}

}  // namespace attnsim
